// NCCL communicators: rendezvous through the store, a stream per group, a watchdog per group.
#include "runtime/comm/nccl_communicator.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <type_traits>

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "runtime/comm/comm_error.hpp"
#include "runtime/comm/gloo_world.hpp"

namespace tessera::runtime {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kWatchdogPeriod = std::chrono::milliseconds(50);
constexpr auto kGraceAfterAbort = std::chrono::seconds(5);  // for the rank to report the error itself

ncclDataType_t nccl_type(const at::Tensor& t, const std::string& group) {
  switch (t.scalar_type()) {
    case at::kFloat: return ncclFloat32;
    case at::kBFloat16: return ncclBfloat16;
    case at::kHalf: return ncclFloat16;
    case at::kDouble: return ncclFloat64;
    case at::kInt: return ncclInt32;
    case at::kLong: return ncclInt64;
    default:
      throw std::invalid_argument("NCCL group " + group + ": unsupported tensor type " +
                                  std::string(c10::toString(t.scalar_type())));
  }
}

class NcclCommunicator;

// A completion event, shared by the watchdog's list and the PendingWork that waits on it: the
// watchdog drops its reference once the event has passed, and a PendingWork waited on later must
// still hold a valid (not destroyed, not recycled) handle.
using Event = std::shared_ptr<std::remove_pointer_t<cudaEvent_t>>;

// One enqueued operation: its completion event on the group's stream and the tensors it uses (kept
// alive until the event has passed, so the caching allocator cannot hand their memory out early).
struct Outstanding {
  Event done;
  Clock::time_point deadline;
  std::string what;
  std::vector<at::Tensor> tensors;
};

class NcclWork final : public PendingWork {
 public:
  NcclWork(NcclCommunicator& owner, Event done) : owner_(owner), done_(std::move(done)) {}
  void wait() override;

