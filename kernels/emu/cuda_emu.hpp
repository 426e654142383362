// The CUDA subset that kernels/cuda uses, emulated on the CPU, so that the CUDA kernels themselves (not
// only their CPU references) run and are tested on machines without a GPU. Compiling a .cu file as C++
// with TESSERA_CUDA_EMULATION defined makes common.cuh include this header instead of the CUDA ones.
//
// Execution model (cuda_emu.cpp): the blocks of a launch run one after another; the threads of a block
// run as fibers on the calling thread, each until it finishes or reaches __syncthreads or a warp shuffle,
// where it waits for the others; in thread order, or in a random order from a seed (set_schedule). A barrier that not every thread of the block (or lane of the warp)
// reaches is reported as a launch error naming the block and thread, never a hang. Memory from
// cudaMalloc is host memory filled with 0xff bytes (NaN for fp32 and bf16, so reads of unwritten memory
// show), with guard bytes on both sides that are checked after every launch: a kernel that writes out
// of bounds fails its launch. Streams are ignored (everything is synchronous). Not emulated: reads out
// of bounds, partial-warp masks; races only show in the orders the schedule happens to run, and lost
// updates never (blocks run in turn, a thread runs uninterrupted between barriers: a missing atomicAdd
// passes); __shared__ is a zero-initialised static kept between blocks (stale reads are not flagged).
//
// Never link this library into a program with the real CUDA kernels: both define tessera::kernels::cuda.
#pragma once

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <type_traits>

#include "bf16.hpp"

#define __global__
#define __device__
#define __host__
#define __shared__ static  // one block runs at a time, so one copy serves every block

using __nv_bfloat16 = tessera::kernels::bf16;
inline float __bfloat162float(__nv_bfloat16 x) { return static_cast<float>(x); }
inline __nv_bfloat16 __float2bfloat16_rn(float x) { return __nv_bfloat16(x); }

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
inline thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorLaunchFailure = 719,
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};
struct CUstream_st;
using cudaStream_t = CUstream_st*;

namespace tessera::kernels::emu {

/// Runs `thread` once for each of block threads in each of grid blocks, as described above; sets the
/// error that cudaGetLastError returns (invalid configuration, a divergent barrier, an out-of-bounds
/// write named with the kernel).
void run_grid(const char* kernel, int64_t grid, int64_t block, const std::function<void()>& thread);

/// The order in which a block's waiting threads run: in order (no seed; the default) or, with a seed, by
/// random priorities, reproducible from the seed — races that one order hides show under others. The
/// environment can set it for a whole process: TESSERA_CUDA_EMU_SCHEDULE=in-order | random | random:SEED.
void set_schedule(std::optional<uint64_t> random_seed);

void sync_threads();
uint64_t shuffle_xor(unsigned mask, uint64_t bits, int lane_mask);

/// What TESSERA_LAUNCH(grid, block, stream, kernel)(args...) builds under emulation.
template <typename Body>
class Launch {
 public:
  Launch(const char* kernel, int64_t grid, int64_t block, Body body)
      : kernel_(kernel), grid_(grid), block_(block), body_(body) {}
  template <typename... Args>
  void operator()(Args... args) const {
    run_grid(kernel_, grid_, block_, [&] { body_(args...); });
  }

 private:
  const char* kernel_;
  int64_t grid_, block_;
  Body body_;
};

}  // namespace tessera::kernels::emu

inline void __syncthreads() { tessera::kernels::emu::sync_threads(); }

template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(uint64_t), "shuffles of up to 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = tessera::kernels::emu::shuffle_xor(mask, bits, lane_mask);
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

template <typename T>
T atomicAdd(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_add(value);
}

inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }

cudaError_t cudaGetLastError();
const char* cudaGetErrorString(cudaError_t error);
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaMalloc(void** pointer, size_t bytes);
template <typename T>
cudaError_t cudaMalloc(T** pointer, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(pointer), bytes);
}
cudaError_t cudaFree(void* pointer);
cudaError_t cudaMemcpy(void* to, const void* from, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemset(void* to, int value, size_t bytes);
cudaError_t cudaMallocAsync(void** pointer, size_t bytes, cudaStream_t stream);
cudaError_t cudaFreeAsync(void* pointer, cudaStream_t stream);
cudaError_t cudaMemcpyAsync(void* to, const void* from, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemsetAsync(void* to, int value, size_t bytes, cudaStream_t stream);
