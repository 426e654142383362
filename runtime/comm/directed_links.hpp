// Pipeline point-to-point for transports that match sends and receives by order (NCCL): one
// two-member group per direction between neighbouring stages, so a send never waits behind a
// receive of its group. Every schedule (GPipe, 1F1B, interleaved) then runs as on Gloo's tagged sends
// started at once: each direction carries its messages in the order both ends issue them
// (test_directed_links replays every schedule table to check that order).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <c10/core/TensorOptions.h>

#include "runtime/comm/communicator.hpp"

namespace tessera::runtime {

/// A direction between two members of a group (group ranks): `from` only sends, `to` only receives.
struct DirectedLink {
  int from = 0;
  int to = 0;
  bool operator==(const DirectedLink&) const = default;
};

/// The directions between neighbouring stages of a pipeline of `stages`: i and i+1 both ways, and with
/// `ring` (the interleaved schedule, whose last stage feeds the first one's next chunk) the last and
/// the first both ways too; each once, in the one order every member creates them in (a creation is a
/// rendezvous of its two members, so any other order could leave two members waiting on each other).
std::vector<DirectedLink> pipeline_links(int stages, bool ring);

/// Makes a group of two from its name and its members (global ranks, ascending).
using MakeLinkGroup =
    std::function<std::unique_ptr<Communicator>(const std::string& name, const std::vector<int64_t>& members)>;

/// `group` for its collectives; its send() and recv() go through one group per direction this member
/// is an end of, made with `make_link` in pipeline_links() order, named "<group name>-<from>to<to>",
/// and connected at once by one element of `options` (the messages' device). A send starts at once
/// (the link keeps its tensor until it completed); wait_sends() passes on to every sending link.
/// The links are closed in the same order.
std::unique_ptr<Communicator> with_directed_links(std::unique_ptr<Communicator> group, bool ring,
                                                  const at::TensorOptions& options, const MakeLinkGroup& make_link);

}  // namespace tessera::runtime
