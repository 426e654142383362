// The parameters of this rank: each element initialised as a function of (seed, full tensor name, its
// index in the full tensor), drawing just this rank's shard, so every layout starts from the
// single-process weights; finalised
// into one flat fp32 buffer (and a flat gradient buffer) that data parallelism and the optimizer
// work on directly. Under mixed precision (bf16) the model computes with a flat bf16 copy of the
// weights, while the fp32 buffer holds the master weights and the gradients accumulate in fp32
// (Megatron's main_grad), on the CPU or on a CUDA device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/TensorOptions.h>

namespace tessera::runtime {

/// Where the parameters live and the type the model computes in (fp32 or bf16).
struct Placement {
  at::Device device = at::kCPU;
  at::ScalarType model_dtype = at::kFloat;
  bool mixed() const { return model_dtype != at::kFloat; }
};

struct Param {
  std::string name;              ///< full-model name, e.g. "layers.3.attention.qkv.weight"
  at::Tensor value;              ///< this rank's shard; shares ParamStore::model_values()'s storage once finalised
  bool tp_replicated = false;    ///< identical on every tp rank (norms, row biases): counted once in the norm
  bool sequence_parallel = false;///< gradient is partial per sequence shard under SP: all-reduced over tp
  bool weight_decay = true;      ///< false for biases, norms and position embeddings
  bool tied_copy = false;        ///< the last stage's copy of the tied word embedding (pp > 1)
};

/// How a full tensor is split across the tp group: not at all, or into equal blocks along a dim.
struct Shard {
  int64_t dim = -1;  ///< -1 = replicated
  static Shard replicated() { return {}; }
  static Shard along(int64_t d) { return {d}; }
};

class ParamStore {
 public:
  ParamStore(int64_t seed, int64_t tp_rank, int64_t tp_size, Placement placement = {})
      : seed_(seed), tp_rank_(tp_rank), tp_size_(tp_size), placement_(placement) {}

  const Placement& placement() const { return placement_; }
  /// Options of the tensors the model computes with: the model dtype on the device.
  at::TensorOptions model_options() const;

  /// This rank's block (`shard` of the tp group) of the tensor `name` of `full_shape` drawn from
  /// N(0, std): element i of the full tensor (row-major) is number i of the Philox stream keyed by
  /// (seed, name) (counter_rng.hpp), so only the block is drawn, on every intra-op thread.
  at::Tensor normal(const std::string& name, at::IntArrayRef full_shape, double std,
                    Shard shard = Shard::replicated()) const;

  /// Registers a parameter initialised to `value` (this rank's shard, fp32 on the CPU) and returns
  /// the tensor the model keeps: `value` itself, or its copy in the model dtype on the device.
  at::Tensor add(Param param);

  /// Moves every parameter into one flat buffer (each tensor, and so every copy of it the model
  /// holds, is re-pointed into it), attaches views of a flat zeroed fp32 gradient buffer as their
  /// .grad (a bf16 parameter's gradients accumulate into it in fp32), and marks them as requiring
  /// grad. The buffers are padded with zeros to a multiple of `shards` elements: the distributed
  /// optimizer splits them into that many equal shards, and this rank's optimizer owns shard `shard`.
  void finalise(int64_t shards = 1, int64_t shard = 0);

  const std::vector<Param>& params() const { return params_; }
  /// The flat weights the parameters are views of, in the model's dtype.
  at::Tensor& model_values() { return model_values_; }
  /// The fp32 weights of this rank's optimizer shard, elements [master_offset(), + master_numel())
  /// of the flat buffers: a view of model_values() in fp32, the master copy under mixed precision
  /// (which exists for the shard only: ZeRO-1 shards the masters with the optimizer state).
  at::Tensor& master() { return master_; }
  int64_t master_offset() const { return master_offset_; }
  int64_t master_numel() const { return master_.numel(); }
  /// Under mixed precision: the shard's model weights from its updated masters.
  void refresh_model_values();
  at::Tensor& grads() { return grads_; }
  /// Offset of each parameter in the flat buffers (same order as params()).
  const std::vector<int64_t>& offsets() const { return offsets_; }
  int64_t numel() const { return model_values_.numel(); }

 private:
  int64_t seed_, tp_rank_, tp_size_;
  Placement placement_;
  std::vector<Param> params_;
  std::vector<at::Tensor> initial_;  ///< fp32 CPU initial values until finalise() (when they differ from Param::value)
  std::vector<int64_t> offsets_;
  at::Tensor model_values_, master_, grads_;
  int64_t master_offset_ = 0;
};

}  // namespace tessera::runtime
