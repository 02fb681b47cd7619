// Fuzzes the reuse strategy's request shaping (ShapePlan), which reads untrusted request bytes
// before the parser does. Long-lived reused objects of two schemas are shaped to each input, then
// merged and cleared as the server does; properties: no crash or sanitizer report, the merge
// accepts exactly the inputs a fresh parse accepts, and the content equals a fresh parse.
#include <google/protobuf/arena.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/message_differencer.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memory/reuse/kept_tree.h"
#include "memory/reuse/shape_plan.h"
#include "echo/echo_payload.pb.h"
#include "fuzz_check.h"
#include "memory_test.pb.h"

namespace {

using arenarpc::memory::KeptTreePlan;
using arenarpc::memory::ShapePlan;
using arenarpc::memory::SpareElements;
using google::protobuf::Message;

// One pooled object as the reuse strategy keeps it, alive across inputs (state carries over); with
// `on_arena`, on an arena of its own as reuse keeps requests (ReuseSettings::request_arenas).
struct Reused {
  explicit Reused(const Message& prototype, bool on_arena = false)
      : type(&prototype),
        arena(on_arena ? std::make_unique<google::protobuf::Arena>() : nullptr),
        message(prototype.New(arena.get())),
        shape(*prototype.GetDescriptor()),
        keep(*prototype.GetDescriptor()),
        stash(keep.slot_count()) {
    if (arena) spares.SetOnArena();
  }
  ~Reused() { LetGo(); }

  // An arena's objects are the arena's to free.
  void LetGo() {
    if (!arena) return;
    (void)message.release();
    for (auto& kept : stash) (void)kept.release();
    spares.Clear();  // drops the pointers only
  }

  void Run(const uint8_t* data, size_t size) {
    const int block = size > 0 ? 1 + data[0] % 97 : 1;  // vary the stream's chunking
    google::protobuf::io::ArrayInputStream in(data, static_cast<int>(size), block);
    shape.Shape(*message, in, spares, scratch);
    const bool merged =
        message->MergeFromString(std::string(reinterpret_cast<const char*>(data), size));
    std::unique_ptr<Message> fresh(message->New());
    const bool parsed = fresh->ParseFromArray(data, static_cast<int>(size));
    FUZZ_CHECK(merged == parsed);
    if (merged) {
      keep.Settle(*message, stash);
      FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equivalent(*message, *fresh));
    }
    keep.Clear(*message, stash);
    if (arena && arena->SpaceAllocated() > (64u << 20)) {  // bound memory: start a new object
      LetGo();
      arena = std::make_unique<google::protobuf::Arena>();
      message.reset(type->New(arena.get()));
    } else if (!arena && spares.message_count() + spares.string_count() > 200000) {
      spares.Clear();  // bound memory
    }
  }

  const Message* type;
  std::unique_ptr<google::protobuf::Arena> arena;  // before: destroyed after what lives on it
  std::unique_ptr<Message> message;
  ShapePlan shape;
  KeptTreePlan keep;
  std::vector<std::unique_ptr<Message>> stash;
  SpareElements spares;
  std::vector<uint32_t> scratch;
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 in `string` fields is logged: expected
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Reused echo(arenarpc::example::EchoRequest::default_instance());
  static Reused generic(arenarpc::memtest::Root::default_instance());
  static Reused echo_on_arena(arenarpc::example::EchoRequest::default_instance(), true);
  static Reused mid_on_arena(arenarpc::memtest::Mid::default_instance(), true);
  echo.Run(data, size);
  generic.Run(data, size);
  echo_on_arena.Run(data, size);
  mid_on_arena.Run(data, size);
  return 0;
}
