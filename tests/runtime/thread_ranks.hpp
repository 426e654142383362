// In-process ranks for the runtime's unit tests: each rank a thread with its own GlooWorld (a real
// TCPStore rendezvous on a free local port), failures collected by rank instead of thrown.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/comm/gloo_world.hpp"
#include "runtime/launch/local_launcher.hpp"

namespace tessera::test {

/// Runs body(rank, world) on `n` threads, one GlooWorld each; returns every failure message. With
/// `keep_worlds` false the worlds are leaked on purpose (a timed-out Gloo operation may still hold
/// the group's threads).
inline std::vector<std::string> run_ranks(int n, const std::function<void(int, runtime::GlooWorld&)>& body,
                                          std::chrono::milliseconds timeout = std::chrono::milliseconds(20000),
                                          bool keep_worlds = true) {
  const int port = runtime::free_local_port();
  std::mutex mutex;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < n; ++rank)
    threads.emplace_back([&, rank] {
      try {
        // Connecting waits for the slowest thread to start, which takes long on a loaded machine.
        const runtime::WorldOptions options{rank, n, "127.0.0.1", port, timeout,
                                            std::max(timeout, std::chrono::milliseconds(20000))};
        auto* world = new runtime::GlooWorld(options);
        body(rank, *world);
        world->finish();
        if (keep_worlds) delete world;
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        failures.push_back("rank " + std::to_string(rank) + ": " + e.what());
      }
    });
  for (auto& t : threads) t.join();
  return failures;
}

}  // namespace tessera::test
