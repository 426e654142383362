// Tessera's fused kernels (kernels/kernels.hpp) as autograd operations for the model: LayerNorm,
// RMSNorm, RoPE, bias+GELU(tanh), SwiGLU and the vocab-parallel cross-entropy. Each dispatches on
// the input's device: CPU tensors run the CPU references, CUDA tensors the CUDA kernels on the
// current stream (only in builds with tessera_kernels_cuda). Activations may be float or bfloat16;
// norm weights and biases are converted to fp32 for the kernels and their gradients returned in the
// parameter's own dtype. Inputs are made contiguous.
#pragma once

#include <ATen/core/Tensor.h>

#include "runtime/comm/communicator.hpp"

namespace tessera::runtime {

/// LayerNorm over the last dimension of x [..., h]; weight and bias [h]. Saves x, the fp32 weight
/// and the per-row mean and rstd (fp32) for backward.
at::Tensor fused_layer_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps);

/// RMSNorm over the last dimension of x [..., h]; weight [h]. Saves x, the fp32 weight and rstd.
at::Tensor fused_rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

/// Rotary embedding of x [tokens, heads, head_dim] at positions (int64 [tokens]): pairs
/// (i, i + head_dim/2) rotated by pos * theta^(-2i/head_dim), the rotate_half convention. Saves only
/// the positions (the backward is the inverse rotation of the gradient).
at::Tensor fused_rope(const at::Tensor& x, const at::Tensor& positions, double theta);

/// gelu_tanh(x + bias) with x [..., f] and bias [f] (undefined: no bias). Saves x and the fp32 bias.
at::Tensor fused_bias_gelu(const at::Tensor& x, const at::Tensor& bias);

/// silu(gate) * up where gate_up [..., 2f] holds [gate | up] along the last dimension. The kernels
/// read the halves in place; saves gate_up itself (made contiguous if it is not).
at::Tensor fused_swiglu(const at::Tensor& gate_up);

/// Per-token cross-entropy (fp32 [tokens]) from this rank's vocabulary shard logits [tokens, V/t]
/// (float or bfloat16; the shard starts at tp.rank() * V/t) and int64 targets [tokens]: shard max,
/// all-reduce MAX, sum of exponentials and the target logit, all-reduce SUM of both, loss. Saves the
/// logits in their own dtype plus the fp32 row max and sum of exponentials.
at::Tensor fused_vocab_parallel_cross_entropy(const at::Tensor& logits_shard, const at::Tensor& targets,
                                              Communicator& tp);

}  // namespace tessera::runtime
