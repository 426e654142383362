// The fused kernels as torch::autograd::Functions: dtype and device dispatch, fp32 parameters,
// what each saves for backward, and the collectives of the vocab-parallel cross-entropy.
#include "runtime/model/fused_ops.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "runtime/model/kernel_dispatch.hpp"

namespace tessera::runtime {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using namespace kernel_dispatch;

/// A parameter as the kernels take it: fp32, contiguous, on x's device.
at::Tensor fp32_param(const at::Tensor& p, const at::Tensor& x, int64_t size, const char* op, const char* what) {
  if (p.dim() != 1 || p.size(0) != size)
    throw std::invalid_argument(std::string(op) + ": " + what + " must be [" + std::to_string(size) + "], got " +
                                c10::str(p.sizes()));
  return p.to(x.device(), at::kFloat).contiguous();
}
at::Tensor fp32_empty(int64_t n, const at::Tensor& like) { return at::empty({n}, like.options().dtype(at::kFloat)); }
/// An upstream gradient as the kernels take it: x's dtype, contiguous.
at::Tensor grad_like(const at::Tensor& g, const at::Tensor& x) { return g.to(x.scalar_type()).contiguous(); }

void set_dtype(AutogradContext* ctx, const char* key, const at::Tensor& t) {
  ctx->saved_data[key] = static_cast<int64_t>(t.scalar_type());
}
at::ScalarType get_dtype(AutogradContext* ctx, const char* key) {
  return static_cast<at::ScalarType>(ctx->saved_data[key].toInt());
}

int64_t last_dim(const at::Tensor& x, const char* op) {
  if (x.dim() < 1 || x.size(-1) == 0) throw std::invalid_argument(std::string(op) + ": x needs a non-empty last dimension");
  return x.size(-1);
}

struct LayerNormFn : torch::autograd::Function<LayerNormFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x_in, const at::Tensor& weight, const at::Tensor& bias,
                            double eps) {
    constexpr const char* op = "fused_layer_norm";
    const at::Tensor x = x_in.contiguous();
    const int64_t cols = last_dim(x, op), rows = x.numel() / cols;
    const at::Tensor w = fp32_param(weight, x, cols, op, "weight"), b = fp32_param(bias, x, cols, op, "bias");
    at::Tensor y = at::empty_like(x), mean = fp32_empty(rows, x), rstd = fp32_empty(rows, x);
    Launch l;
    launch_for(l, x, op);
    with_dtype(x, op, [&](auto tag) {
      using T = decltype(tag);
      if (rows > 0)
        TESSERA_RUN(l, layernorm_forward, ptr<T>(x), f32(w), f32(b), ptr<T>(y), f32(mean), f32(rstd), rows, cols,
                    static_cast<float>(eps));
    });
    ctx->save_for_backward({x, w, mean, rstd});
    set_dtype(ctx, "weight_dtype", weight);
    set_dtype(ctx, "bias_dtype", bias);
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &w = saved[1], &mean = saved[2], &rstd = saved[3];
    const at::Tensor dy = grad_like(g[0], x);
    const int64_t cols = x.size(-1), rows = x.numel() / cols;
    at::Tensor dx = at::empty_like(x), dw = fp32_empty(cols, x), db = fp32_empty(cols, x);
    Launch l;
    launch_for(l, x, "fused_layer_norm backward");
    if (rows == 0) {
      dw.zero_();
      db.zero_();
    } else {
      with_dtype(x, "fused_layer_norm backward", [&](auto tag) {
        using T = decltype(tag);
        TESSERA_RUN(l, layernorm_backward, ptr<T>(dy), ptr<T>(x), f32(w), f32(mean), f32(rstd), ptr<T>(dx), f32(dw),
                    f32(db), rows, cols);
      });
    }
    return {dx, dw.to(get_dtype(ctx, "weight_dtype")), db.to(get_dtype(ctx, "bias_dtype")), {}};
  }
};

struct RmsNormFn : torch::autograd::Function<RmsNormFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x_in, const at::Tensor& weight, double eps) {
    constexpr const char* op = "fused_rms_norm";
    const at::Tensor x = x_in.contiguous();
    const int64_t cols = last_dim(x, op), rows = x.numel() / cols;
    const at::Tensor w = fp32_param(weight, x, cols, op, "weight");
    at::Tensor y = at::empty_like(x), rstd = fp32_empty(rows, x);
    Launch l;
    launch_for(l, x, op);
    with_dtype(x, op, [&](auto tag) {
      using T = decltype(tag);
      if (rows > 0)
        TESSERA_RUN(l, rmsnorm_forward, ptr<T>(x), f32(w), ptr<T>(y), f32(rstd), rows, cols, static_cast<float>(eps));
    });
    ctx->save_for_backward({x, w, rstd});
    set_dtype(ctx, "weight_dtype", weight);
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &w = saved[1], &rstd = saved[2];
    const at::Tensor dy = grad_like(g[0], x);
    const int64_t cols = x.size(-1), rows = x.numel() / cols;
    at::Tensor dx = at::empty_like(x), dw = fp32_empty(cols, x);
    Launch l;
    launch_for(l, x, "fused_rms_norm backward");
    if (rows == 0) {
      dw.zero_();
    } else {
      with_dtype(x, "fused_rms_norm backward", [&](auto tag) {
        using T = decltype(tag);
        TESSERA_RUN(l, rmsnorm_backward, ptr<T>(dy), ptr<T>(x), f32(w), f32(rstd), ptr<T>(dx), f32(dw), rows, cols);
      });
    }
    return {dx, dw.to(get_dtype(ctx, "weight_dtype")), {}};
  }
};

