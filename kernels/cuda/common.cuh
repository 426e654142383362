// Shared pieces of the CUDA kernels: element types, conversions, block reductions, error checks.
#pragma once

#ifdef TESSERA_CUDA_EMULATION
#include "emu/cuda_emu.hpp"
#else
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#endif

#include <stdexcept>
#include <string>

#include "kernels.hpp"

namespace tessera::kernels::cuda::detail {

template <typename T> struct DeviceType { using type = T; };
template <> struct DeviceType<bf16> { using type = __nv_bfloat16; };
template <typename T> using device_t = typename DeviceType<T>::type;

template <typename T>
device_t<T>* dev(T* p) { return reinterpret_cast<device_t<T>*>(p); }
template <typename T>
const device_t<T>* dev(const T* p) { return reinterpret_cast<const device_t<T>*>(p); }

__device__ inline float load(float x) { return x; }
__device__ inline float load(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ inline T store(float x);
template <> __device__ inline float store<float>(float x) { return x; }
template <> __device__ inline __nv_bfloat16 store<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

inline cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}
inline void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

// TESSERA_LAUNCH(grid, block, stream, kernel)(args...) is kernel<<<grid, block, 0, stream>>>(args...)
// (the kernel last, so that a template's arguments may hold commas), and under the CPU emulator
// (kernels/emu) the same launch run on the host.
#ifdef TESSERA_CUDA_EMULATION
#define TESSERA_LAUNCH(grid, block, stream, ...) \
  ::tessera::kernels::emu::Launch(#__VA_ARGS__, (grid), (block), [](auto... args) { __VA_ARGS__(args...); })
#else
#define TESSERA_LAUNCH(grid, block, stream, ...) __VA_ARGS__<<<(grid), (block), 0, (stream)>>>
#endif

// Scratch memory for one call, in stream order (kernels.hpp, set_scratch_allocator; scratch.cu); freed on
// scope exit.
class Scratch {
 public:
  Scratch(size_t bytes, cudaStream_t stream, const char* what);
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(pointer_);
  }

 private:
  void* pointer_ = nullptr;
  cudaStream_t stream_;
  void (*release_)(void*, void*) = nullptr;  // the allocator's that gave pointer_ (none: cudaFreeAsync)
};

constexpr int kBlock = 256;

__device__ inline float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum (or max) over the block; every thread gets the result. blockDim.x must be a multiple of 32.
template <bool Max>
__device__ inline float block_reduce(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = Max ? warp_max(v) : warp_sum(v);
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const unsigned warps = blockDim.x / 32;
  float r = threadIdx.x < warps ? partial[threadIdx.x] : (Max ? -INFINITY : 0.0f);
  if (warp == 0) r = Max ? warp_max(r) : warp_sum(r);
  if (threadIdx.x == 0) partial[0] = r;
  __syncthreads();
  return partial[0];
}

// The most blocks a grid-stride launch takes. Under the emulator far fewer, so that the checks' shapes
// run the stride loops' later rounds too (on a GPU they start past half a million blocks).
#ifdef TESSERA_CUDA_EMULATION
constexpr int64_t kMaxBlocks = 7;
#else
constexpr int64_t kMaxBlocks = 65535 * 8;
#endif

inline unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// Row chunks, for elementwise kernels over rows: a block takes (row, chunk of kChunkCols columns) pairs
// in turn and its threads stride over the chunk's columns, so that no thread divides a flat index into
// row and column per element (a 64-bit division is a long instruction sequence on the GPU, longer than
// the memory access it would serve) — one division per pair. In a kernel:
//   for (int64_t pair = blockIdx.x; pair < row_chunk_pairs(rows, cols); pair += gridDim.x) {
//     const RowChunk chunk = row_chunk(pair, cols);
//     for (int64_t c = chunk.first + threadIdx.x; c < chunk.end; c += blockDim.x) ... chunk.row, c ...
constexpr int64_t kChunkCols = 4 * kBlock;

__host__ __device__ inline int64_t row_chunk_pairs(int64_t rows, int64_t cols) {
  return rows * ((cols + kChunkCols - 1) / kChunkCols);
}

inline unsigned row_chunk_grid(int64_t rows, int64_t cols) {
  const int64_t pairs = row_chunk_pairs(rows, cols);
  return static_cast<unsigned>(pairs < kMaxBlocks ? pairs : kMaxBlocks);
}

struct RowChunk {
  int64_t row, first, end;  // columns [first, end) of row
};

__device__ inline RowChunk row_chunk(int64_t pair, int64_t cols) {
  const int64_t chunks = (cols + kChunkCols - 1) / kChunkCols;
  const int64_t row = pair / chunks, first = (pair - row * chunks) * kChunkCols;
  return {row, first, first + kChunkCols < cols ? first + kChunkCols : cols};
}

// Column tiles, for gradients summed over rows (a bias's, a norm weight's): block b covers kBlock
// consecutive columns (one per thread: coalesced) of kTileRows consecutive rows, sums its column over
// them in a register and adds that with one atomic — rows / kTileRows atomics per column instead of
// one per element, which would queue every row of a column on one address.
constexpr int64_t kTileRows = 64;

inline unsigned column_tile_grid(int64_t rows, int64_t cols) {
  return static_cast<unsigned>(((cols + kBlock - 1) / kBlock) * ((rows + kTileRows - 1) / kTileRows));
}

struct ColumnTile {
  int64_t column, first_row, end_row;  // column >= cols: this thread has no column
};

__device__ inline ColumnTile column_tile(int64_t rows, int64_t cols) {
  const int64_t tiles = (cols + blockDim.x - 1) / blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x / tiles) * kTileRows;
  return {static_cast<int64_t>(blockIdx.x % tiles) * blockDim.x + threadIdx.x, first,
          first + kTileRows < rows ? first + kTileRows : rows};
}

}  // namespace tessera::kernels::cuda::detail
