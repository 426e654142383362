// Bucketed gradient reduction started from gradient-accumulator hooks.
#include "runtime/train/gradient_reducer.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/torch.h>

namespace tessera::runtime {

namespace {

bool tied_embedding(const Param& p, const ParallelState& state) {
  return p.name == "embedding.word.weight" && state.embedding_group != nullptr;
}

// Sums the given gradients over `group` in one flat message.
void all_reduce_flat(const std::vector<at::Tensor>& grads, Communicator& group) {
  if (grads.empty() || group.size() == 1) return;
  std::vector<at::Tensor> flat;
  for (const auto& g : grads) flat.push_back(g.reshape({-1}));
  at::Tensor joined = at::cat(flat);
  group.all_reduce(joined);
  int64_t offset = 0;
  for (const auto& g : grads) {
    g.copy_(joined.narrow(0, offset, g.numel()).view(g.sizes()));
    offset += g.numel();
  }
}

}  // namespace

GradientReducer::GradientReducer(ParamStore& store, ParallelState& state, bool distributed_optimizer,
                                 int64_t bucket_elements)
    : store_(store), state_(state), distributed_optimizer_(distributed_optimizer) {
  if (bucket_elements < 1) throw std::invalid_argument("bucket_elements must be positive");
  const int64_t total = store_.numel();
  const int64_t shards = distributed_optimizer_ ? state_.dp : 1;
  const int64_t shard = total / shards;
  for (int64_t s = 0; s < shards; ++s)
    for (int64_t offset = s * shard; offset < (s + 1) * shard; offset += bucket_elements)
      buckets_.push_back({offset, std::min(bucket_elements, (s + 1) * shard - offset),
                          distributed_optimizer_ ? static_cast<int>(s) : -1});
  for (auto& b : buckets_) b.early = state_.dp > 1;

  const auto& params = store_.params();
  slices_.resize(params.size());
  bucket_params_.resize(buckets_.size());
  accumulated_.assign(params.size(), 0);
  sp_reduced_.assign(params.size(), false);
  for (size_t i = 0; i < params.size(); ++i) {
    const int64_t begin = store_.offsets()[i], end = begin + params[i].value.numel();
    for (size_t b = 0; b < buckets_.size(); ++b) {
      const int64_t lo = std::max(begin, buckets_[b].offset), hi = std::min(end, buckets_[b].offset + buckets_[b].numel);
      if (lo >= hi) continue;
      slices_[i].push_back({b, hi - lo});
      bucket_params_[b].push_back(i);
      buckets_[b].param_elements += hi - lo;
      // The tied embedding is summed over the embedding group first, which must not happen inside a
      // backward (the other stage may be waiting for this one's gradient): its buckets wait for finish().
      if (tied_embedding(params[i], state_)) buckets_[b].early = false;
    }
  }
  if (state_.dp == 1) return;  // nothing to overlap: finish() does the tp and embedding sums
  for (size_t i = 0; i < params.size(); ++i) {
    accumulators_.push_back(torch::autograd::impl::grad_accumulator(params[i].value));
    accumulators_.back()->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [this, i](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          on_accumulated(i);
          return outputs;
        }));
  }
}

GradientReducer::~GradientReducer() {
  for (auto& accumulator : accumulators_) accumulator->post_hooks().clear();
}

void GradientReducer::begin_step(int64_t microbatches) {
  microbatches_ = microbatches;
  std::fill(accumulated_.begin(), accumulated_.end(), 0);
  std::fill(sp_reduced_.begin(), sp_reduced_.end(), false);
  for (auto& b : buckets_) {
    b.pending = b.param_elements;
    b.started = false;
  }
  pending_.clear();
  overlapped_buckets_ = 0;
  in_step_ = true;
}

void GradientReducer::on_accumulated(size_t param) {
  if (!in_step_) return;  // a backward outside a training step (none today) reduces nothing
  const int64_t count = ++accumulated_[param];
  if (count > microbatches_)
    throw std::logic_error("gradient of " + store_.params()[param].name + " accumulated " + std::to_string(count) +
                           " times in a step of " + std::to_string(microbatches_) + " microbatches");
  if (count < microbatches_) return;
  for (const auto& slice : slices_[param]) {
    Bucket& b = buckets_[slice.bucket];
    b.pending -= slice.elements;
    if (b.pending == 0 && b.early && !b.started) {
      start(slice.bucket);
      ++overlapped_buckets_;
    }
  }
}

void GradientReducer::reduce_sequence_parallel(const std::vector<size_t>& params) {
  if (!state_.sequence_parallel) return;
  std::vector<at::Tensor> grads;
  for (size_t i : params) {
    if (!store_.params()[i].sequence_parallel || sp_reduced_[i]) continue;
    grads.push_back(store_.params()[i].value.mutable_grad());
    sp_reduced_[i] = true;
  }
  all_reduce_flat(grads, *state_.tp_group);
}

void GradientReducer::start(size_t index) {
  Bucket& b = buckets_[index];
  b.started = true;
  reduce_sequence_parallel(bucket_params_[index]);  // SP norm gradients are partial per tp rank until then
  at::Tensor range = store_.grads().narrow(0, b.offset, b.numel);
  pending_.push_back(b.owner >= 0 ? state_.dp_group->reduce_async(range, b.owner)
                                  : state_.dp_group->all_reduce_async(range));
}

at::Tensor GradientReducer::finish() {
  in_step_ = false;
  // What no hook started, in the order of the buffer (the same on every member of each group).
  std::vector<size_t> all(store_.params().size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  reduce_sequence_parallel(all);
  if (state_.embedding_group) {
    std::vector<at::Tensor> embedding;
    for (const auto& p : store_.params())
      if (tied_embedding(p, state_)) embedding.push_back(p.value.mutable_grad());
    all_reduce_flat(embedding, *state_.embedding_group);
  }
  at::Tensor& grads = store_.grads();
  if (state_.dp == 1) return grads;
  for (size_t b = 0; b < buckets_.size(); ++b)
    if (!buckets_[b].started) start(b);
  for (auto& work : pending_) work->wait();
  pending_.clear();
  const double dp = static_cast<double>(state_.dp);
  if (!distributed_optimizer_) return grads.div_(dp);
  const int64_t shard = grads.numel() / state_.dp;
  return grads.narrow(0, state_.coord.dp * shard, shard).div_(dp);
}

}  // namespace tessera::runtime
