#include "memory/reuse/spare_elements.h"

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

// A queue of `total` strings "0".."total-1" of which the first `taken` were taken (and freed).
struct TakenQueue {
  TakenQueue(int total, int taken) {
    for (int i = 0; i < total; ++i) queue.Put(new std::string(std::to_string(i)));
    for (int i = 0; i < taken; ++i) delete queue.Take();
  }
  // Gathers `chunks` (each a run of new strings named by `prefix` and a number, in order).
  void Gather(const std::vector<int>& chunks, const std::string& prefix) {
    queue.BeginGather();
    int n = 0;
    for (int chunk : chunks) {
      const size_t first = queue.Extend(static_cast<size_t>(chunk));
      for (std::string*& slot : queue.slots(first, static_cast<size_t>(chunk))) {
        slot = new std::string(prefix + std::to_string(n++));
      }
    }
    queue.EndGather();
  }
  std::vector<std::string> Contents() const {
    std::vector<std::string> out;
    queue.ForEach([&](const std::string& s) { out.push_back(s); });
    return out;
  }
  SpareQueue<std::string> queue;
};

TEST(SpareQueue, GatherRefillsTheTakenPrefixInOrder) {
  TakenQueue q(6, 3);     // unused: 3 4 5
  q.Gather({2, 1}, "g");  // exactly what was taken: no spill
  EXPECT_EQ(q.Contents(), (std::vector<std::string>{"g0", "g1", "g2", "3", "4", "5"}));
  EXPECT_EQ(q.queue.Peek(0), q.queue.Front(1)[0]);
}

TEST(SpareQueue, GatherOfFewerThanTakenClosesTheGap) {
  TakenQueue q(6, 4);  // unused: 4 5
  q.Gather({1, 1}, "g");
  EXPECT_EQ(q.Contents(), (std::vector<std::string>{"g0", "g1", "4", "5"}));
  EXPECT_EQ(q.queue.size(), 4u);
}

TEST(SpareQueue, GatherOfMoreThanTakenSpillsBehindTheUnusedAndKeepsOrder) {
  TakenQueue q(5, 2);        // unused: 2 3 4
  q.Gather({1, 2, 3}, "g");  // the second chunk does not fit the prefix: it and all later spill
  EXPECT_EQ(q.Contents(),
            (std::vector<std::string>{"g0", "g1", "g2", "g3", "g4", "g5", "2", "3", "4"}));
  // The queue works on as before: take some, gather again.
  for (int i = 0; i < 7; ++i) delete q.queue.Take();
  EXPECT_EQ(q.Contents(), (std::vector<std::string>{"3", "4"}));
  q.Gather({4}, "h");
  EXPECT_EQ(q.Contents(), (std::vector<std::string>{"h0", "h1", "h2", "h3", "3", "4"}));
}

TEST(SpareQueue, GatherIntoAnEmptiedOrUntouchedQueue) {
  TakenQueue emptied(3, 3);  // every spare taken: nothing unused, no prefix kept
  emptied.Gather({2, 2}, "g");
  EXPECT_EQ(emptied.Contents(), (std::vector<std::string>{"g0", "g1", "g2", "g3"}));
  TakenQueue untouched(2, 0);  // nothing taken: all gathered elements spill
  untouched.Gather({1, 2}, "g");
  EXPECT_EQ(untouched.Contents(), (std::vector<std::string>{"g0", "g1", "g2", "0", "1"}));
  TakenQueue nothing(4, 2);
  nothing.Gather({}, "g");
  EXPECT_EQ(nothing.Contents(), (std::vector<std::string>{"2", "3"}));
}

}  // namespace
}  // namespace arenarpc::memory
