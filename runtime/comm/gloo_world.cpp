// Gloo communicators through c10d's ProcessGroupGloo, TCPStore rendezvous and the heartbeat.
#include "runtime/comm/gloo_world.hpp"

#include <netdb.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "runtime/comm/comm_error.hpp"

namespace tessera::runtime {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kHeartbeatPeriod = std::chrono::milliseconds(200);

std::string heartbeat_key(int64_t rank) { return "tessera/heartbeat/" + std::to_string(rank); }

std::string join(const std::vector<int64_t>& ranks) {
  std::ostringstream out;
  for (size_t i = 0; i < ranks.size(); ++i) out << (i ? "," : "") << ranks[i];
  return out.str();
}

// The text of an exception without c10's backtrace.
std::string message_of(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

// Waits until `o.master_addr` resolves, looking it up every second within the connect timeout (a
// pod's DNS record appears only once it starts); a name still unknown then is named, where c10d's own
// retries took 85 s and ended in a socket error. Any other lookup failure is left to c10d.
void await_resolvable(const WorldOptions& o) {
  const auto deadline = std::chrono::steady_clock::now() + o.effective_connect_timeout();
  for (bool said = false;; said = true) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(o.master_addr.c_str(), nullptr, &hints, &found);
    if (found) ::freeaddrinfo(found);
    if (rc != EAI_NONAME && rc != EAI_AGAIN && rc != EAI_FAIL && rc != EAI_NODATA) return;
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::seconds(0))
      throw CommError("rank " + std::to_string(o.rank) + ": rendezvous at " + o.master_addr + ":" +
                      std::to_string(o.master_port) + " failed: MASTER_ADDR " + o.master_addr + " does not resolve (" +
                      ::gai_strerror(rc) + ") after " +
                      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(o.effective_connect_timeout()).count()) +
                      " s of lookups");
    if (!said)
      std::fprintf(stderr, "rank %d: waiting for MASTER_ADDR %s to resolve (%s)\n", o.rank, o.master_addr.c_str(),
                   ::gai_strerror(rc));
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(left, std::chrono::seconds(1)));
  }
}

