// CPU references of the vocab-parallel cross-entropy pieces (max, sum-exp with target, loss, backward).
#include <cmath>
#include <limits>

#include "kernels.hpp"

namespace tessera::kernels::cpu {

template <typename T>
void vocab_shard_max(const T* logits, float* row_max, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, to_float(logits[r * cols + c]));
    row_max[r] = m;
  }
}

template <typename T>
void vocab_shard_sumexp(const T* logits, const float* global_max, const int64_t* targets, int64_t shard_start,
                        float* row_sumexp, float* target_logit, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(static_cast<double>(to_float(logits[r * cols + c])) - global_max[r]);
    row_sumexp[r] = static_cast<float>(sum);
    const int64_t local = targets[r] - shard_start;
    target_logit[r] = (local >= 0 && local < cols) ? to_float(logits[r * cols + local]) : 0.0f;
  }
}

void vocab_loss(const float* global_max, const float* global_sumexp, const float* target_logit, float* loss, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r)
    loss[r] = static_cast<float>(std::log(static_cast<double>(global_sumexp[r])) + global_max[r] - target_logit[r]);
}

template <typename T>
void vocab_shard_backward(const T* logits, const float* global_max, const float* global_sumexp, const int64_t* targets,
                          int64_t shard_start, const float* dloss, T* dlogits, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t local = targets[r] - shard_start;
    for (int64_t c = 0; c < cols; ++c) {
      const double p = std::exp(static_cast<double>(to_float(logits[r * cols + c])) - global_max[r]) / global_sumexp[r];
      dlogits[r * cols + c] = from_float<T>(static_cast<float>((p - (c == local ? 1.0 : 0.0)) * dloss[r]));
    }
  }
}

#define INSTANTIATE(T)                                                                                              \
  template void vocab_shard_max<T>(const T*, float*, int64_t, int64_t);                                             \
  template void vocab_shard_sumexp<T>(const T*, const float*, const int64_t*, int64_t, float*, float*, int64_t,    \
                                      int64_t);                                                                    \
  template void vocab_shard_backward<T>(const T*, const float*, const float*, const int64_t*, int64_t, const float*, \
                                        T*, int64_t, int64_t);
INSTANTIATE(float)
INSTANTIATE(bf16)
#undef INSTANTIATE

}  // namespace tessera::kernels::cpu
