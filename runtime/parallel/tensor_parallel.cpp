// Autograd functions of tensor/sequence parallelism and the parallel layers (Megatron-Core
// tensor_parallel/mappings.py, layers.py and cross_entropy.py, in LibTorch).
#include "runtime/parallel/tensor_parallel.hpp"

#include <torch/torch.h>

namespace tessera::runtime {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

int64_t to_handle(Communicator& c) { return reinterpret_cast<int64_t>(&c); }
Communicator& from(AutogradContext* ctx) {
  return *reinterpret_cast<Communicator*>(ctx->saved_data["comm"].toInt());
}

at::Tensor all_reduced(const at::Tensor& x, Communicator& c) {
  at::Tensor out = x.contiguous().clone();
  c.all_reduce(out);
  return out;
}
at::Tensor gathered(const at::Tensor& x, Communicator& c) {
  auto sizes = x.sizes().vec();
  sizes[0] *= c.size();
  at::Tensor out = at::empty(sizes, x.options());
  c.all_gather(out, x);
  return out;
}
at::Tensor reduce_scattered(const at::Tensor& x, Communicator& c) {
  auto sizes = x.sizes().vec();
  sizes[0] /= c.size();
  at::Tensor out = at::empty(sizes, x.options());
  c.reduce_scatter(out, x);
  return out;
}
at::Tensor own_slice(const at::Tensor& x, Communicator& c) {
  const int64_t n = x.size(0) / c.size();
  return x.narrow(0, c.rank() * n, n).contiguous();
}

struct CopyToTp : torch::autograd::Function<CopyToTp> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    ctx->saved_data["comm"] = comm;
    return x.view_as(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) { return {all_reduced(g[0], from(ctx)), {}}; }
};
struct ReduceFromTp : torch::autograd::Function<ReduceFromTp> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    return all_reduced(x, *reinterpret_cast<Communicator*>(comm));
  }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0], {}}; }
};
struct GatherFromSequence : torch::autograd::Function<GatherFromSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    ctx->saved_data["comm"] = comm;
    return gathered(x, *reinterpret_cast<Communicator*>(comm));
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {reduce_scattered(g[0], from(ctx)), {}};
  }
};
struct ReduceScatterToSequence : torch::autograd::Function<ReduceScatterToSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    ctx->saved_data["comm"] = comm;
    return reduce_scattered(x, *reinterpret_cast<Communicator*>(comm));
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) { return {gathered(g[0], from(ctx)), {}}; }
};
struct ScatterToSequence : torch::autograd::Function<ScatterToSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t comm) {
    ctx->saved_data["comm"] = comm;
    return own_slice(x, *reinterpret_cast<Communicator*>(comm));
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) { return {gathered(g[0], from(ctx)), {}}; }
};

// Column-parallel linear under sequence parallelism (Megatron-Core's
// LinearWithGradAccumulationAndAsyncCommunication with sequence_parallel): the forward all-gathers
// the sequence-sharded input, multiplies and lets the gathered copy go; only the shard is saved, and
// the backward gathers it again for the weight gradient. Saves (t-1)/t of the input per linear.
struct SequenceParallelColumnLinear : torch::autograd::Function<SequenceParallelColumnLinear> {
  // No bias here: autograd functions take no undefined inputs, so the caller adds it.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x_shard, const at::Tensor& weight, int64_t comm) {
    ctx->saved_data["comm"] = comm;
    ctx->save_for_backward({x_shard, weight});
    return at::linear(gathered(x_shard, *reinterpret_cast<Communicator*>(comm)), weight);
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& weight = saved[1];
    Communicator& c = from(ctx);
    const at::Tensor grad = g[0].contiguous();
    const at::Tensor input = gathered(saved[0], c);
    const at::Tensor grad_weight = grad.reshape({-1, grad.size(-1)}).t().mm(input.reshape({-1, input.size(-1)}));
    return {reduce_scattered(grad.matmul(weight), c), grad_weight, {}};
  }
};

