// Fused training kernels on raw pointers. Every kernel exists twice with the same arguments:
// tessera::kernels::cpu (the reference, always built and tested) and tessera::kernels::cuda (built
// when nvcc is found, for sm_80 and sm_90; the CUDA versions take a trailing stream). T is float
// or bf16; statistics, norm weights and optimizer state are fp32. Layouts are row-major.
#pragma once

#include <cstddef>
#include <cstdint>

#include "bf16.hpp"

namespace tessera::kernels {

/// One tensor of a multi-tensor AdamW step: fp32 master weights and moments, fp32 gradient,
/// and the model's copy of the weights in T (may alias master when T is float).
template <typename T>
struct AdamWTensor {
  float* master = nullptr;
  T* model = nullptr;
  const float* grad = nullptr;
  float* exp_avg = nullptr;
  float* exp_avg_sq = nullptr;
  int64_t numel = 0;
};

struct AdamWConfig {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.0f;
  int64_t step = 1;  ///< 1-based, for the bias corrections
  /// Every gradient is multiplied by this as it is read: gradient clipping's max_norm / norm without a
  /// pass of its own over the gradients.
  float grad_scale = 1.0f;
};

#define TESSERA_KERNEL_DECLARATIONS(EXTRA_PARAM)                                                                     \
  /* LayerNorm over the last dimension of x[rows, cols]; mean and rstd per row are saved for backward. */          \
  template <typename T>                                                                                               \
  void layernorm_forward(const T* x, const float* weight, const float* bias, T* y, float* mean, float* rstd,          \
                         int64_t rows, int64_t cols, float eps EXTRA_PARAM);                                          \
  /* dweight and dbias are overwritten (summed over rows). */                                                         \
  template <typename T>                                                                                               \
  void layernorm_backward(const T* dy, const T* x, const float* weight, const float* mean, const float* rstd, T* dx,  \
                          float* dweight, float* dbias, int64_t rows, int64_t cols EXTRA_PARAM);                      \
  template <typename T>                                                                                               \
  void rmsnorm_forward(const T* x, const float* weight, T* y, float* rstd, int64_t rows, int64_t cols,                \
                       float eps EXTRA_PARAM);                                                                        \
  template <typename T>                                                                                               \
  void rmsnorm_backward(const T* dy, const T* x, const float* weight, const float* rstd, T* dx, float* dweight,       \
                        int64_t rows, int64_t cols EXTRA_PARAM);                                                      \
  /* Vocab-parallel cross-entropy on a shard logits[rows, cols] of the vocabulary starting at shard_start.           \
     1: row maxima of the shard (all-reduce MAX them across the TP group). */                                         \
  template <typename T>                                                                                               \
  void vocab_shard_max(const T* logits, float* row_max, int64_t rows, int64_t cols EXTRA_PARAM);                      \
  /* 2: sum of exp(logit - global_max) over the shard, and the target's logit when it lies in the shard (else 0);   \
     all-reduce SUM both. */                                                                                          \
  template <typename T>                                                                                               \
  void vocab_shard_sumexp(const T* logits, const float* global_max, const int64_t* targets, int64_t shard_start,     \
                          float* row_sumexp, float* target_logit, int64_t rows, int64_t cols EXTRA_PARAM);            \
  /* 3: loss = log(global_sumexp) + global_max - target_logit per row. */                                             \
  void vocab_loss(const float* global_max, const float* global_sumexp, const float* target_logit, float* loss,       \
                  int64_t rows EXTRA_PARAM);                                                                          \
  /* Backward: dlogits = (softmax - onehot(target)) * dloss[row]. */                                                  \
  template <typename T>                                                                                               \
  void vocab_shard_backward(const T* logits, const float* global_max, const float* global_sumexp,                    \
                            const int64_t* targets, int64_t shard_start, const float* dloss, T* dlogits,              \
                            int64_t rows, int64_t cols EXTRA_PARAM);                                                  \
  /* Rotary embedding of x[tokens, heads, head_dim], pairs (i, i + head_dim/2), angle pos * theta^(-2i/head_dim). */  \
  template <typename T>                                                                                               \
  void rope_forward(const T* x, T* y, const int64_t* positions, int64_t tokens, int64_t heads, int64_t head_dim,     \
                    float theta EXTRA_PARAM);                                                                         \
  template <typename T>                                                                                               \
  void rope_backward(const T* dy, T* dx, const int64_t* positions, int64_t tokens, int64_t heads, int64_t head_dim,  \
                     float theta EXTRA_PARAM);                                                                        \
  /* AdamW with decoupled weight decay on fp32 master weights; writes master, moments and the model copy. */          \
  template <typename T>                                                                                               \
  void adamw_step(const AdamWTensor<T>* tensors, int64_t count, const AdamWConfig& config EXTRA_PARAM);               \
  /* y = gelu_tanh(x + bias[col]) on x[rows, cols]; backward gives dx and dbias (overwritten). */                     \
  template <typename T>                                                                                               \
  void bias_gelu_forward(const T* x, const float* bias, T* y, int64_t rows, int64_t cols EXTRA_PARAM);               \
  template <typename T>                                                                                               \
  void bias_gelu_backward(const T* dy, const T* x, const float* bias, T* dx, float* dbias, int64_t rows,             \
                          int64_t cols EXTRA_PARAM);                                                                  \
  /* y[rows, cols] = silu(gate) * up, where each row of gate_up[rows, 2 cols] is [gate | up] (the MLP's fused      \
     input projection, read in place); backward writes dgate_up[rows, 2 cols] = [dgate | dup]. */                    \
  template <typename T>                                                                                               \
  void swiglu_forward(const T* gate_up, T* y, int64_t rows, int64_t cols EXTRA_PARAM);                                \
  template <typename T>                                                                                               \
  void swiglu_backward(const T* dy, const T* gate_up, T* dgate_up, int64_t rows, int64_t cols EXTRA_PARAM);

#define TESSERA_NO_EXTRA_PARAM
#define TESSERA_STREAM_PARAM , void* stream

namespace cpu {
TESSERA_KERNEL_DECLARATIONS(TESSERA_NO_EXTRA_PARAM)
}  // namespace cpu

/// CUDA versions: `stream` is a cudaStream_t (nullptr = the default stream). Pointers are device
/// pointers, except that adamw_step's descriptor array lives on the host.
namespace cuda {
TESSERA_KERNEL_DECLARATIONS(TESSERA_STREAM_PARAM)
/// Number of CUDA devices visible (0 when there is no driver or no GPU).
int device_count();

/// Where the kernels take their short-lived device scratch (the norms' backward: 8 bytes per row;
/// adamw_step: its table of tensors and chunks), used in stream order on `stream` and returned before
/// the call returns. Default: cudaMallocAsync / cudaFreeAsync. The runtime points it at LibTorch's
/// caching allocator, so that the scratch comes from its cache and counts in its peak.
struct ScratchAllocator {
  void* (*allocate)(size_t bytes, void* stream) = nullptr;  ///< throws on failure
  void (*release)(void* pointer, void* stream) = nullptr;
};
/// Installs `allocator` (both members set) for the process, or the default with ScratchAllocator{}.
void set_scratch_allocator(ScratchAllocator allocator);
}  // namespace cuda

#undef TESSERA_KERNEL_DECLARATIONS
#undef TESSERA_NO_EXTRA_PARAM
#undef TESSERA_STREAM_PARAM

}  // namespace tessera::kernels
