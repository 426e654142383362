// CUDA pieces of the vocab-parallel cross-entropy: one block per row for the reductions,
// an elementwise kernel for the backward.
#include "common.cuh"

namespace tessera::kernels::cuda {

using namespace detail;

namespace {

template <typename D>
__global__ void shard_max_kernel(const D* logits, float* row_max, int64_t cols) {
  const int64_t row = blockIdx.x;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, load(logits[row * cols + c]));
  m = block_reduce<true>(m);
  if (threadIdx.x == 0) row_max[row] = m;
}

template <typename D>
__global__ void shard_sumexp_kernel(const D* logits, const float* global_max, const int64_t* targets, int64_t shard_start,
                                    float* row_sumexp, float* target_logit, int64_t cols) {
  const int64_t row = blockIdx.x;
  const float gmax = global_max[row];
  float sum = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += __expf(load(logits[row * cols + c]) - gmax);
  sum = block_reduce<false>(sum);
  if (threadIdx.x == 0) {
    row_sumexp[row] = sum;
    const int64_t local = targets[row] - shard_start;
    target_logit[row] = (local >= 0 && local < cols) ? load(logits[row * cols + local]) : 0.0f;
  }
}

__global__ void loss_kernel(const float* global_max, const float* global_sumexp, const float* target_logit, float* loss,
                            int64_t rows) {
  for (int64_t r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += gridDim.x * blockDim.x)
    loss[r] = logf(global_sumexp[r]) + global_max[r] - target_logit[r];
}

template <typename D>
__global__ void shard_backward_kernel(const D* logits, const float* global_max, const float* global_sumexp,
                                      const int64_t* targets, int64_t shard_start, const float* dloss, D* dlogits,
                                      int64_t rows, int64_t cols) {
  for (int64_t pair = blockIdx.x; pair < row_chunk_pairs(rows, cols); pair += gridDim.x) {
    const RowChunk chunk = row_chunk(pair, cols);
    const int64_t row = chunk.row, target = targets[row] - shard_start;
    const float row_max = global_max[row], scale = dloss[row] / global_sumexp[row], grad = dloss[row];
    for (int64_t c = chunk.first + threadIdx.x; c < chunk.end; c += blockDim.x) {
      const int64_t i = row * cols + c;
      dlogits[i] = store<D>(__expf(load(logits[i]) - row_max) * scale - (c == target ? grad : 0.0f));
    }
  }
}

}  // namespace

template <typename T>
void vocab_shard_max(const T* logits, float* row_max, int64_t rows, int64_t cols, void* stream) {
  if (rows == 0) return;
  TESSERA_LAUNCH(rows, kBlock, as_stream(stream), shard_max_kernel)(dev(logits), row_max, cols);
  check_launch("vocab_shard_max");
}

template <typename T>
void vocab_shard_sumexp(const T* logits, const float* global_max, const int64_t* targets, int64_t shard_start,
                        float* row_sumexp, float* target_logit, int64_t rows, int64_t cols, void* stream) {
  if (rows == 0) return;
  TESSERA_LAUNCH(rows, kBlock, as_stream(stream), shard_sumexp_kernel)(
      dev(logits), global_max, targets, shard_start, row_sumexp, target_logit, cols);
  check_launch("vocab_shard_sumexp");
}

void vocab_loss(const float* global_max, const float* global_sumexp, const float* target_logit, float* loss, int64_t rows,
                void* stream) {
  if (rows == 0) return;
  TESSERA_LAUNCH(grid_for(rows), kBlock, as_stream(stream), loss_kernel)(
      global_max, global_sumexp, target_logit, loss, rows);
  check_launch("vocab_loss");
}

template <typename T>
void vocab_shard_backward(const T* logits, const float* global_max, const float* global_sumexp, const int64_t* targets,
                          int64_t shard_start, const float* dloss, T* dlogits, int64_t rows, int64_t cols, void* stream) {
  if (rows * cols == 0) return;
  TESSERA_LAUNCH(row_chunk_grid(rows, cols), kBlock, as_stream(stream), shard_backward_kernel)(
      dev(logits), global_max, global_sumexp, targets, shard_start, dloss, dev(dlogits), rows, cols);
  check_launch("vocab_shard_backward");
}

#define INSTANTIATE(T)                                                                                              \
  template void vocab_shard_max<T>(const T*, float*, int64_t, int64_t, void*);                                      \
  template void vocab_shard_sumexp<T>(const T*, const float*, const int64_t*, int64_t, float*, float*, int64_t,    \
                                      int64_t, void*);                                                             \
  template void vocab_shard_backward<T>(const T*, const float*, const float*, const int64_t*, int64_t, const float*, \
                                        T*, int64_t, int64_t, void*);
INSTANTIATE(float)
INSTANTIATE(bf16)
#undef INSTANTIATE

}  // namespace tessera::kernels::cuda
