// The CPU emulation of CUDA launches, barriers, warp shuffles and device memory (see cuda_emu.hpp).
#include "cuda_emu.hpp"

#include <sys/mman.h>
#include <ucontext.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <vector>

namespace tessera::kernels::emu {

namespace {

// ---- errors: what cudaGetLastError returns next, with the detail that cudaGetErrorString gives ----

thread_local cudaError_t last_error = cudaSuccess;
thread_local std::string last_detail;

void fail(cudaError_t error, std::string detail) {
  if (last_error != cudaSuccess) return;  // the first error stays, as on a device
  last_error = error;
  last_detail = std::move(detail);
}

[[noreturn]] void misuse(const char* what) {
  std::fprintf(stderr, "CUDA emulator: %s\n", what);
  std::abort();
}

// ---- device memory: host memory between two guard zones ----

constexpr size_t kGuardBytes = 256;  // also keeps the data 256-byte aligned, as cudaMalloc does
constexpr unsigned char kGuardByte = 0xa5, kFreshByte = 0xff;

struct Allocation {
  size_t bytes = 0;
  unsigned char* base = nullptr;  // guard, data, guard
};

std::mutex memory_mutex;
std::map<uintptr_t, Allocation> allocations;  // by the data's address

unsigned char* data_of(const Allocation& a) { return a.base + kGuardBytes; }

// The allocation holding [pointer, pointer + bytes), or nullptr.
const Allocation* find_allocation(const void* pointer, size_t bytes) {
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  auto it = allocations.upper_bound(address);
  if (it == allocations.begin()) return nullptr;
  --it;
  return address + bytes <= it->first + it->second.bytes ? &it->second : nullptr;
}

// Whether both guards are intact; if not, `offset` is the first overwritten guard byte's relative to the
// data (negative: before it), and the guards are restored so that the next launch is not blamed too.
bool check_guards(Allocation& a, int64_t& offset) {
  unsigned char* data = data_of(a);
  bool intact = true;
  for (size_t i = 0; i < kGuardBytes; ++i) {
    if (a.base[i] != kGuardByte) {
      if (intact) offset = static_cast<int64_t>(i) - static_cast<int64_t>(kGuardBytes);
      intact = false;
    }
    if (data[a.bytes + i] != kGuardByte) {
      if (intact) offset = static_cast<int64_t>(a.bytes + i);
      intact = false;
    }
  }
  if (!intact) {
    std::memset(a.base, kGuardByte, kGuardBytes);
    std::memset(data + a.bytes, kGuardByte, kGuardBytes);
  }
  return intact;
}

// ---- execution: the threads of one block as fibers ----

enum class FiberState { Runnable, AtSync, AtShuffle, Done };

struct Fiber {
  ucontext_t context{};
  FiberState state = FiberState::Runnable;
  unsigned thread = 0;
  uint64_t shuffles = 0;  // shuffles done: selects the slot bank, so a fast lane cannot overwrite a slow one's
};

constexpr size_t kStackBytes = 256 * 1024, kStackGuardBytes = 4096;

// Fiber stacks, kept between launches; the lowest page of each is a guard, so an overflow faults.
class Stacks {
 public:
  char* stack(size_t i) {
    while (stacks_.size() <= i) {
      void* p = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) misuse("cannot map a fiber stack");
      mprotect(p, kStackGuardBytes, PROT_NONE);
      stacks_.push_back(static_cast<char*>(p));
    }
    return stacks_[i];
  }
  ~Stacks() {
    for (char* s : stacks_) munmap(s, kStackBytes);
  }