// `counted`: this connection registers the rank with the rendezvous (rank 0's constructor returns
// once all ranks have); the heartbeat's second connection is not counted.
c10::intrusive_ptr<c10d::TCPStore> connect_store(const WorldOptions& o, bool server, bool counted) {
  c10d::TCPStoreOptions so;
  so.port = static_cast<uint16_t>(o.master_port);
  so.isServer = server;
  so.numWorkers = o.world_size;
  so.waitWorkers = counted;
  so.timeout = o.effective_connect_timeout();
  await_resolvable(o);
  try {
    auto store = c10::make_intrusive<c10d::TCPStore>(o.master_addr, so);
    store->setTimeout(o.timeout);  // from now on the bound of each get and wait
    return store;
  } catch (const std::exception& e) {
    throw CommError("rank " + std::to_string(o.rank) + ": rendezvous at " + o.master_addr + ":" +
                    std::to_string(o.master_port) + " failed: " + message_of(e));
  }
}

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(GlooWorld& world, std::string name, std::vector<int64_t> members, int rank,
                   c10::intrusive_ptr<c10d::ProcessGroupGloo> group, std::chrono::milliseconds timeout)
      : world_(world), name_(std::move(name)), members_(std::move(members)), rank_(rank), group_(std::move(group)),
        timeout_(timeout) {}

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  const std::vector<int64_t>& members() const override { return members_; }
  const std::string& name() const override { return name_; }
  double busy_s() const override { return busy_s_; }

  void all_reduce(at::Tensor& tensor, ReduceOp op) override {
    std::vector<at::Tensor> tensors{tensor};
    c10d::AllreduceOptions o;
    o.reduceOp = op == ReduceOp::sum ? c10d::ReduceOp::SUM : c10d::ReduceOp::MAX;
    o.timeout = timeout_;
    run("all_reduce", [&] { return group_->allreduce(tensors, o); });
  }
  void reduce_scatter(at::Tensor& output, const at::Tensor& input) override {
    at::Tensor in = input.contiguous();
    c10d::ReduceScatterOptions o;
    o.timeout = timeout_;
    run("reduce_scatter", [&] { return group_->_reduce_scatter_base(output, in, o); });
  }
  void all_gather(at::Tensor& output, const at::Tensor& input) override {
    at::Tensor in = input.contiguous();
    c10d::AllgatherOptions o;
    o.timeout = timeout_;
    run("all_gather", [&] { return group_->_allgather_base(output, in, o); });
  }
  void broadcast(at::Tensor& tensor, int root) override {
    std::vector<at::Tensor> tensors{tensor};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    o.timeout = timeout_;
    run("broadcast", [&] { return group_->broadcast(tensors, o); });
  }
  void send(const at::Tensor& tensor, int peer, int tag) override {
    release_finished_sends();
    std::vector<at::Tensor> tensors{tensor.contiguous()};
    const auto start = Clock::now();
    try {
      pending_sends_.push_back(group_->send(tensors, peer, tag));
    } catch (const std::exception& e) {
      fail("send to group rank " + std::to_string(peer), message_of(e));
    }
    busy_s_ += std::chrono::duration<double>(Clock::now() - start).count();
  }
  void recv(at::Tensor& tensor, int peer, int tag) override {
    std::vector<at::Tensor> tensors{tensor};
    release_finished_sends();
    run("recv from group rank " + std::to_string(peer), [&] { return group_->recv(tensors, peer, tag); });
    release_finished_sends();
  }
  void wait_sends() override {
    auto sends = std::move(pending_sends_);
    pending_sends_.clear();
    for (auto& work : sends) run("send", [&] { return work; });
  }
  void barrier() override {
    c10d::BarrierOptions o;
    o.timeout = timeout_;
    run("barrier", [&] { return group_->barrier(o); });
  }

  std::unique_ptr<PendingWork> all_reduce_async(at::Tensor& tensor, ReduceOp op) override {
    std::vector<at::Tensor> tensors{tensor};
    c10d::AllreduceOptions o;
    o.reduceOp = op == ReduceOp::sum ? c10d::ReduceOp::SUM : c10d::ReduceOp::MAX;
    o.timeout = timeout_;
    return start("all_reduce", tensors, [&] { return group_->allreduce(tensors, o); });
  }
  std::unique_ptr<PendingWork> reduce_scatter_async(at::Tensor& output, const at::Tensor& input) override {
    std::vector<at::Tensor> tensors{output, input.contiguous()};
    c10d::ReduceScatterOptions o;
    o.timeout = timeout_;
    return start("reduce_scatter", tensors, [&] { return group_->_reduce_scatter_base(tensors[0], tensors[1], o); });
  }
  std::unique_ptr<PendingWork> reduce_async(at::Tensor& tensor, int root) override {
    std::vector<at::Tensor> tensors{tensor};
    c10d::ReduceOptions o;
    o.rootRank = root;
    o.reduceOp = c10d::ReduceOp::SUM;
    o.timeout = timeout_;
    return start("reduce to group rank " + std::to_string(root), tensors, [&] { return group_->reduce(tensors, o); });
  }

 private:
  // A started Gloo operation; keeps its tensors alive until it is waited for.
  class GlooWork final : public PendingWork {
   public:
    GlooWork(GlooCommunicator& owner, std::string what, std::vector<at::Tensor> tensors,
             c10::intrusive_ptr<c10d::Work> work)
        : owner_(owner), what_(std::move(what)), tensors_(std::move(tensors)), work_(std::move(work)) {}
    void wait() override {
      if (!work_) return;
      auto work = std::move(work_);
      owner_.run(what_, [&] { return work; });
      tensors_.clear();
    }

   private:
    GlooCommunicator& owner_;
    std::string what_;
    std::vector<at::Tensor> tensors_;
    c10::intrusive_ptr<c10d::Work> work_;
  };

  template <typename Start>
  std::unique_ptr<PendingWork> start(const std::string& what, std::vector<at::Tensor> tensors, Start start_work) {
    const auto began = Clock::now();
    c10::intrusive_ptr<c10d::Work> work;
    try {
      work = start_work();
    } catch (const std::exception& e) {
      fail(what, message_of(e));
    }
    busy_s_ += std::chrono::duration<double>(Clock::now() - began).count();
    return std::make_unique<GlooWork>(*this, what, std::move(tensors), std::move(work));
  }

  template <typename Start>
  void run(const std::string& what, Start start_work) {
    const auto start = Clock::now();
    try {
      auto work = start_work();
      if (!work->wait(timeout_)) fail(what, "timed out");
    } catch (const CommError&) {
      throw;
    } catch (const std::exception& e) {
      fail(what, message_of(e));
    }
    busy_s_ += std::chrono::duration<double>(Clock::now() - start).count();
  }
  // Drops the sends the peer has received, without blocking: a send holds its tensor until then, and
  // waiting for every send only at the step's end would keep each activation and gradient that
  // crossed the pipeline alive for the whole step. A finished send that failed throws here.
  void release_finished_sends() {
    std::erase_if(pending_sends_, [&](c10::intrusive_ptr<c10d::Work>& work) {
      if (!work->isCompleted()) return false;
      run("send", [&] { return work; });
      return true;
    });
  }
  [[noreturn]] void fail(const std::string& what, const std::string& cause) {
    throw CommError(world_.diagnose(what, name_, members_, cause));
  }

  GlooWorld& world_;
  std::string name_;
  std::vector<int64_t> members_;
  int rank_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  std::chrono::milliseconds timeout_;
  std::vector<c10::intrusive_ptr<c10d::Work>> pending_sends_;
  double busy_s_ = 0;
};

}  // namespace