 private:
  NcclCommunicator& owner_;
  Event done_;
  bool waited_ = false;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(GlooWorld& world, std::string name, std::vector<int64_t> members, int rank, int device)
      : world_(world), name_(std::move(name)), members_(std::move(members)), rank_(rank), device_(device),
        timeout_(world.timeout()) {
    cuda("cudaSetDevice", cudaSetDevice(device_));
    ncclUniqueId id;
    const std::string key = "tessera/nccl/" + name_;
    if (rank_ == 0) {
      nccl("ncclGetUniqueId", ncclGetUniqueId(&id));
      world_.store_set(key, std::string(id.internal, NCCL_UNIQUE_ID_BYTES));
    } else {
      const std::string bytes = world_.store_get(key);
      if (bytes.size() != NCCL_UNIQUE_ID_BYTES)
        throw CommError("NCCL group " + name_ + ": the unique id in the store has " + std::to_string(bytes.size()) +
                        " bytes, not " + std::to_string(NCCL_UNIQUE_ID_BYTES));
      std::memcpy(id.internal, bytes.data(), NCCL_UNIQUE_ID_BYTES);
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // every call returns; the deadline below bounds the connection
    const ncclResult_t started = ncclCommInitRankConfig(&comm_, size(), id, rank_, &config);
    settle("connecting", started, world_.connect_timeout());
    cuda("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    cuda("cudaEventCreate", cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    watchdog_ = std::thread([this] { watch(); });
  }

  ~NcclCommunicator() override {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_));
    bool drained = false;
    {
      // With the watchdog still running, so that an operation whose peer never comes (the rank is
      // unwinding from another group's error) ends in an abort at its deadline instead of a hang in
      // cudaStreamSynchronize/ncclCommDestroy below.
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return outstanding_.empty() || failed_.load(); });
      drained = outstanding_.empty() && !failed_;
      reported_ = true;  // the rank is ending: no _Exit from the watchdog meanwhile
      stop_ = true;
    }
    wake_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    std::lock_guard comm_lock(comm_mutex_);
    if (comm_) {
      if (!drained) {
        ncclCommAbort(comm_);
      } else {
        cudaStreamSynchronize(stream_);
        ncclCommDestroy(comm_);
      }
    }
    outstanding_.clear();
    if (ready_) cudaEventDestroy(ready_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  const std::vector<int64_t>& members() const override { return members_; }
  const std::string& name() const override { return name_; }
  double busy_s() const override { return busy_s_; }

  void all_reduce(at::Tensor& tensor, ReduceOp op) override { wait_on_compute(enqueue_all_reduce(tensor, op)); }
  void reduce_scatter(at::Tensor& output, const at::Tensor& input) override {
    wait_on_compute(enqueue_reduce_scatter(output, input));
  }
  void all_gather(at::Tensor& output, const at::Tensor& input) override {
    const at::Tensor in = input.contiguous();
    check_tensor(output, "all_gather");
    wait_on_compute(enqueue("all_gather", {output, in}, [&] {
      return ncclAllGather(in.data_ptr(), output.data_ptr(), static_cast<size_t>(in.numel()), nccl_type(in, name_),
                           comm_, stream_);
    }));
  }
  void broadcast(at::Tensor& tensor, int root) override {
    check_tensor(tensor, "broadcast");
    wait_on_compute(enqueue("broadcast", {tensor}, [&] {
      return ncclBroadcast(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
                           nccl_type(tensor, name_), root, comm_, stream_);
    }));
  }
  // Sends wait for the next receive (or wait_sends) and go with it in one NCCL group, so two stages
  // exchanging activations and gradients cannot block each other's sends.
  void send(const at::Tensor& tensor, int peer, int) override {
    check_tensor(tensor, "send");
    queued_sends_.push_back({tensor.contiguous(), peer});
  }
  void recv(at::Tensor& tensor, int peer, int) override {
    check_tensor(tensor, "recv");
    wait_on_compute(flush_sends(&tensor, peer));
  }
  void wait_sends() override {
    if (!queued_sends_.empty()) wait_on_compute(flush_sends(nullptr, -1));
  }
  // Enqueued on the group's stream after the tensors' producers; the watchdog keeps the tensors
  // until the sends complete, so the caller's stream need not wait for them.
  void post_sends() override {
    if (!queued_sends_.empty()) flush_sends(nullptr, -1);
  }
  bool holds_sends() const override { return true; }
  void barrier() override {
    at::Tensor one = at::ones({1}, at::TensorOptions().device(at::kCUDA, device_));
    all_reduce(one, ReduceOp::sum);
    host_wait("barrier");
  }

  std::unique_ptr<PendingWork> all_reduce_async(at::Tensor& tensor, ReduceOp op) override {
    return std::make_unique<NcclWork>(*this, enqueue_all_reduce(tensor, op));
  }
  std::unique_ptr<PendingWork> reduce_scatter_async(at::Tensor& output, const at::Tensor& input) override {
    return std::make_unique<NcclWork>(*this, enqueue_reduce_scatter(output, input));
  }
  std::unique_ptr<PendingWork> reduce_async(at::Tensor& tensor, int root) override {
    check_tensor(tensor, "reduce");
    return std::make_unique<NcclWork>(*this, enqueue("reduce to group rank " + std::to_string(root), {tensor}, [&] {
      return ncclReduce(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
                        nccl_type(tensor, name_), ncclSum, root, comm_, stream_);
    }));
  }

  /// The caller's stream waits for `done`; throws the watchdog's error if the group failed.
  void wait_on_compute(const Event& done) {
    throw_if_failed();
    const auto start = Clock::now();
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_));
    cuda("cudaStreamWaitEvent", cudaStreamWaitEvent(compute_stream(), done.get(), 0));
    busy_s_ += std::chrono::duration<double>(Clock::now() - start).count();
  }

 private:
  struct QueuedSend {
    at::Tensor tensor;
    int peer;
  };

  cudaStream_t compute_stream() const { return c10::cuda::getCurrentCUDAStream(device_).stream(); }

  void check_tensor(const at::Tensor& t, const char* what) const {
    if (!t.is_cuda())
      throw std::invalid_argument("NCCL group " + name_ + ": " + what + " needs a CUDA tensor, got one on " +
                                  t.device().str());
    if (!t.is_contiguous()) throw std::invalid_argument("NCCL group " + name_ + ": " + what + " needs a contiguous tensor");
  }

  Event enqueue_all_reduce(at::Tensor& tensor, ReduceOp op) {
    check_tensor(tensor, "all_reduce");
    return enqueue("all_reduce", {tensor}, [&] {
      return ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
                           nccl_type(tensor, name_), op == ReduceOp::sum ? ncclSum : ncclMax, comm_, stream_);
    });
  }
  Event enqueue_reduce_scatter(at::Tensor& output, const at::Tensor& input) {
    const at::Tensor in = input.contiguous();
    check_tensor(output, "reduce_scatter");
    return enqueue("reduce_scatter", {output, in}, [&] {
      return ncclReduceScatter(in.data_ptr(), output.data_ptr(), static_cast<size_t>(output.numel()),
                               nccl_type(in, name_), ncclSum, comm_, stream_);
    });
  }

  Event flush_sends(at::Tensor* recv_into, int recv_peer) {
    std::vector<at::Tensor> tensors;
    for (const auto& s : queued_sends_) tensors.push_back(s.tensor);
    if (recv_into) tensors.push_back(*recv_into);
    const std::string what = recv_into ? "recv from group rank " + std::to_string(recv_peer) : "send";
    auto sends = std::move(queued_sends_);
    queued_sends_.clear();
    return enqueue(what, std::move(tensors), [&] {
      ncclResult_t r = ncclGroupStart();
      for (const auto& s : sends)
        if (r == ncclSuccess || r == ncclInProgress)
          r = ncclSend(s.tensor.data_ptr(), static_cast<size_t>(s.tensor.numel()), nccl_type(s.tensor, name_), s.peer,
                       comm_, stream_);
      if (recv_into && (r == ncclSuccess || r == ncclInProgress))
        r = ncclRecv(recv_into->data_ptr(), static_cast<size_t>(recv_into->numel()), nccl_type(*recv_into, name_),
                     recv_peer, comm_, stream_);
      const ncclResult_t end = ncclGroupEnd();
      return (r == ncclSuccess || r == ncclInProgress) ? end : r;
    });
  }

  // Orders the group's stream after the caller's, enqueues, records completion for the watchdog.
  template <typename Call>
  Event enqueue(const std::string& what, std::vector<at::Tensor> tensors, Call call) {
    throw_if_failed();
    const auto start = Clock::now();
    // The events and the stream are on device_; so must be the thread's current device when they
    // are created and recorded (an autograd thread or another caller may have a different one).
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device_));
    cudaEvent_t raw = nullptr;
    cuda("cudaEventCreate", cudaEventCreateWithFlags(&raw, cudaEventDisableTiming));
    Event done(raw, [](cudaEvent_t e) { cudaEventDestroy(e); });
    cuda("cudaEventRecord", cudaEventRecord(ready_, compute_stream()));
    cuda("cudaStreamWaitEvent", cudaStreamWaitEvent(stream_, ready_, 0));
    {
      // The watchdog aborts under this lock: comm_ is not freed while a call here uses it.
      std::lock_guard comm_lock(comm_mutex_);
      throw_if_failed();
      settle(what, call());
    }
    cuda("cudaEventRecord", cudaEventRecord(done.get(), stream_));
    {
      std::lock_guard lock(mutex_);
      outstanding_.push_back({done, Clock::now() + timeout_, what, std::move(tensors)});
    }
    busy_s_ += std::chrono::duration<double>(Clock::now() - start).count();
    return done;
  }

  // A non-blocking communicator may answer ncclInProgress; wait (bounded) until it has settled.
  // Called with comm_mutex_ held (or from the constructor, before the watchdog starts).
  void settle(const std::string& what, ncclResult_t result, std::chrono::milliseconds bound = {}) {
    const auto deadline = Clock::now() + (bound.count() > 0 ? bound : timeout_);
    std::string cause;
    while (result == ncclInProgress) {
      if (Clock::now() > deadline) {
        cause = "NCCL timed out";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (ncclCommGetAsyncError(comm_, &result) != ncclSuccess) break;
    }
    if (cause.empty() && result == ncclSuccess) return;
    if (cause.empty())
      cause = std::string("NCCL error: ") + ncclGetErrorString(result) +
              (ncclGetLastError(comm_) ? std::string(" (") + ncclGetLastError(comm_) + ")" : "");
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    std::string message = world_.diagnose(what, name_, members_, cause);
    {
      // Failed for good: later calls throw this instead of calling NCCL on a null communicator, and
      // the watchdog leaves the group alone.
      std::lock_guard lock(mutex_);
      failure_ = message;
      failed_at_ = Clock::now();
      reported_ = true;
      failed_ = true;
    }
    wake_.notify_all();
    throw CommError(message);
  }

  // Blocks the host until everything enqueued so far completed (or the group failed).
  void host_wait(const std::string& what) {
    Event last;
    {
      std::lock_guard lock(mutex_);
      if (!outstanding_.empty()) last = outstanding_.back().done;
    }
    while (last) {
      throw_if_failed();
      std::unique_lock lock(mutex_);
      bool still = false;
      for (const auto& o : outstanding_) still = still || o.done == last;
      if (!still) return;
      wake_.wait_for(lock, kWatchdogPeriod);
    }
  }

  void throw_if_failed() {
    if (!failed_.load()) return;
    std::lock_guard lock(mutex_);
    reported_ = true;
    throw CommError(failure_);
  }

  // Every period: NCCL's asynchronous error, completed operations, deadlines. On a failure the
  // communicator is aborted (its kernels return), the rank is told through throw_if_failed(), and if
  // it does not pick the error up within the grace period the process ends with the message.
  void watch() {
    // This thread queries and destroys events of device_ and frees tensors: without a current device
    // its first CUDA call would create a context on device 0 (memory on another rank's GPU).
    cudaSetDevice(device_);
    std::unique_lock lock(mutex_);
    while (!stop_) {
      wake_.wait_for(lock, kWatchdogPeriod);
      if (stop_ || failed_) {
        if (failed_ && !reported_ && Clock::now() > failed_at_ + kGraceAfterAbort) {
          std::fprintf(stderr, "%s\n", failure_.c_str());
          std::fflush(stderr);
          std::_Exit(1);
        }
        continue;
      }
      std::string what, cause;
      ncclResult_t async = ncclSuccess;
      {
        // Skipped while an operation is being enqueued (that caller checks the result itself).
        std::unique_lock comm_lock(comm_mutex_, std::try_to_lock);
        if (comm_lock.owns_lock() && comm_ && ncclCommGetAsyncError(comm_, &async) == ncclSuccess &&
            async != ncclSuccess && async != ncclInProgress) {
          cause = std::string("NCCL error: ") + ncclGetErrorString(async);
          what = outstanding_.empty() ? "an operation" : outstanding_.front().what;
        }
      }
      while (cause.empty() && !outstanding_.empty()) {
        Outstanding& o = outstanding_.front();
        const cudaError_t q = cudaEventQuery(o.done.get());
        if (q == cudaSuccess) {
          outstanding_.pop_front();  // releases the tensors; the event goes with its last holder
          continue;
        }
        if (q != cudaErrorNotReady) cause = std::string("CUDA error: ") + cudaGetErrorString(q);
        else if (Clock::now() > o.deadline) cause = "timed out";
        if (!cause.empty()) what = o.what;
        break;
      }
      wake_.notify_all();
      if (cause.empty()) continue;
      lock.unlock();
      std::string message = world_.diagnose(what, name_, members_, cause + " (communicator aborted)");
      // Waits for an enqueue in progress (bounded by its own settle deadline), so that comm_ is not
      // freed under it; failed_ is set before comm_lock is released, so the next enqueue throws
      // this error instead of calling NCCL with a null communicator.
      std::lock_guard comm_lock(comm_mutex_);
      if (comm_) ncclCommAbort(comm_);
      comm_ = nullptr;
      lock.lock();
      if (failed_) continue;  // settle() failed meanwhile and reported its own error
      failure_ = std::move(message);
      failed_at_ = Clock::now();
      failed_ = true;
      wake_.notify_all();
    }
  }

  void cuda(const char* call, cudaError_t e) const {
    if (e != cudaSuccess)
      throw CommError("NCCL group " + name_ + ": " + call + " failed: " + cudaGetErrorString(e));
  }
  void nccl(const char* call, ncclResult_t r) const {
    if (r != ncclSuccess) throw CommError("NCCL group " + name_ + ": " + call + " failed: " + ncclGetErrorString(r));
  }

  friend class NcclWork;

  GlooWorld& world_;
  std::string name_;
  std::vector<int64_t> members_;
  int rank_, device_;
  std::chrono::milliseconds timeout_;
  std::mutex comm_mutex_;  // guards comm_ between the caller's NCCL calls and the watchdog's abort
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;
  std::vector<QueuedSend> queued_sends_;
  double busy_s_ = 0;

  std::mutex mutex_;  // guards outstanding_, failure_, failed_at_, reported_, stop_
  std::condition_variable wake_;
  std::deque<Outstanding> outstanding_;
  std::atomic<bool> failed_{false};
  bool reported_ = false, stop_ = false;
  std::string failure_;
  Clock::time_point failed_at_;
  std::thread watchdog_;
};

