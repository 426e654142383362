// The directed links of a pipeline group (directed_links.hpp).
#include "runtime/comm/directed_links.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <ATen/ATen.h>

namespace tessera::runtime {

std::vector<DirectedLink> pipeline_links(int stages, bool ring) {
  std::vector<DirectedLink> links;
  auto add = [&](int a, int b) {
    for (const DirectedLink link : {DirectedLink{a, b}, DirectedLink{b, a}})
      if (a != b && std::find(links.begin(), links.end(), link) == links.end()) links.push_back(link);
  };
  for (int i = 0; i + 1 < stages; ++i) add(i, i + 1);
  if (ring && stages > 1) add(stages - 1, 0);
  return links;
}

namespace {

class DirectedLinks final : public Communicator {
 public:
  DirectedLinks(std::unique_ptr<Communicator> group, bool ring, const at::TensorOptions& options,
                const MakeLinkGroup& make_link)
      : group_(std::move(group)) {
    const int me = group_->rank();
    const auto& members = group_->members();
    for (const DirectedLink link : pipeline_links(group_->size(), ring)) {
      if (link.from != me && link.to != me) continue;
      const int64_t a = members.at(link.from), b = members.at(link.to);
      links_.push_back(make_link(group_->name() + "-" + std::to_string(link.from) + "to" + std::to_string(link.to),
                                 {std::min(a, b), std::max(a, b)}));
      Communicator* made = links_.back().get();
      // One element across at once, while both ends are here: NCCL connects a pair on its first
      // message, and a first send of the run would otherwise hold its host until the receiver's first
      // receive on this link.
      at::Tensor first = at::zeros({1}, options);
      if (link.from == me) {
        sends_to_[link.to] = made;
        made->send(first, link_rank(link.to), 0);
        made->wait_sends();
      } else {
        receives_from_[link.from] = made;
        made->recv(first, link_rank(link.from), 0);
      }
    }
  }
  // In creation order, which every member follows: closing an NCCL communicator is a rendezvous of
  // its members too, so two ends closing their links in crossed orders would wait on each other.
  ~DirectedLinks() override {
    for (auto& link : links_) link.reset();
  }

  int rank() const override { return group_->rank(); }
  int size() const override { return group_->size(); }
  const std::vector<int64_t>& members() const override { return group_->members(); }
  const std::string& name() const override { return group_->name(); }
  double busy_s() const override {
    double total = group_->busy_s();
    for (const auto& link : links_) total += link->busy_s();
    return total;
  }

  void all_reduce(at::Tensor& tensor, ReduceOp op) override { group_->all_reduce(tensor, op); }
  void reduce_scatter(at::Tensor& output, const at::Tensor& input) override { group_->reduce_scatter(output, input); }
  void all_gather(at::Tensor& output, const at::Tensor& input) override { group_->all_gather(output, input); }
  void broadcast(at::Tensor& tensor, int root) override { group_->broadcast(tensor, root); }
  void barrier() override { group_->barrier(); }
  std::unique_ptr<PendingWork> all_reduce_async(at::Tensor& tensor, ReduceOp op) override {
    return group_->all_reduce_async(tensor, op);
  }
  std::unique_ptr<PendingWork> reduce_scatter_async(at::Tensor& output, const at::Tensor& input) override {
    return group_->reduce_scatter_async(output, input);
  }
  std::unique_ptr<PendingWork> reduce_async(at::Tensor& tensor, int root) override {
    return group_->reduce_async(tensor, root);
  }

  void send(const at::Tensor& tensor, int peer, int tag) override {
    Communicator& link = link_of(sends_to_, peer, "send to");
    link.send(tensor, link_rank(peer), tag);
    link.post_sends();  // nothing comes back on this link to group the send with
  }
  void recv(at::Tensor& tensor, int peer, int tag) override {
    link_of(receives_from_, peer, "recv from").recv(tensor, link_rank(peer), tag);
  }
  void wait_sends() override {
    for (auto& [peer, link] : sends_to_) link->wait_sends();
  }

 private:
  Communicator& link_of(std::map<int, Communicator*>& links, int peer, const char* what) {
    auto it = links.find(peer);
    if (it == links.end())
      throw std::logic_error("group " + name() + ": " + what + " group rank " + std::to_string(peer) +
                             ", which is not a neighbouring stage of rank " + std::to_string(rank()));
    return *it->second;
  }
  // The peer's rank in a link's group: its members are the two global ranks in ascending order.
  int link_rank(int peer) const { return members().at(peer) < members().at(rank()) ? 0 : 1; }

  std::unique_ptr<Communicator> group_;
  std::vector<std::unique_ptr<Communicator>> links_;   // in pipeline_links() order
  std::map<int, Communicator*> sends_to_, receives_from_;  // by the peer's group rank
};

}  // namespace

std::unique_ptr<Communicator> with_directed_links(std::unique_ptr<Communicator> group, bool ring,
                                                  const at::TensorOptions& options, const MakeLinkGroup& make_link) {
  return std::make_unique<DirectedLinks>(std::move(group), ring, options, make_link);
}

}  // namespace tessera::runtime
