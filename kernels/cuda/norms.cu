// CUDA LayerNorm and RMSNorm, forward and backward: one block per row, fp32 statistics; weight
// gradients accumulated with atomics across rows.
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
__global__ void layernorm_backward_kernel(const D* dy, const D* x, const float* w, const float* mean, const float* rstd,
                                          D* dx, float* dw, float* db, int64_t cols) {
  const int64_t row = blockIdx.x;
  const float mu = mean[row], rs = rstd[row];
  float sg = 0, sgx = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float xhat = (load(x[row * cols + c]) - mu) * rs;
    const float d = load(dy[row * cols + c]);
    const float g = d * w[c];
    sg += g;
    sgx += g * xhat;
    atomicAdd(&dw[c], d * xhat);
    atomicAdd(&db[c], d);
  }
  const float mean_g = block_reduce<false>(sg) / static_cast<float>(cols);
  const float mean_gx = block_reduce<false>(sgx) / static_cast<float>(cols);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float xhat = (load(x[row * cols + c]) - mu) * rs;
    const float g = load(dy[row * cols + c]) * w[c];
    dx[row * cols + c] = store<D>(rs * (g - mean_g - xhat * mean_gx));
  }
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

template <typename D>
__global__ void rmsnorm_backward_kernel(const D* dy, const D* x, const float* w, const float* rstd, D* dx, float* dw,
                                        int64_t cols) {
  const int64_t row = blockIdx.x;
  const float rs = rstd[row];
  float sgx = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float xhat = load(x[row * cols + c]) * rs;
    const float d = load(dy[row * cols + c]);
    sgx += d * w[c] * xhat;
    atomicAdd(&dw[c], d * xhat);
  }
  const float mean_gx = block_reduce<false>(sgx) / static_cast<float>(cols);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float xhat = load(x[row * cols + c]) * rs;
    dx[row * cols + c] = store<D>(rs * (load(dy[row * cols + c]) * w[c] - xhat * mean_gx));
  }
}

}  // namespace

template <typename T>
void layernorm_forward(const T* x, const float* weight, const float* bias, T* y, float* mean, float* rstd, int64_t rows,
                       int64_t cols, float eps, void* stream) {
  if (rows == 0) return;
  TESSERA_LAUNCH(layernorm_forward_kernel, rows, kBlock, as_stream(stream))(
      dev(x), weight, bias, dev(y), mean, rstd, cols, eps);
  check_launch("layernorm_forward");
}

template <typename T>
void layernorm_backward(const T* dy, const T* x, const float* weight, const float* mean, const float* rstd, T* dx,
                        float* dweight, float* dbias, int64_t rows, int64_t cols, void* stream) {
  check(cudaMemsetAsync(dweight, 0, cols * sizeof(float), as_stream(stream)), "layernorm_backward");
  check(cudaMemsetAsync(dbias, 0, cols * sizeof(float), as_stream(stream)), "layernorm_backward");
  if (rows == 0) return;
  TESSERA_LAUNCH(layernorm_backward_kernel, rows, kBlock, as_stream(stream))(
      dev(dy), dev(x), weight, mean, rstd, dev(dx), dweight, dbias, cols);
  check_launch("layernorm_backward");
}

template <typename T>
void rmsnorm_forward(const T* x, const float* weight, T* y, float* rstd, int64_t rows, int64_t cols, float eps, void* stream) {
  if (rows == 0) return;
  TESSERA_LAUNCH(rmsnorm_forward_kernel, rows, kBlock, as_stream(stream))(dev(x), weight, dev(y), rstd, cols, eps);
  check_launch("rmsnorm_forward");
}

template <typename T>
void rmsnorm_backward(const T* dy, const T* x, const float* weight, const float* rstd, T* dx, float* dweight, int64_t rows,
                      int64_t cols, void* stream) {
  check(cudaMemsetAsync(dweight, 0, cols * sizeof(float), as_stream(stream)), "rmsnorm_backward");
  if (rows == 0) return;
  TESSERA_LAUNCH(rmsnorm_backward_kernel, rows, kBlock, as_stream(stream))(
      dev(dy), dev(x), weight, rstd, dev(dx), dweight, cols);
  check_launch("rmsnorm_backward");
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
