// Communicator: the collectives and point-to-point operations of one process group, each bounded by
// the group's timeout. The Gloo implementation (gloo_world.hpp) serves the CPU path; an NCCL one
// plugs in behind the same interface.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace tessera::runtime {

enum class ReduceOp { sum, max };

/// An operation started by one of the *_async calls. wait() returns once it completed (its result is
/// then in the tensors it was given, which the caller keeps alive until then) or throws CommError
/// when it failed or did not complete within the group's timeout. Waiting twice is a no-op.
class PendingWork {
 public:
  virtual ~PendingWork() = default;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  /// This process's index in the group and the group's size.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Global ranks of the members, in group order; the group's name ("tp", "dp", ...).
  virtual const std::vector<int64_t>& members() const = 0;
  virtual const std::string& name() const = 0;

  /// In place, on every member.
  virtual void all_reduce(at::Tensor& tensor, ReduceOp op = ReduceOp::sum) = 0;
  /// `input` holds size() equal blocks along dim 0; `output` receives the reduced block of this rank.
  virtual void reduce_scatter(at::Tensor& output, const at::Tensor& input) = 0;
  /// `output` receives size() blocks along dim 0, block i from member i.
  virtual void all_gather(at::Tensor& output, const at::Tensor& input) = 0;
  virtual void broadcast(at::Tensor& tensor, int root) = 0;
  /// Point to point within the group (`peer` is a group rank). send() may return before the peer
  /// received and holds the tensor until then; sends the peer has received are released at the
  /// group's next send or recv, and wait_sends() waits for every outstanding one.
  virtual void send(const at::Tensor& tensor, int peer, int tag) = 0;
  virtual void recv(at::Tensor& tensor, int peer, int tag) = 0;
  virtual void wait_sends() = 0;
  /// Starts the sends a transport holds back to go with the next receive (NCCL groups them, so two
  /// peers exchanging cannot block each other), without waiting for them: for a caller whose next
  /// operation receives nothing. Transports that start each send at once (Gloo) do nothing.
  virtual void post_sends() {}
  /// Whether sends wait for the group's next receive to start (NCCL's grouping), which schedules whose
  /// stages send and receive in crossing orders cannot run with (the interleaved one with more
  /// microbatches than stages).
  virtual bool holds_sends() const { return false; }
  virtual void barrier() = 0;

  /// The same collectives, started and returned at once so communication overlaps computation. The
  /// tensors must stay alive and untouched until wait(). Operations of one group must be started in
  /// the same order on every member.
  virtual std::unique_ptr<PendingWork> all_reduce_async(at::Tensor& tensor, ReduceOp op = ReduceOp::sum) = 0;
  virtual std::unique_ptr<PendingWork> reduce_scatter_async(at::Tensor& output, const at::Tensor& input) = 0;
  /// Sums `tensor` of every member into member `root`'s `tensor` (the others' are left unspecified).
  virtual std::unique_ptr<PendingWork> reduce_async(at::Tensor& tensor, int root) = 0;

  /// Seconds spent inside this group's operations so far (waiting included): for asynchronous ones,
  /// the time to start them and the time in wait(), i.e. the communication the caller was exposed to.
  virtual double busy_s() const = 0;
};

}  // namespace tessera::runtime
