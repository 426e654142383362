// The communicator of a group of one (tp=1, dp=1, ...): collectives are copies or no-ops, so layers
// need no special case for an absent dimension.
#pragma once

#include <stdexcept>

#include <ATen/ATen.h>

#include "runtime/comm/communicator.hpp"

namespace tessera::runtime {

class SoloCommunicator final : public Communicator {
 public:
  SoloCommunicator(std::string name, int64_t global_rank) : name_(std::move(name)), members_{global_rank} {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const std::vector<int64_t>& members() const override { return members_; }
  const std::string& name() const override { return name_; }
  void all_reduce(at::Tensor&, ReduceOp) override {}
  void reduce_scatter(at::Tensor& output, const at::Tensor& input) override { output.copy_(input); }
  void all_gather(at::Tensor& output, const at::Tensor& input) override { output.copy_(input); }
  void broadcast(at::Tensor&, int) override {}
  void send(const at::Tensor&, int, int) override { throw std::logic_error("send in the one-rank group " + name_); }
  void recv(at::Tensor&, int, int) override { throw std::logic_error("recv in the one-rank group " + name_); }
  void wait_sends() override {}
  void barrier() override {}
  std::unique_ptr<PendingWork> all_reduce_async(at::Tensor&, ReduceOp) override { return done(); }
  std::unique_ptr<PendingWork> reduce_scatter_async(at::Tensor& output, const at::Tensor& input) override {
    output.copy_(input);
    return done();
  }
  std::unique_ptr<PendingWork> reduce_async(at::Tensor&, int) override { return done(); }
  double busy_s() const override { return 0; }

 private:
  struct Done final : PendingWork {
    void wait() override {}
  };
  static std::unique_ptr<PendingWork> done() { return std::make_unique<Done>(); }

  std::string name_;
  std::vector<int64_t> members_;
};

}  // namespace tessera::runtime