 private:
  std::vector<char*> stacks_;
};

struct BlockRun {
  ucontext_t scheduler{};
  bool random = false;
  std::mt19937_64 rng;
  std::vector<Fiber> fibers;
  std::vector<uint64_t> slots[2];  // shuffle values by thread, two banks
  Fiber* current = nullptr;
  const std::function<void()>* thread = nullptr;
};

std::mutex launch_mutex;  // one launch at a time: __shared__ variables exist once
std::optional<uint64_t> random_seed;  // the random schedule's seed; none: in order
uint64_t launches = 0;

// TESSERA_CUDA_EMU_SCHEDULE=random:SEED (or random) picks the random schedule for the whole process.
const bool schedule_from_environment = [] {
  const char* value = std::getenv("TESSERA_CUDA_EMU_SCHEDULE");
  if (value == nullptr || std::string(value) == "in-order") return true;
  const std::string text = value;
  if (text.rfind("random", 0) != 0 || (text.size() > 6 && text[6] != ':')) {
    std::fprintf(stderr, "TESSERA_CUDA_EMU_SCHEDULE=%s: expected in-order, random or random:SEED\n", value);
    std::exit(2);
  }
  random_seed = text.size() > 7 ? std::strtoull(text.c_str() + 7, nullptr, 10) : 1;
  return true;
}();
Stacks stacks;
thread_local BlockRun* active = nullptr;

void fiber_main() {
  (*active->thread)();
  active->current->state = FiberState::Done;  // uc_link returns to the scheduler
}

void wait_as(FiberState state) {
  if (active == nullptr) misuse("__syncthreads or a warp shuffle outside a kernel");
  Fiber* self = active->current;
  self->state = state;
  swapcontext(&self->context, &active->scheduler);
}

std::string thread_list(const std::vector<unsigned>& threads) {
  std::string out;
  for (size_t i = 0; i < threads.size() && i < 4; ++i) out += (i ? ", " : "") + std::to_string(threads[i]);
  if (threads.size() > 4) out += " and " + std::to_string(threads.size() - 4) + " more";
  return out;
}

// Sets the fiber to start at fiber_main on its stack and to return to the scheduler. (Apart from the
// loop over threads: getcontext returns twice as far as the compiler knows.)
[[gnu::noinline]] void start_fiber(Fiber& f, char* stack, ucontext_t* scheduler) {
  f.state = FiberState::Runnable;
  f.shuffles = 0;
  getcontext(&f.context);
  f.context.uc_stack.ss_sp = stack + kStackGuardBytes;
  f.context.uc_stack.ss_size = kStackBytes - kStackGuardBytes;
  f.context.uc_link = scheduler;
  makecontext(&f.context, fiber_main, 0);
}

// Runs block `block` to its end; returns an empty string, or what went wrong. In order, runnable fibers
// wait in a queue and each runs in turn (thread order at first). Under the random schedule each thread
// gets a random priority (drawn again at every __syncthreads) and the runnable one with the highest
// priority runs next: some threads run far ahead of others, which is what shows a missing barrier (a
// uniformly random pick keeps every warp at about the same pace). A warp whose lanes all wait at a
// shuffle becomes runnable at once; when nothing is runnable the block is at __syncthreads (all go
// on), finished, or stuck (an error).
std::string run_block(BlockRun& run, unsigned block) {
  blockIdx = {block, 0, 0};
  const unsigned threads = static_cast<unsigned>(run.fibers.size());
  std::vector<uint64_t> priority(threads, 0);
  auto draw_priorities = [&] {
    for (auto& p : priority) p = run.rng();
  };
  std::deque<unsigned> queue;                                 // in order
  std::priority_queue<std::pair<uint64_t, unsigned>> ranked;  // random
  auto make_runnable = [&](unsigned t) {
    run.fibers[t].state = FiberState::Runnable;
    if (run.random)
      ranked.push({priority[t], t});
    else
      queue.push_back(t);
  };
  if (run.random) draw_priorities();
  for (unsigned t = 0; t < threads; ++t) {
    start_fiber(run.fibers[t], stacks.stack(t), &run.scheduler);
    make_runnable(t);
  }
  const std::string where = "block " + std::to_string(block);
  for (;;) {
    while (!queue.empty() || !ranked.empty()) {
      unsigned t;
      if (run.random) {
        t = ranked.top().second;
        ranked.pop();
      } else {
        t = queue.front();
        queue.pop_front();
      }
      Fiber& f = run.fibers[t];
      run.current = &f;
      threadIdx = {f.thread, 0, 0};
      swapcontext(&run.scheduler, &f.context);
      if (f.state != FiberState::AtShuffle) continue;
      const unsigned first = t & ~31u, last = std::min(threads, first + 32);
      bool whole_warp = true;
      for (unsigned lane = first; lane < last; ++lane) whole_warp &= run.fibers[lane].state == FiberState::AtShuffle;
      if (!whole_warp) continue;
      for (unsigned lane = first; lane < last; ++lane) make_runnable(lane);
    }
    for (unsigned warp = 0; warp * 32 < threads; ++warp) {
      const unsigned first = warp * 32, last = std::min(threads, first + 32);
      std::vector<unsigned> waiting, elsewhere;
      for (unsigned t = first; t < last; ++t)
        (run.fibers[t].state == FiberState::AtShuffle ? waiting : elsewhere).push_back(t);
      if (!waiting.empty())
        return where + ", warp " + std::to_string(warp) + ": threads " + thread_list(waiting) +
               " wait at a warp shuffle that threads " + thread_list(elsewhere) + " did not reach";
    }
    std::vector<unsigned> at_sync, done;
    for (const Fiber& f : run.fibers) (f.state == FiberState::AtSync ? at_sync : done).push_back(f.thread);
    if (at_sync.empty()) return {};
    if (!done.empty())
      return where + ": threads " + thread_list(at_sync) + " wait at __syncthreads, which threads " + thread_list(done) +
             " finished without reaching";
    if (run.random) draw_priorities();
    for (unsigned t = 0; t < threads; ++t) make_runnable(t);
  }
}

}  // namespace