void NcclWork::wait() {
  if (waited_) return;
  waited_ = true;
  owner_.wait_on_compute(done_);
}

}  // namespace

int cuda_device_count(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (why) *why = cudaGetErrorString(e);
    return 0;
  }
  if (count == 0 && why) *why = "no CUDA device is visible";
  return count;
}

std::unique_ptr<Communicator> make_nccl_group(GlooWorld& world, const std::string& name,
                                              const std::vector<int64_t>& members, int device) {
  int group_rank = -1;
  for (size_t i = 0; i < members.size(); ++i)
    if (members[i] == world.rank()) group_rank = static_cast<int>(i);
  if (group_rank < 0)
    throw std::invalid_argument("rank " + std::to_string(world.rank()) + " is not a member of group " + name);
  std::string why;
  const int devices = cuda_device_count(&why);
  if (devices == 0)
    throw CommError("rank " + std::to_string(world.rank()) + ": NCCL group " + name + " needs a CUDA GPU: " + why);
  if (device < 0 || device >= devices)
    throw CommError("rank " + std::to_string(world.rank()) + ": NCCL group " + name + ": CUDA device " +
                    std::to_string(device) + " does not exist (" + std::to_string(devices) + " visible)");
  return std::make_unique<NcclCommunicator>(world, name, members, group_rank, device);
}

}  // namespace tessera::runtime