struct RopeFn : torch::autograd::Function<RopeFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x_in, const at::Tensor& positions_in, double theta) {
    constexpr const char* op = "fused_rope";
    if (x_in.dim() != 3 || x_in.size(2) % 2 != 0)
      throw std::invalid_argument(std::string(op) + ": x must be [tokens, heads, head_dim] with an even head_dim, got " +
                                  c10::str(x_in.sizes()));
    if (positions_in.scalar_type() != at::kLong || positions_in.dim() != 1 || positions_in.size(0) != x_in.size(0))
      throw std::invalid_argument(std::string(op) + ": positions must be int64 [" + std::to_string(x_in.size(0)) + "]");
    const at::Tensor x = x_in.contiguous(), positions = positions_in.to(x.device()).contiguous();
    at::Tensor y = at::empty_like(x);
    Launch l;
    launch_for(l, x, op);
    with_dtype(x, op, [&](auto tag) {
      using T = decltype(tag);
      if (x.numel() > 0)
        TESSERA_RUN(l, rope_forward, ptr<T>(x), ptr<T>(y), i64(positions), x.size(0), x.size(1), x.size(2),
                    static_cast<float>(theta));
    });
    ctx->save_for_backward({positions});
    ctx->saved_data["theta"] = theta;
    ctx->saved_data["dtype"] = static_cast<int64_t>(x.scalar_type());
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const at::Tensor positions = ctx->get_saved_variables()[0];
    const at::Tensor dy = g[0].to(static_cast<at::ScalarType>(ctx->saved_data["dtype"].toInt())).contiguous();
    at::Tensor dx = at::empty_like(dy);
    Launch l;
    launch_for(l, dy, "fused_rope backward");
    with_dtype(dy, "fused_rope backward", [&](auto tag) {
      using T = decltype(tag);
      if (dy.numel() > 0)
        TESSERA_RUN(l, rope_backward, ptr<T>(dy), ptr<T>(dx), i64(positions), dy.size(0), dy.size(1), dy.size(2),
                    static_cast<float>(ctx->saved_data["theta"].toDouble()));
    });
    return {dx, {}, {}};
  }
};

struct BiasGeluFn : torch::autograd::Function<BiasGeluFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x_in, const at::Tensor& bias) {
    constexpr const char* op = "fused_bias_gelu";
    const at::Tensor x = x_in.contiguous();
    const int64_t cols = last_dim(x, op), rows = x.numel() / cols;
    const at::Tensor b = fp32_param(bias, x, cols, op, "bias");
    at::Tensor y = at::empty_like(x);
    Launch l;
    launch_for(l, x, op);
    with_dtype(x, op, [&](auto tag) {
      using T = decltype(tag);
      if (rows > 0) TESSERA_RUN(l, bias_gelu_forward, ptr<T>(x), f32(b), ptr<T>(y), rows, cols);
    });
    ctx->save_for_backward({x, b});
    set_dtype(ctx, "bias_dtype", bias);
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &b = saved[1];
    const at::Tensor dy = grad_like(g[0], x);
    const int64_t cols = x.size(-1), rows = x.numel() / cols;
    at::Tensor dx = at::empty_like(x), db = fp32_empty(cols, x);
    Launch l;
    launch_for(l, x, "fused_bias_gelu backward");
    if (rows == 0) {
      db.zero_();
    } else {
      with_dtype(x, "fused_bias_gelu backward", [&](auto tag) {
        using T = decltype(tag);
        TESSERA_RUN(l, bias_gelu_backward, ptr<T>(dy), ptr<T>(x), f32(b), ptr<T>(dx), f32(db), rows, cols);
      });
    }
    return {dx, db.to(get_dtype(ctx, "bias_dtype"))};
  }
};

