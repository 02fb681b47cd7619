#include "arenarpc/memory/spare_elements.h"

#include <google/protobuf/message.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "memory_test.pb.h"

namespace arenarpc::memory {
namespace {

using google::protobuf::Message;

TEST(SpareElements, PeekMessageShowsWhatTakeMessageReturnsThatManyTakesLater) {
  SpareElements spares;
  const size_t type = SpareTypeId(*memtest::Leaf::descriptor());
  const size_t other = SpareTypeId(*memtest::Root::descriptor());
  EXPECT_EQ(spares.PeekMessage(type, 0), nullptr);  // no queue for the type yet
  std::vector<Message*> put;
  for (int i = 0; i < 5; ++i) {
    put.push_back(new memtest::Leaf());
    spares.PutMessage(type, put.back());
  }
  EXPECT_EQ(spares.PeekMessage(other, 0), nullptr);
  EXPECT_EQ(spares.PeekMessage(type, 2), put[2]);
  EXPECT_EQ(spares.PeekMessage(type, 5), nullptr);  // past the end
  Message* first = spares.TakeMessage(type);
  EXPECT_EQ(first, put[0]);
  delete first;
  EXPECT_EQ(spares.PeekMessage(type, 0), put[1]);
  EXPECT_EQ(spares.PeekMessage(type, 3), put[4]);
  EXPECT_EQ(spares.PeekMessage(type, 4), nullptr);
  for (int i = 1; i < 5; ++i) {
    Message* taken = spares.TakeMessage(type);  // prefetches ahead: must stay in bounds
    EXPECT_EQ(taken, put[i]);
    delete taken;
  }
  EXPECT_EQ(spares.PeekMessage(type, 0), nullptr);
  EXPECT_EQ(spares.TakeMessage(type), nullptr);
}

TEST(SpareQueue, PeekFollowsTheFrontAcrossDropAndGather) {
  SpareQueue<std::string> queue;
  std::vector<std::string*> put;
  for (int i = 0; i < 4; ++i) {
    put.push_back(new std::string(std::to_string(i)));
    queue.Put(put.back());
  }
  queue.Drop(0);
  EXPECT_EQ(queue.Peek(1), put[1]);
  EXPECT_EQ(queue.Front(2).size(), 2u);
  queue.Drop(2);  // the caller took two: they are its to free
  delete put[0];
  delete put[1];
  EXPECT_EQ(queue.Peek(0), put[2]);
  EXPECT_EQ(queue.Peek(2), nullptr);
  // A gather puts elements ahead of the unused ones.
  queue.BeginGather();
  const size_t first = queue.Extend(1);
  auto* gathered = new std::string("gathered");
  queue.slot(first) = gathered;
  queue.EndGather();
  EXPECT_EQ(queue.Peek(0), gathered);
  EXPECT_EQ(queue.Peek(1), put[2]);
  EXPECT_EQ(queue.Peek(2), put[3]);
  EXPECT_EQ(queue.Peek(3), nullptr);
}

}  // namespace
}  // namespace arenarpc::memory
