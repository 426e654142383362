// Activation recomputation (Chen et al. 2016; Korthikanti et al. 2022): run a function without
// keeping its intermediate activations, keep only its inputs, and run it again during the backward.
// `full` wraps whole layers, `selective` only the attention core.
#pragma once

#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>

namespace tessera::runtime {

using RecomputedFn = std::function<at::Tensor(const std::vector<at::Tensor>&)>;

/// fn(inputs) (one or three tensors) whose backward recomputes fn; parameters used inside fn receive their gradients
/// during that recomputation. `fn` must outlive the backward pass.
at::Tensor recomputed(const RecomputedFn& fn, const std::vector<at::Tensor>& inputs);

}  // namespace tessera::runtime