// Forward: loss_i = log(sum_j exp(z_ij - max_i)) - (z_i,target - max_i), each sum over the whole
// vocabulary by an all-reduce of the per-rank partial. Backward: softmax - onehot(target), local.
struct VocabParallelCrossEntropy : torch::autograd::Function<VocabParallelCrossEntropy> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& logits, const at::Tensor& targets, int64_t comm) {
    auto& c = *reinterpret_cast<Communicator*>(comm);
    const int64_t vocab_shard = logits.size(1);
    const int64_t start = c.rank() * vocab_shard;
    at::Tensor max = std::get<0>(logits.max(1));
    c.all_reduce(max, ReduceOp::max);
    at::Tensor shifted = logits - max.unsqueeze(1);
    const at::Tensor outside = (targets < start).logical_or_(targets >= start + vocab_shard);
    const at::Tensor local_target = (targets - start).masked_fill_(outside, 0);
    at::Tensor target_logit = shifted.gather(1, local_target.unsqueeze(1)).squeeze(1).masked_fill_(outside, 0.0);
    c.all_reduce(target_logit);
    at::Tensor exp = shifted.exp_();
    at::Tensor sum_exp = exp.sum(1);
    c.all_reduce(sum_exp);
    at::Tensor loss = sum_exp.log() - target_logit;
    exp.div_(sum_exp.unsqueeze(1));  // softmax, kept for the backward
    ctx->save_for_backward({exp, local_target, outside});
    return loss;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const auto saved = ctx->get_saved_variables();
    at::Tensor grad = saved[0].clone();
    const at::Tensor inside = saved[2].logical_not().to(grad.scalar_type());
    grad.scatter_add_(1, saved[1].unsqueeze(1), -inside.unsqueeze(1));
    grad.mul_(g[0].unsqueeze(1));
    return {grad, {}, {}};
  }
};

}  // namespace

at::Tensor copy_to_tp(const at::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : CopyToTp::apply(x, to_handle(tp));
}
at::Tensor reduce_from_tp(const at::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : ReduceFromTp::apply(x, to_handle(tp));
}
at::Tensor gather_from_sequence(const at::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : GatherFromSequence::apply(x, to_handle(tp));
}
at::Tensor reduce_scatter_to_sequence(const at::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : ReduceScatterToSequence::apply(x, to_handle(tp));
}
at::Tensor scatter_to_sequence(const at::Tensor& x, Communicator& tp) {
  return tp.size() == 1 ? x : ScatterToSequence::apply(x, to_handle(tp));
}

at::Tensor column_parallel_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                  const TensorParallel& tp) {
  if (tp.size() == 1) return at::linear(x, weight, bias);
  if (tp.sequence_parallel) {
    at::Tensor y = SequenceParallelColumnLinear::apply(x, weight, to_handle(*tp.group));
    return bias.defined() ? y + bias : y;
  }
  return at::linear(copy_to_tp(x, *tp.group), weight, bias);
}

at::Tensor row_parallel_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                               const TensorParallel& tp) {
  // Alone, the bias goes into the GEMM (cuBLASLt's epilogue on a GPU) instead of a pass of its own.
  if (tp.size() == 1) return at::linear(x, weight, bias);
  const at::Tensor partial = at::linear(x, weight);
  at::Tensor y = tp.sequence_parallel ? reduce_scatter_to_sequence(partial, *tp.group) : reduce_from_tp(partial, *tp.group);
  return bias.defined() ? y + bias : y;
}

at::Tensor vocab_parallel_embedding(const at::Tensor& tokens, const at::Tensor& weight_shard, const TensorParallel& tp) {
  if (tp.size() == 1) return at::embedding(weight_shard, tokens);
  const int64_t rows = weight_shard.size(0), start = tp.rank() * rows;
  const at::Tensor outside = (tokens < start).logical_or_(tokens >= start + rows);
  const at::Tensor local = (tokens - start).masked_fill_(outside, 0);
  const at::Tensor looked_up = at::embedding(weight_shard, local) * outside.logical_not().unsqueeze(-1);
  return reduce_from_tp(looked_up, *tp.group);
}

at::Tensor vocab_parallel_cross_entropy(const at::Tensor& logits_shard, const at::Tensor& targets,
                                        const TensorParallel& tp) {
  return VocabParallelCrossEntropy::apply(logits_shard, targets, to_handle(*tp.group));
}

}  // namespace tessera::runtime
