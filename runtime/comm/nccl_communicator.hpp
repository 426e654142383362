// The NCCL communicator of the GPU path: the Communicator interface on NCCL, its unique id exchanged
// through the run's TCPStore rendezvous, operations on a dedicated CUDA stream ordered with the
// caller's current (compute) stream by events, sends grouped with the next receive
// (ncclGroupStart/End) for pipeline exchanges, and a watchdog that aborts the communicator
// (ncclCommAbort) on an NCCL error or when an operation exceeds the timeout, so that a failure ends
// the rank with a message naming the group and the peers instead of hanging.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/comm/communicator.hpp"

namespace tessera::runtime {

class GlooWorld;

/// The number of CUDA devices this process sees; `why` gets the CUDA runtime's reason when it is 0.
int cuda_device_count(std::string* why = nullptr);

/// An NCCL communicator over `members` (global ranks containing this rank) on CUDA device `device`.
/// Collective over the members, like GlooWorld::make_group. Throws CommError naming the group when
/// no GPU is present, the device does not exist, or NCCL fails to connect within the timeout.
/// Operations take CUDA tensors (fp32, bf16, fp16, fp64, int32, int64) and are stream-ordered:
/// they return once enqueued, and the caller's current stream waits for them (the *_async ones only
/// at wait()). Point-to-point operations match in issue order per pair of ranks (tags are not used).
std::unique_ptr<Communicator> make_nccl_group(GlooWorld& world, const std::string& name,
                                              const std::vector<int64_t>& members, int device);

}  // namespace tessera::runtime
