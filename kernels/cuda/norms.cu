// CUDA LayerNorm and RMSNorm, forward and backward: one block per row, fp32 statistics. The backward
// takes two launches: the two row sums that dx needs (one block per row), then dx and the weight (and
// bias) gradients over column tiles (common.cuh), each tile summing its rows before one atomic.
#include "common.cuh"

namespace tessera::kernels::cuda {

using namespace detail;

namespace {

template <typename D>
__global__ void layernorm_forward_kernel(const D* x, const float* w, const float* b, D* y, float* mean, float* rstd,
                                         int64_t cols, float eps) {
  const int64_t row = blockIdx.x;
  const D* xr = x + row * cols;
  float sum = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += load(xr[c]);
  const float mu = block_reduce<false>(sum) / static_cast<float>(cols);
  float sq = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float d = load(xr[c]) - mu;
    sq += d * d;
  }
  const float rs = rsqrtf(block_reduce<false>(sq) / static_cast<float>(cols) + eps);
  if (threadIdx.x == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) y[row * cols + c] = store<D>((load(xr[c]) - mu) * rs * w[c] + b[c]);
}

template <typename D>
__global__ void rmsnorm_forward_kernel(const D* x, const float* w, D* y, float* rstd, int64_t cols, float eps) {
  const int64_t row = blockIdx.x;
  float sq = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = load(x[row * cols + c]);
    sq += v * v;
  }
  const float rs = rsqrtf(block_reduce<false>(sq) / static_cast<float>(cols) + eps);
  if (threadIdx.x == 0) rstd[row] = rs;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) y[row * cols + c] = store<D>(load(x[row * cols + c]) * rs * w[c]);
}

// Centered: LayerNorm (xhat = (x - mean) * rstd), else RMSNorm (xhat = x * rstd, no mean, no bias).
// sums[2 row] = mean over the row of dy·w, sums[2 row + 1] = mean of dy·w·xhat.
template <typename D, bool Centered>
__global__ void norm_backward_row_sums_kernel(const D* dy, const D* x, const float* w, const float* mean,
                                              const float* rstd, float* sums, int64_t cols) {
  const int64_t row = blockIdx.x;
  const float mu = Centered ? mean[row] : 0.0f, rs = rstd[row];
  float sg = 0, sgx = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float g = load(dy[row * cols + c]) * w[c];
    sg += g;
    sgx += g * (load(x[row * cols + c]) - mu) * rs;
  }
  sg = Centered ? block_reduce<false>(sg) : 0.0f;
  sgx = block_reduce<false>(sgx);
  if (threadIdx.x == 0) {
    sums[2 * row] = sg / static_cast<float>(cols);
    sums[2 * row + 1] = sgx / static_cast<float>(cols);
  }
}

// dx = rstd · (dy·w − mean(dy·w) − xhat · mean(dy·w·xhat)) (RMSNorm: without the middle term);
// dw = Σ_rows dy·xhat, db = Σ_rows dy.
template <typename D, bool Centered>
__global__ void norm_backward_tiles_kernel(const D* dy, const D* x, const float* w, const float* mean, const float* rstd,
                                           const float* sums, D* dx, float* dw, float* db, int64_t rows, int64_t cols) {
  const ColumnTile tile = column_tile(rows, cols);
  const int64_t c = tile.column;
  if (c >= cols) return;
  const float wc = w[c];
  float dw_sum = 0, db_sum = 0;
  for (int64_t row = tile.first_row; row < tile.end_row; ++row) {
    const int64_t i = row * cols + c;
    const float rs = rstd[row];
    const float xhat = (load(x[i]) - (Centered ? mean[row] : 0.0f)) * rs;
    const float d = load(dy[i]);
    dw_sum += d * xhat;
    db_sum += d;
    dx[i] = store<D>(rs * (d * wc - (Centered ? sums[2 * row] : 0.0f) - xhat * sums[2 * row + 1]));
  }
  atomicAdd(&dw[c], dw_sum);
  if (Centered) atomicAdd(&db[c], db_sum);
}

template <bool Centered, typename T>
void norm_backward(const T* dy, const T* x, const float* weight, const float* mean, const float* rstd, T* dx,
                   float* dweight, float* dbias, int64_t rows, int64_t cols, void* stream) {
  const cudaStream_t s = as_stream(stream);
  const char* name = Centered ? "layernorm_backward" : "rmsnorm_backward";
  check(cudaMemsetAsync(dweight, 0, cols * sizeof(float), s), name);
  if (Centered) check(cudaMemsetAsync(dbias, 0, cols * sizeof(float), s), name);
  if (rows == 0 || cols == 0) return;
  using D = device_t<T>;
  const Scratch sums(2 * rows * sizeof(float), s, name);
  TESSERA_LAUNCH(rows, kBlock, s, norm_backward_row_sums_kernel<D, Centered>)(
      dev(dy), dev(x), weight, mean, rstd, sums.as<float>(), cols);
  check_launch(name);
  TESSERA_LAUNCH(column_tile_grid(rows, cols), kBlock, s, norm_backward_tiles_kernel<D, Centered>)(
      dev(dy), dev(x), weight, mean, rstd, sums.as<const float>(), dev(dx), dweight, dbias, rows, cols);
  check_launch(name);
}

}  // namespace

template <typename T>
void layernorm_forward(const T* x, const float* weight, const float* bias, T* y, float* mean, float* rstd, int64_t rows,
                       int64_t cols, float eps, void* stream) {
  if (rows == 0) return;
  TESSERA_LAUNCH(rows, kBlock, as_stream(stream), layernorm_forward_kernel)(
      dev(x), weight, bias, dev(y), mean, rstd, cols, eps);
  check_launch("layernorm_forward");
}

template <typename T>
void layernorm_backward(const T* dy, const T* x, const float* weight, const float* mean, const float* rstd, T* dx,
                        float* dweight, float* dbias, int64_t rows, int64_t cols, void* stream) {
  norm_backward<true>(dy, x, weight, mean, rstd, dx, dweight, dbias, rows, cols, stream);
}

template <typename T>
void rmsnorm_forward(const T* x, const float* weight, T* y, float* rstd, int64_t rows, int64_t cols, float eps, void* stream) {
  if (rows == 0) return;
  TESSERA_LAUNCH(rows, kBlock, as_stream(stream), rmsnorm_forward_kernel)(dev(x), weight, dev(y), rstd, cols, eps);
  check_launch("rmsnorm_forward");
}

template <typename T>
void rmsnorm_backward(const T* dy, const T* x, const float* weight, const float* rstd, T* dx, float* dweight, int64_t rows,
                      int64_t cols, void* stream) {
  norm_backward<false>(dy, x, weight, nullptr, rstd, dx, dweight, nullptr, rows, cols, stream);
}

#define INSTANTIATE(T)                                                                                          \
  template void layernorm_forward<T>(const T*, const float*, const float*, T*, float*, float*, int64_t, int64_t, \
                                     float, void*);                                                             \
  template void layernorm_backward<T>(const T*, const T*, const float*, const float*, const float*, T*, float*,  \
                                      float*, int64_t, int64_t, void*);                                         \
  template void rmsnorm_forward<T>(const T*, const float*, T*, float*, int64_t, int64_t, float, void*);         \
  template void rmsnorm_backward<T>(const T*, const T*, const float*, const float*, T*, float*, int64_t, int64_t, \
                                    void*);
INSTANTIATE(float)
INSTANTIATE(bf16)
#undef INSTANTIATE

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return count;
}

}  // namespace tessera::kernels::cuda