void turn_off_flight_recorder_unless_asked() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!std::getenv("TORCH_FR_BUFFER_SIZE") && !std::getenv("TORCH_NCCL_TRACE_BUFFER_SIZE"))
      setenv("TORCH_FR_BUFFER_SIZE", "0", /*overwrite=*/0);
  });
}

struct GlooWorld::Impl {
  c10::intrusive_ptr<c10d::TCPStore> store;            // rendezvous (rank 0 serves it)
  c10::intrusive_ptr<c10d::TCPStore> heartbeat_store;  // a second connection for the heartbeat thread
  std::shared_ptr<::gloo::transport::Device> device;
  std::atomic<bool> stop{false};
  std::thread heartbeat;
  std::mutex diagnose_mutex;
};

GlooWorld::GlooWorld(const WorldOptions& options) : options_(options), impl_(std::make_unique<Impl>()) {
  turn_off_flight_recorder_unless_asked();
  impl_->store = connect_store(options_, options_.rank == 0, true);
  impl_->heartbeat_store = connect_store(options_, false, false);
  impl_->device = c10d::ProcessGroupGloo::createDeviceForHostname(options_.master_addr == "localhost" ? "127.0.0.1"
                                                                                                     : options_.master_addr);
  impl_->heartbeat = std::thread([this] {
    const std::string key = heartbeat_key(options_.rank);
    while (!impl_->stop.load()) {
      try {
        impl_->heartbeat_store->add(key, 1);
      } catch (const std::exception&) {
        return;  // the store is gone; operations will report it
      }
      std::this_thread::sleep_for(kHeartbeatPeriod);
    }
  });
}

GlooWorld::~GlooWorld() {
  impl_->stop = true;
  if (impl_->heartbeat.joinable()) impl_->heartbeat.join();
}

std::unique_ptr<Communicator> GlooWorld::make_group(const std::string& name, const std::vector<int64_t>& members) {
  int group_rank = -1;
  for (size_t i = 0; i < members.size(); ++i)
    if (members[i] == options_.rank) group_rank = static_cast<int>(i);
  if (group_rank < 0)
    throw std::invalid_argument("rank " + std::to_string(options_.rank) + " is not a member of group " + name);
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>("tessera/group/" + name + "/", impl_->store);
  auto gloo_options = c10d::ProcessGroupGloo::Options::create(options_.effective_connect_timeout());
  gloo_options->devices.push_back(impl_->device);
  gloo_options->threads = 1;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  try {
    group = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, group_rank, static_cast<int>(members.size()),
                                                        gloo_options);
  } catch (const std::exception& e) {
    throw CommError(diagnose("connecting", name, members, message_of(e)));
  }
  group->setTimeout(options_.timeout);  // connected: operations get the operation timeout
  return std::make_unique<GlooCommunicator>(*this, name, members, group_rank, std::move(group), options_.timeout);
}