struct SwigluFn : torch::autograd::Function<SwigluFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gate_up_in) {
    constexpr const char* op = "fused_swiglu";
    const int64_t width = last_dim(gate_up_in, op);
    if (width % 2 != 0)
      throw std::invalid_argument(std::string(op) + ": the last dimension (" + std::to_string(width) +
                                  ") must be even: [gate | up]");
    // The kernels read each row's two halves in place: no copies of the halves.
    const at::Tensor gate_up = gate_up_in.contiguous();
    const int64_t cols = width / 2, rows = gate_up.numel() / width;
    std::vector<int64_t> out_shape = gate_up.sizes().vec();
    out_shape.back() = cols;
    at::Tensor y = at::empty(out_shape, gate_up.options());
    Launch l;
    launch_for(l, gate_up, op);
    with_dtype(gate_up, op, [&](auto tag) {
      using T = decltype(tag);
      if (rows > 0) TESSERA_RUN(l, swiglu_forward, ptr<T>(gate_up), ptr<T>(y), rows, cols);
    });
    ctx->save_for_backward({gate_up});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const at::Tensor gate_up = ctx->get_saved_variables()[0];
    const at::Tensor dy = grad_like(g[0], gate_up);
    const int64_t width = gate_up.size(-1), cols = width / 2, rows = gate_up.numel() / width;
    at::Tensor dgate_up = at::empty_like(gate_up);
    Launch l;
    launch_for(l, gate_up, "fused_swiglu backward");
    with_dtype(gate_up, "fused_swiglu backward", [&](auto tag) {
      using T = decltype(tag);
      if (rows > 0) TESSERA_RUN(l, swiglu_backward, ptr<T>(dy), ptr<T>(gate_up), ptr<T>(dgate_up), rows, cols);
    });
    return {dgate_up};
  }
};

struct VocabCrossEntropyFn : torch::autograd::Function<VocabCrossEntropyFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& logits_in, const at::Tensor& targets_in, int64_t comm) {
    constexpr const char* op = "fused_vocab_parallel_cross_entropy";
    auto& tp = *reinterpret_cast<Communicator*>(comm);
    if (logits_in.dim() != 2)
      throw std::invalid_argument(std::string(op) + ": logits must be [tokens, V/t], got " + c10::str(logits_in.sizes()));
    if (targets_in.scalar_type() != at::kLong || targets_in.dim() != 1 || targets_in.size(0) != logits_in.size(0))
      throw std::invalid_argument(std::string(op) + ": targets must be int64 [" + std::to_string(logits_in.size(0)) + "]");
    const at::Tensor logits = logits_in.contiguous(), targets = targets_in.to(logits.device()).contiguous();
    const int64_t rows = logits.size(0), cols = logits.size(1), start = tp.rank() * cols;
    at::Tensor row_max = fp32_empty(rows, logits);
    at::Tensor stats = at::empty({2, rows}, logits.options().dtype(at::kFloat));  // sum of exp, target logit
    at::Tensor loss = fp32_empty(rows, logits);
    Launch l;
    launch_for(l, logits, op);
    with_dtype(logits, op, [&](auto tag) {
      using T = decltype(tag);
      if (rows > 0) TESSERA_RUN(l, vocab_shard_max, ptr<T>(logits), f32(row_max), rows, cols);
      tp.all_reduce(row_max, ReduceOp::max);
      if (rows > 0)
        TESSERA_RUN(l, vocab_shard_sumexp, ptr<T>(logits), f32(row_max), i64(targets), start, f32(stats),
                    f32(stats) + rows, rows, cols);
      tp.all_reduce(stats, ReduceOp::sum);
      if (rows > 0) TESSERA_RUN(l, vocab_loss, f32(row_max), f32(stats), f32(stats) + rows, f32(loss), rows);
    });
    ctx->save_for_backward({logits, targets, row_max, stats[0]});
    ctx->saved_data["start"] = start;
    return loss;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &logits = saved[0], &targets = saved[1], &row_max = saved[2];
    const at::Tensor sumexp = saved[3].contiguous();
    const at::Tensor dloss = g[0].to(at::kFloat).contiguous();
    const int64_t rows = logits.size(0), cols = logits.size(1), start = ctx->saved_data["start"].toInt();
    at::Tensor dlogits = at::empty_like(logits);
    Launch l;
    launch_for(l, logits, "fused_vocab_parallel_cross_entropy backward");
    with_dtype(logits, "fused_vocab_parallel_cross_entropy backward", [&](auto tag) {
      using T = decltype(tag);
      if (rows > 0)
        TESSERA_RUN(l, vocab_shard_backward, ptr<T>(logits), f32(row_max), f32(sumexp), i64(targets), start, f32(dloss),
                    ptr<T>(dlogits), rows, cols);
    });
    return {dlogits, {}, {}};
  }
};

}  // namespace

at::Tensor fused_layer_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps) {
  return LayerNormFn::apply(x, weight, bias, eps);
}

at::Tensor fused_rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  return RmsNormFn::apply(x, weight, eps);
}

at::Tensor fused_rope(const at::Tensor& x, const at::Tensor& positions, double theta) {
  return RopeFn::apply(x, positions, theta);
}

at::Tensor fused_bias_gelu(const at::Tensor& x, const at::Tensor& bias) {
  if (bias.defined()) return BiasGeluFn::apply(x, bias);
  return BiasGeluFn::apply(x, at::zeros({x.dim() > 0 ? x.size(-1) : 0}, x.options().dtype(at::kFloat)));
}

at::Tensor fused_swiglu(const at::Tensor& gate_up) { return SwigluFn::apply(gate_up); }

at::Tensor fused_vocab_parallel_cross_entropy(const at::Tensor& logits_shard, const at::Tensor& targets, Communicator& tp) {
  return VocabCrossEntropyFn::apply(logits_shard, targets, reinterpret_cast<int64_t>(&tp));
}

}  // namespace tessera::runtime
