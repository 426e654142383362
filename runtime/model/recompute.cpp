// The recomputing autograd function (a reentrant checkpoint, as torch.utils.checkpoint's original
// form). Autograd only sees tensors passed as separate arguments, so there is one function per arity.
#include "runtime/model/recompute.hpp"

#include <torch/torch.h>

namespace tessera::runtime {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Tensor run_without_graph(AutogradContext* ctx, int64_t fn, const variable_list& inputs) {
  ctx->saved_data["fn"] = fn;
  ctx->save_for_backward(inputs);
  at::NoGradGuard no_grad;
  return (*reinterpret_cast<const RecomputedFn*>(fn))(inputs);
}

// Runs fn again with a graph and back-propagates through it: parameters inside get their gradients,
// and the inputs' gradients are returned (after an undefined one for the fn argument).
variable_list recompute_backward(AutogradContext* ctx, const variable_list& grad) {
  const auto& fn = *reinterpret_cast<const RecomputedFn*>(ctx->saved_data["fn"].toInt());
  variable_list inputs;
  for (const auto& saved : ctx->get_saved_variables()) inputs.push_back(saved.detach().requires_grad_(saved.requires_grad()));
  at::Tensor output;
  {
    at::AutoGradMode enable(true);
    output = fn(inputs);
  }
  torch::autograd::backward({output}, {grad[0]});
  variable_list out{at::Tensor()};
  for (const auto& input : inputs) out.push_back(input.requires_grad() ? input.grad() : at::Tensor());
  return out;
}

struct Recompute1 : torch::autograd::Function<Recompute1> {
  static at::Tensor forward(AutogradContext* ctx, int64_t fn, const at::Tensor& a) { return run_without_graph(ctx, fn, {a}); }
  static variable_list backward(AutogradContext* ctx, variable_list grad) { return recompute_backward(ctx, grad); }
};

struct Recompute3 : torch::autograd::Function<Recompute3> {
  static at::Tensor forward(AutogradContext* ctx, int64_t fn, const at::Tensor& a, const at::Tensor& b,
                            const at::Tensor& c) {
    return run_without_graph(ctx, fn, {a, b, c});
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad) { return recompute_backward(ctx, grad); }
};

}  // namespace

at::Tensor recomputed(const RecomputedFn& fn, const std::vector<at::Tensor>& inputs) {
  const auto handle = reinterpret_cast<int64_t>(&fn);
  if (inputs.size() == 1) return Recompute1::apply(handle, inputs[0]);
  if (inputs.size() == 3) return Recompute3::apply(handle, inputs[0], inputs[1], inputs[2]);
  throw std::invalid_argument("recomputed() takes one or three tensors");
}

}  // namespace tessera::runtime