void run_grid(const char* kernel, int64_t grid, int64_t block, const std::function<void()>& thread) {
  std::lock_guard<std::mutex> lock(launch_mutex);
  if (grid < 1 || grid > 0x7fffffff || block < 1 || block > 1024) {
    fail(cudaErrorInvalidConfiguration, std::string(kernel) + ": " + std::to_string(grid) + " blocks of " +
                                            std::to_string(block) +
                                            " threads (a launch takes 1 to 2^31-1 blocks of 1 to 1024 threads)");
    return;
  }
  BlockRun run;
  run.thread = &thread;
  run.random = random_seed.has_value();
  run.rng.seed(random_seed.value_or(0) * 1000003 + launches++);
  run.fibers.resize(block);
  for (unsigned t = 0; t < block; ++t) run.fibers[t].thread = t;
  run.slots[0].assign(block, 0);
  run.slots[1].assign(block, 0);
  gridDim = {static_cast<unsigned>(grid), 1, 1};
  blockDim = {static_cast<unsigned>(block), 1, 1};
  active = &run;
  for (int64_t b = 0; b < grid; ++b) {
    const std::string error = run_block(run, static_cast<unsigned>(b));
    if (!error.empty()) {
      fail(cudaErrorLaunchFailure, std::string(kernel) + ": " + error);
      break;
    }
  }
  active = nullptr;
  std::lock_guard<std::mutex> memory_lock(memory_mutex);
  for (auto& [address, allocation] : allocations) {
    int64_t offset = 0;
    if (check_guards(allocation, offset)) continue;
    fail(cudaErrorLaunchFailure, std::string(kernel) + ": wrote out of bounds of a " + std::to_string(allocation.bytes) +
                                     "-byte buffer, at byte offset " + std::to_string(offset));
  }
}

void set_schedule(std::optional<uint64_t> seed) {
  std::lock_guard<std::mutex> lock(launch_mutex);
  random_seed = seed;
  launches = 0;
}

void sync_threads() { wait_as(FiberState::AtSync); }

uint64_t shuffle_xor(unsigned mask, uint64_t bits, int lane_mask) {
  if (mask != 0xffffffffu) misuse("only full-warp shuffle masks are emulated");
  if (active == nullptr) misuse("a warp shuffle outside a kernel");
  Fiber* self = active->current;
  auto& bank = active->slots[self->shuffles++ % 2];
  bank[self->thread] = bits;
  wait_as(FiberState::AtShuffle);
  const unsigned source = (self->thread & ~31u) | ((self->thread & 31u) ^ (static_cast<unsigned>(lane_mask) & 31u));
  return source < bank.size() ? bank[source] : bits;
}

}  // namespace tessera::kernels::emu

using namespace tessera::kernels::emu;

cudaError_t cudaGetLastError() {
  const cudaError_t error = last_error;
  last_error = cudaSuccess;
  return error;
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument (emulated)";
    case cudaErrorMemoryAllocation: return "out of memory (emulated)";
    case cudaErrorInvalidConfiguration: return last_detail.empty() ? "invalid configuration argument" : last_detail.c_str();
    case cudaErrorLaunchFailure: return last_detail.empty() ? "unspecified launch failure" : last_detail.c_str();
  }
  return "unknown error (emulated)";
}

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() { return last_error; }

cudaError_t cudaMalloc(void** pointer, size_t bytes) {
  const size_t total = (2 * kGuardBytes + bytes + kGuardBytes - 1) / kGuardBytes * kGuardBytes;
  auto* base = static_cast<unsigned char*>(std::aligned_alloc(kGuardBytes, total));
  if (base == nullptr) return cudaErrorMemoryAllocation;
  Allocation a{bytes, base};
  std::memset(base, kGuardByte, kGuardBytes);
  std::memset(data_of(a), kFreshByte, bytes);
  std::memset(data_of(a) + bytes, kGuardByte, kGuardBytes);
  std::lock_guard<std::mutex> lock(memory_mutex);
  allocations[reinterpret_cast<uintptr_t>(data_of(a))] = a;
  *pointer = data_of(a);
  return cudaSuccess;
}

cudaError_t cudaFree(void* pointer) {
  if (pointer == nullptr) return cudaSuccess;
  std::lock_guard<std::mutex> lock(memory_mutex);
  auto it = allocations.find(reinterpret_cast<uintptr_t>(pointer));
  if (it == allocations.end()) return cudaErrorInvalidValue;
  std::free(it->second.base);
  allocations.erase(it);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* to, const void* from, size_t bytes, cudaMemcpyKind kind) {
  {
    std::lock_guard<std::mutex> lock(memory_mutex);
    const bool to_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    const bool from_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (bytes > 0 && ((to_device && !find_allocation(to, bytes)) || (from_device && !find_allocation(from, bytes))))
      return cudaErrorInvalidValue;
  }
  if (bytes > 0) std::memmove(to, from, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemset(void* to, int value, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(memory_mutex);
    if (bytes > 0 && !find_allocation(to, bytes)) return cudaErrorInvalidValue;
  }
  if (bytes > 0) std::memset(to, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaMallocAsync(void** pointer, size_t bytes, cudaStream_t) { return cudaMalloc(pointer, bytes); }
cudaError_t cudaFreeAsync(void* pointer, cudaStream_t) { return cudaFree(pointer); }
cudaError_t cudaMemcpyAsync(void* to, const void* from, size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy(to, from, bytes, kind);
}
cudaError_t cudaMemsetAsync(void* to, int value, size_t bytes, cudaStream_t) { return cudaMemset(to, value, bytes); }