void GlooWorld::finish() {
  const std::string key = "tessera/finished";
  impl_->store->add(key, 1);
  if (options_.rank != 0) return;
  const auto deadline = Clock::now() + options_.effective_connect_timeout();
  while (impl_->store->add(key, 0) < options_.world_size) {
    if (Clock::now() > deadline) throw CommError(diagnose("finishing", "world", all_ranks(), "timed out"));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void GlooWorld::store_barrier(const std::string& name) {
  const std::string key = "tessera/barrier/" + name;
  impl_->store->add(key, 1);
  const auto deadline = Clock::now() + options_.timeout;
  while (impl_->store->add(key, 0) < options_.world_size) {
    if (Clock::now() > deadline) throw CommError(diagnose("barrier " + name, "world", all_ranks(), "timed out"));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::vector<int64_t> GlooWorld::store_gather(const std::string& name, int64_t value) {
  const std::string key = "tessera/gather/" + name + "/";
  impl_->store->set(key + std::to_string(options_.rank), std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(&value),
                                                                              reinterpret_cast<const uint8_t*>(&value + 1)));
  store_barrier("gather/" + name);
  std::vector<int64_t> values(options_.world_size);
  for (int r = 0; r < options_.world_size; ++r) {
    const auto bytes = impl_->store->get(key + std::to_string(r));
    if (bytes.size() != sizeof(int64_t)) throw CommError("gather " + name + ": rank " + std::to_string(r) + " sent a malformed value");
    std::memcpy(&values[r], bytes.data(), sizeof(int64_t));
  }
  return values;
}

void GlooWorld::store_set(const std::string& key, const std::string& value) {
  impl_->store->set(key, std::vector<uint8_t>(value.begin(), value.end()));
}

std::string GlooWorld::store_get(const std::string& key) {
  try {
    impl_->store->wait({key}, options_.effective_connect_timeout());
    const std::vector<uint8_t> value = impl_->store->get(key);
    return std::string(value.begin(), value.end());
  } catch (const std::exception& e) {
    throw CommError(diagnose("reading " + key + " from the rendezvous store", "world", all_ranks(), message_of(e)));
  }
}

std::vector<int64_t> GlooWorld::all_ranks() const {
  std::vector<int64_t> out(options_.world_size);
  for (int r = 0; r < options_.world_size; ++r) out[r] = r;
  return out;
}

std::string GlooWorld::diagnose(const std::string& what, const std::string& group, const std::vector<int64_t>& members,
                                const std::string& cause) {
  std::lock_guard lock(impl_->diagnose_mutex);
  std::ostringstream out;
  out << "rank " << options_.rank << ": " << what << " in group " << group << " [ranks " << join(members)
      << "] failed";
  std::vector<int64_t> dead;
  try {
    std::map<int64_t, int64_t> before;
    for (int64_t r : members)
      if (r != options_.rank) before[r] = impl_->store->add(heartbeat_key(r), 0);
    std::this_thread::sleep_for(kHeartbeatPeriod * 8);
    for (auto [r, beats] : before)
      if (impl_->store->add(heartbeat_key(r), 0) == beats) dead.push_back(r);
  } catch (const std::exception&) {
    out << ": rank 0 (the rendezvous host " << options_.master_addr << ":" << options_.master_port
        << ") is unreachable, so it has died";
    return out.str();
  }
  if (!dead.empty())
    out << ": peer rank" << (dead.size() > 1 ? "s " : " ") << join(dead) << " died (no heartbeat)";
  else
    out << ": " << cause;
  return out.str();
}

}  // namespace tessera::runtime
