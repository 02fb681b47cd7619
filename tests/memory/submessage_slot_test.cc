// SubmessageSlot reads a singular sub-message field's pointer and has-bit at the place it learned
// from a probe object: it must agree with reflection's HasField/MutableMessage in every state, for
// pointer presence (proto3), has-bits (proto3 optional, proto2, a second has-bit word) and dynamic
// messages, and a field it cannot place (a oneof member) stays on reflection.
#include <google/protobuf/dynamic_message.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "memory/reuse/element_moves.h"
#include "memory_test.pb.h"
#include "memory_test_proto2.pb.h"

namespace arenarpc::memory {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

const Message* ByReflection(const Message& m, const FieldDescriptor* f) {
  const Reflection& r = *m.GetReflection();
  return r.HasField(m, f) ? &r.GetMessage(m, f) : nullptr;
}

// Walks one field of `prototype`'s class through set / cleared / set again / released / set on
// another object, checking the slot against reflection at each step.
enum class Expect { kDirect, kReflection };

void CheckAgreesWithReflection(const Message& prototype, const std::string& name,
                               Expect expect = Expect::kDirect) {
  SCOPED_TRACE(prototype.GetDescriptor()->full_name() + "." + name);
  const FieldDescriptor* f = prototype.GetDescriptor()->FindFieldByName(name);
  ASSERT_NE(f, nullptr);
  const moves::SubmessageSlot slot(f);
  std::unique_ptr<Message> a(prototype.New());
  std::unique_ptr<Message> b(prototype.New());
  const Reflection& r = *a->GetReflection();
  EXPECT_EQ(slot.Get(*a), nullptr);  // learns here
  EXPECT_EQ(slot.direct(), expect == Expect::kDirect);
  Message* sub = r.MutableMessage(a.get(), f);
  EXPECT_EQ(slot.Get(*a), sub);
  EXPECT_EQ(slot.Get(*b), nullptr);
  r.ClearField(a.get(), f);
  EXPECT_EQ(slot.Get(*a), ByReflection(*a, f));
  EXPECT_EQ(slot.Get(*a), nullptr);
  sub = r.MutableMessage(a.get(), f);
  EXPECT_EQ(slot.Get(*a), sub);
  std::unique_ptr<Message> released(r.ReleaseMessage(a.get(), f));
  EXPECT_EQ(slot.Get(*a), nullptr);
  r.SetAllocatedMessage(b.get(), released.release(), f);
  EXPECT_EQ(slot.Get(*b), ByReflection(*b, f));
  EXPECT_NE(slot.Get(*b), nullptr);
  a->Clear();
  b->Clear();
  EXPECT_EQ(slot.Get(*a), ByReflection(*a, f));
  EXPECT_EQ(slot.Get(*b), ByReflection(*b, f));
  // A copy of a slot that learned reads the same.
  const moves::SubmessageSlot copy(slot);
  r.MutableMessage(b.get(), f);
  EXPECT_EQ(copy.Get(*b), ByReflection(*b, f));
}

TEST(SubmessageSlotTest, Proto3PointerPresence) {
  CheckAgreesWithReflection(memtest::Root::default_instance(), "mid");
  CheckAgreesWithReflection(memtest::Root::default_instance(), "leaf");
  CheckAgreesWithReflection(memtest::Mid::default_instance(), "leaf");
}

TEST(SubmessageSlotTest, HasBits) {
  CheckAgreesWithReflection(memtest::Root::default_instance(), "opt_mid");
  CheckAgreesWithReflection(memtest::Proto2Holder::default_instance(), "first");
  CheckAgreesWithReflection(memtest::Proto2Holder::default_instance(), "late");
  CheckAgreesWithReflection(memtest::Proto2Holder::default_instance(), "needed");
}

TEST(SubmessageSlotTest, HasBitKeepsTheObjectAfterClear) {
  // The object stays attached with its has-bit cleared: the slot must read the bit, not the
  // pointer.
  memtest::Root m;
  const moves::SubmessageSlot slot(m.GetDescriptor()->FindFieldByName("opt_mid"));
  m.mutable_opt_mid()->mutable_leaf()->add_value("x");
  const Message* kept = &m.opt_mid();
  EXPECT_EQ(slot.Get(m), kept);
  m.clear_opt_mid();
  EXPECT_FALSE(m.has_opt_mid());
  EXPECT_EQ(slot.Get(m), nullptr);
  m.mutable_opt_mid();
  EXPECT_EQ(slot.Get(m), kept);  // the same object, set again
}

TEST(SubmessageSlotTest, DynamicMessagesStayOnReflection) {
  // A DynamicMessage's SpaceUsedLong is more than its object (a probe reading that far would read
  // past it): only generated classes are probed, the rest read through reflection and agree.
  google::protobuf::DynamicMessageFactory factory;
  const Message* root = factory.GetPrototype(memtest::Root::descriptor());
  CheckAgreesWithReflection(*root, "mid", Expect::kReflection);
  CheckAgreesWithReflection(*root, "opt_mid", Expect::kReflection);
  const Message* holder = factory.GetPrototype(memtest::Proto2Holder::descriptor());
  CheckAgreesWithReflection(*holder, "late", Expect::kReflection);
}

TEST(SubmessageSlotTest, OneofMemberStaysOnReflection) {
  // A oneof member's case word would pass for a has-bit (one_leaf is field 4: case value 4, one
  // bit) until another member is set: oneof members are never placed, reads stay on reflection.
  CheckAgreesWithReflection(memtest::Root::default_instance(), "one_leaf", Expect::kReflection);
  memtest::Root m;
  const moves::SubmessageSlot slot(m.GetDescriptor()->FindFieldByName("one_leaf"));
  m.mutable_one_leaf();
  EXPECT_EQ(slot.Get(m), &m.one_leaf());
  m.set_one_text("text");  // case 5: bit 4 still set
  EXPECT_EQ(slot.Get(m), nullptr);
  EXPECT_FALSE(slot.direct());
}

}  // namespace
}  // namespace arenarpc::memory
