#include "wire_handler.h"

#include <random>
#include <string>

namespace arenarpc::wire {

void Answer(const WireRequest& request, WireReply* reply) {
  const uint32_t actions = request.actions();
  // A handler may look at the reply before writing it: a fresh reply has nothing set.
  if ((actions & kBranchOnPresence) && reply->has_node()) {
    reply->mutable_extra()->mutable_leaf()->set_n(11);
  }
  if ((actions & kCopyNode) && request.has_node()) *reply->mutable_node() = request.node();
  if (actions & kSetThenClear) {
    reply->mutable_extra()->mutable_leaf()->set_n(7);
    reply->clear_extra();
  }
  if (actions & kCopyNodes) *reply->mutable_nodes() = request.nodes();
  if (actions & kTouchOptional) reply->mutable_opt_extra();
  if (actions & kSwitchOneof) {
    reply->mutable_node()->set_one_text("text");
    reply->mutable_node()->mutable_one_leaf()->set_n(3);
  }
  if ((actions & kClearLeaf) && reply->has_node()) reply->mutable_node()->clear_leaf();
  if (actions & kExtraChild) reply->mutable_extra()->mutable_child()->mutable_leaf()->set_n(5);
  if (actions & kTouchExtra) reply->mutable_extra();
  if (actions & kAssignEmpty) *reply->mutable_node() = Node();
}

namespace {

void FillLeaf(std::mt19937& rng, int size, Leaf* leaf) {
  leaf->set_n(static_cast<int32_t>(rng() % 100));
  if (rng() % 2) leaf->set_s(std::string(rng() % 20, 's'));
  for (int i = 0; i < size; ++i) leaf->add_values(std::string(rng() % 30, 'v'));
}

void FillNode(std::mt19937& rng, int size, int depth, Node* node) {
  if (rng() % 3 != 0) FillLeaf(rng, size, node->mutable_leaf());
  if (rng() % 3 == 0) FillLeaf(rng, size, node->mutable_opt_leaf());
  for (int i = 0; i < size; ++i) FillLeaf(rng, size / 2, node->add_leaves());
  switch (rng() % 3) {
    case 0: FillLeaf(rng, size, node->mutable_one_leaf()); break;
    case 1: node->set_one_text("one"); break;
    default: break;
  }
  if (rng() % 2) node->set_maybe(static_cast<int64_t>(rng() % 3));  // 0 too: presence matters
  if (rng() % 3 == 0) (*node->mutable_counts())["k" + std::to_string(rng() % 5)] = 1;
  if (depth > 0 && rng() % 2) FillNode(rng, size / 2, depth - 1, node->mutable_child());
}

}  // namespace

std::vector<WireRequest> RequestSequence(int count) {
  std::mt19937 rng(20261124);
  std::vector<WireRequest> requests;
  for (int i = 0; i < count; ++i) {
    WireRequest request;
    const int size = i < count / 8 ? 12 : static_cast<int>(rng() % 6);  // big ones first
    if (rng() % 4 != 0) {
      FillNode(rng, size, 3, request.mutable_node());
    } else if (rng() % 2) {
      request.mutable_node();  // present, empty: a copy of it is present in the reply too
    }
    const int nodes = i < count / 8 ? 6 : static_cast<int>(rng() % 3);
    for (int n = 0; n < nodes; ++n) FillNode(rng, size / 2, 2, request.add_nodes());
    // Every action set at some point, mixed; every 5th request none (the plainest handler).
    request.set_actions(i % 5 == 4 ? 0u : static_cast<uint32_t>(rng() % (kAllActions + 1)));
    requests.push_back(std::move(request));
  }
  return requests;
}

}  // namespace arenarpc::wire
