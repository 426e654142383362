// The kernels' CPU references against LibTorch (the runtime's own LibTorch, computing in float64 from
// the same inputs): every forward and backward, in fp32 and bf16, on odd shapes and a large vocab
// shard. The CUDA kernels are checked against these references (test_kernels_cuda), so this closes
// the chain CUDA -> CPU reference -> LibTorch.
// LibTorch before Qt: Qt's `slots` macro would break LibTorch's headers.
// moc needs none of these (it reads the test class alone); LibTorch would cost it ~20 s.
#ifndef Q_MOC_RUN
#include <torch/torch.h>

#include <QtTest/QtTest>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels.hpp"
#endif

namespace k = tessera::kernels;
using k::bf16;

namespace {

std::vector<float> random_vector(int64_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

template <typename T>
std::vector<T> cast(const std::vector<float>& v) {
  std::vector<T> out;
  out.reserve(v.size());
  for (float x : v) out.push_back(k::from_float<T>(x));
  return out;
}

template <typename T>
std::vector<float> widen(const std::vector<T>& v) {
  std::vector<float> out;
  out.reserve(v.size());
  for (const T& x : v) out.push_back(k::to_float(x));
  return out;
}

/// The values the kernel actually sees (bf16-rounded for T = bf16), as a float64 tensor.
template <typename T>
at::Tensor reference_input(const std::vector<T>& v, at::IntArrayRef shape, bool requires_grad = false) {
  std::vector<double> d;
  d.reserve(v.size());
  for (const T& x : v) d.push_back(k::to_float(x));
  auto t = torch::tensor(d, torch::kFloat64).reshape(shape);
  return requires_grad ? t.set_requires_grad(true) : t;
}
at::Tensor reference_input(const std::vector<float>& v, at::IntArrayRef shape, bool requires_grad = false) {
  return reference_input<float>(v, shape, requires_grad);
}

struct Tolerance {
  double atol_of_max;  ///< absolute part, relative to the largest |reference| value
  double rtol;
};
// fp32 outputs: summation order and float rounding only. bf16 outputs: one bf16 rounding of a value
// computed in fp32 (relative error <= 2^-9) plus fp32 noise.
constexpr Tolerance kFp32{2e-6, 1e-4};
constexpr Tolerance kBf16Out{2e-3, 8e-3};

/// Empty when every |ours - reference| <= atol * max|reference| + rtol * |reference|, else the first
/// offending index and values.
std::string mismatch(const std::vector<float>& ours, const at::Tensor& reference, Tolerance tol) {
  const auto ref = reference.detach().to(torch::kFloat64).contiguous().reshape({-1});
  if (ref.numel() != static_cast<int64_t>(ours.size()))
    return "size " + std::to_string(ours.size()) + " vs reference " + std::to_string(ref.numel());
  const double* r = ref.data_ptr<double>();
  double max_abs = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) max_abs = std::max(max_abs, std::abs(r[i]));
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double bound = tol.atol_of_max * max_abs + tol.rtol * std::abs(r[i]);
    if (!(std::abs(ours[static_cast<size_t>(i)] - r[i]) <= bound))
      return "index " + std::to_string(i) + ": ours " + std::to_string(ours[static_cast<size_t>(i)]) +
             " reference " + std::to_string(r[i]);
  }
  return {};
}

// Variadic so that a braced Tolerance{a, b} can be passed without extra parentheses.
#define EXPECT_MATCH(ours, reference, ...)                                   \
  do {                                                                       \
    const std::string why = mismatch((ours), (reference), (__VA_ARGS__));    \
    QVERIFY2(why.empty(), (std::string(#ours) + ": " + why).c_str()); \
  } while (0)

template <typename T>
constexpr Tolerance out_tol() {
  return std::is_same_v<T, float> ? kFp32 : kBf16Out;
}

}  // namespace

class TestKernelsTorch : public QObject {
  Q_OBJECT

  template <typename T>
  void layernorm(int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    const auto x = cast<T>(random_vector(rows * cols, rng, 3.0f));
    const auto dy = cast<T>(random_vector(rows * cols, rng));
    auto w = random_vector(cols, rng), b = random_vector(cols, rng);
    std::vector<T> y(x.size()), dx(x.size());
    std::vector<float> mean(rows), rstd(rows), dw(cols), db(cols);
    const float eps = 1e-5f;
    k::cpu::layernorm_forward(x.data(), w.data(), b.data(), y.data(), mean.data(), rstd.data(), rows, cols, eps);
    k::cpu::layernorm_backward(dy.data(), x.data(), w.data(), mean.data(), rstd.data(), dx.data(), dw.data(),
                               db.data(), rows, cols);
    auto tx = reference_input(x, {rows, cols}, true), tw = reference_input(w, {cols}, true),
         tb = reference_input(b, {cols}, true);
    auto ty = at::layer_norm(tx, {cols}, tw, tb, eps);
    ty.backward(reference_input(dy, {rows, cols}));
    EXPECT_MATCH(widen(y), ty, out_tol<T>());
    EXPECT_MATCH(mean, tx.mean(-1), kFp32);
    EXPECT_MATCH(rstd, (tx.var(-1, false) + eps).rsqrt(), kFp32);
    EXPECT_MATCH(widen(dx), tx.grad(), out_tol<T>());
    EXPECT_MATCH(dw, tw.grad(), Tolerance{1e-5, 1e-4});
    EXPECT_MATCH(db, tb.grad(), Tolerance{1e-5, 1e-4});
  }

  template <typename T>
  void rmsnorm(int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    const auto x = cast<T>(random_vector(rows * cols, rng, 2.0f));
    const auto dy = cast<T>(random_vector(rows * cols, rng));
    auto w = random_vector(cols, rng);
    std::vector<T> y(x.size()), dx(x.size());
    std::vector<float> rstd(rows), dw(cols);
    const float eps = 1e-6f;
    k::cpu::rmsnorm_forward(x.data(), w.data(), y.data(), rstd.data(), rows, cols, eps);
    k::cpu::rmsnorm_backward(dy.data(), x.data(), w.data(), rstd.data(), dx.data(), dw.data(), rows, cols);
    auto tx = reference_input(x, {rows, cols}, true), tw = reference_input(w, {cols}, true);
    const auto trstd = (tx.pow(2).mean(-1, true) + eps).rsqrt();
    auto ty = tx * trstd * tw;  // LLaMA's RMSNorm (torch.nn.RMSNorm computes the same)
    ty.backward(reference_input(dy, {rows, cols}));
    EXPECT_MATCH(widen(y), ty, out_tol<T>());
    EXPECT_MATCH(rstd, trstd, kFp32);
    EXPECT_MATCH(widen(dx), tx.grad(), out_tol<T>());
    EXPECT_MATCH(dw, tw.grad(), Tolerance{1e-5, 1e-4});
  }

  /// The vocabulary split into `shards` equal shards, driven exactly as the runtime's vocab-parallel
  /// loss drives them (max, all-reduce max, sumexp, all-reduce sum, loss; backward per shard).
  template <typename T>
  void vocab_cross_entropy(int64_t rows, int64_t shard_cols, int shards, uint32_t seed) {
    std::mt19937 rng(seed);
    const int64_t vocab = shard_cols * shards;
    const auto logits = cast<T>(random_vector(rows * vocab, rng, 4.0f));
    std::vector<int64_t> targets(rows);
    std::uniform_int_distribution<int64_t> pick(0, vocab - 1);
    for (auto& t : targets) t = pick(rng);
    targets[0] = vocab - 1;  // the last entry of the last shard
    const auto dloss = random_vector(rows, rng);
    std::vector<std::vector<T>> shard_logits(shards, std::vector<T>(rows * shard_cols));
    for (int s = 0; s < shards; ++s)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < shard_cols; ++c)
          shard_logits[s][r * shard_cols + c] = logits[r * vocab + s * shard_cols + c];
    std::vector<float> global_max(rows, -INFINITY), global_sumexp(rows, 0.0f), target_logit(rows, 0.0f);
    for (int s = 0; s < shards; ++s) {
      std::vector<float> row_max(rows);
      k::cpu::vocab_shard_max(shard_logits[s].data(), row_max.data(), rows, shard_cols);
      for (int64_t r = 0; r < rows; ++r) global_max[r] = std::max(global_max[r], row_max[r]);
    }
    for (int s = 0; s < shards; ++s) {
      std::vector<float> sumexp(rows), tl(rows);
      k::cpu::vocab_shard_sumexp(shard_logits[s].data(), global_max.data(), targets.data(), s * shard_cols,
                                 sumexp.data(), tl.data(), rows, shard_cols);
      for (int64_t r = 0; r < rows; ++r) {
        global_sumexp[r] += sumexp[r];
        target_logit[r] += tl[r];
      }
    }
    std::vector<float> loss(rows);
    k::cpu::vocab_loss(global_max.data(), global_sumexp.data(), target_logit.data(), loss.data(), rows);
    std::vector<float> dlogits(rows * vocab);
    for (int s = 0; s < shards; ++s) {
      std::vector<T> d(rows * shard_cols);
      k::cpu::vocab_shard_backward(shard_logits[s].data(), global_max.data(), global_sumexp.data(), targets.data(),
                                   s * shard_cols, dloss.data(), d.data(), rows, shard_cols);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < shard_cols; ++c)
          dlogits[r * vocab + s * shard_cols + c] = k::to_float(d[r * shard_cols + c]);
    }
    auto tl = reference_input(logits, {rows, vocab}, true);
    const auto tt = torch::tensor(targets, torch::kInt64);
    auto tloss = at::cross_entropy_loss(tl, tt, {}, at::Reduction::None);
    (tloss * reference_input(dloss, {rows})).sum().backward();
    EXPECT_MATCH(loss, tloss, Tolerance{1e-6, 2e-6});
    // Softmax entries are tiny next to the target's -1: compare them against the gradient's scale.
    EXPECT_MATCH(dlogits, tl.grad(), (std::is_same_v<T, float> ? Tolerance{1e-6, 1e-4} : Tolerance{2e-3, 8e-3}));
  }

  template <typename T>
  void rope(int64_t tokens, int64_t heads, int64_t head_dim, uint32_t seed) {
    std::mt19937 rng(seed);
    const auto x = cast<T>(random_vector(tokens * heads * head_dim, rng));
    const auto dy = cast<T>(random_vector(tokens * heads * head_dim, rng));
    std::vector<int64_t> positions(tokens);
    std::uniform_int_distribution<int64_t> pick(0, 2047);
    for (auto& p : positions) p = pick(rng);
    const float theta = 10000.0f;
    std::vector<T> y(x.size()), dx(x.size());
    k::cpu::rope_forward(x.data(), y.data(), positions.data(), tokens, heads, head_dim, theta);
    k::cpu::rope_backward(dy.data(), dx.data(), positions.data(), tokens, heads, head_dim, theta);
    // LLaMA's rotate-half convention, as in Hugging Face's apply_rotary_pos_emb.
    const int64_t half = head_dim / 2;
    auto tx = reference_input(x, {tokens, heads, head_dim}, true);
    const auto inv_freq = at::pow(double(theta), -at::arange(0, half, torch::kFloat64) * 2.0 / double(head_dim));
    const auto angle = torch::tensor(positions, torch::kInt64).to(torch::kFloat64).unsqueeze(1) * inv_freq;
    const auto cos = angle.cos().unsqueeze(1), sin = angle.sin().unsqueeze(1);
    const auto x1 = tx.narrow(-1, 0, half), x2 = tx.narrow(-1, half, half);
    auto ty = at::cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1);
    ty.backward(reference_input(dy, {tokens, heads, head_dim}));
    // The angle pos * theta^(-2i/d) is formed in fp32: at positions up to 2047 it carries up to
    // 2047 * 2^-24 rad of rounding, so fp32 outputs agree to about 1e-4 of their scale, not 1e-6.
    const Tolerance tol = std::is_same_v<T, float> ? Tolerance{3e-4, 3e-4} : kBf16Out;
    EXPECT_MATCH(widen(y), ty, tol);
    EXPECT_MATCH(widen(dx), tx.grad(), tol);
  }

  template <typename T>
  void bias_gelu(int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    const auto x = cast<T>(random_vector(rows * cols, rng, 2.0f));
    const auto dy = cast<T>(random_vector(rows * cols, rng));
    const auto bias = random_vector(cols, rng);
    std::vector<T> y(x.size()), dx(x.size());
    std::vector<float> dbias(cols);
    k::cpu::bias_gelu_forward(x.data(), bias.data(), y.data(), rows, cols);
    k::cpu::bias_gelu_backward(dy.data(), x.data(), bias.data(), dx.data(), dbias.data(), rows, cols);
    auto tx = reference_input(x, {rows, cols}, true), tb = reference_input(bias, {cols}, true);
    auto ty = at::gelu(tx + tb, "tanh");
    ty.backward(reference_input(dy, {rows, cols}));
    EXPECT_MATCH(widen(y), ty, out_tol<T>());
    EXPECT_MATCH(widen(dx), tx.grad(), out_tol<T>());
    EXPECT_MATCH(dbias, tb.grad(), Tolerance{1e-5, 1e-4});
  }

  template <typename T>
  void swiglu(int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    const auto gate_up = cast<T>(random_vector(rows * 2 * cols, rng, 3.0f));
    const auto dy = cast<T>(random_vector(rows * cols, rng));
    std::vector<T> y(rows * cols), dgate_up(rows * 2 * cols);
    k::cpu::swiglu_forward(gate_up.data(), y.data(), rows, cols);
    k::cpu::swiglu_backward(dy.data(), gate_up.data(), dgate_up.data(), rows, cols);
    // The model's ATen composition: chunk the last dimension into [gate | up].
    auto tx = reference_input(gate_up, {rows, 2 * cols}, true);
    const auto halves = tx.chunk(2, -1);
    auto ty = at::silu(halves[0]) * halves[1];
    ty.backward(reference_input(dy, {rows, cols}));
    EXPECT_MATCH(widen(y), ty.reshape({-1}), out_tol<T>());
    EXPECT_MATCH(widen(dgate_up), tx.grad().reshape({-1}), out_tol<T>());
  }

  /// Several steps of the multi-tensor AdamW against torch::optim::AdamW in float64 on three tensors
  /// of odd sizes; the model copy is the master rounded to T. With `grad_scale` (clipping) on every
  /// other step the reference gets those steps' gradients multiplied by it (on every step alike Adam's
  /// update would hardly notice a scale).
  template <typename T>
  void adamw(uint32_t seed, float grad_scale = 1.0f) {
    std::mt19937 rng(seed);
    const std::vector<int64_t> sizes = {1, 1001, 77};
    k::AdamWConfig cfg;
    cfg.lr = 3e-3f;
    cfg.beta1 = 0.9f;
    cfg.beta2 = 0.95f;
    cfg.eps = 1e-8f;
    cfg.weight_decay = 0.1f;
    std::vector<std::vector<float>> master, m, v, grad(sizes.size());
    std::vector<std::vector<T>> model;
    std::vector<torch::Tensor> params;
    for (int64_t n : sizes) {
      master.push_back(random_vector(n, rng));
      m.emplace_back(n, 0.0f);
      v.emplace_back(n, 0.0f);
      model.emplace_back(n);
      params.push_back(reference_input(master.back(), {n}, true));
    }
    torch::optim::AdamW reference(params, torch::optim::AdamWOptions(cfg.lr)
                                              .betas({cfg.beta1, cfg.beta2})
                                              .eps(cfg.eps)
                                              .weight_decay(cfg.weight_decay));
    for (int64_t step = 1; step <= 5; ++step) {
      std::vector<k::AdamWTensor<T>> tensors;
      for (size_t i = 0; i < sizes.size(); ++i) {
        grad[i] = random_vector(sizes[i], rng, 0.1f * float(step));
        cfg.grad_scale = step % 2 == 0 ? grad_scale : 1.0f;
        std::vector<float> scaled = grad[i];
        for (float& g : scaled) g *= cfg.grad_scale;
        params[i].mutable_grad() = reference_input(scaled, {sizes[i]});
        tensors.push_back({master[i].data(), model[i].data(), grad[i].data(), m[i].data(), v[i].data(), sizes[i]});
      }
      cfg.step = step;
      k::cpu::adamw_step(tensors.data(), static_cast<int64_t>(tensors.size()), cfg);
      reference.step();
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      EXPECT_MATCH(master[i], params[i], Tolerance{1e-6, 1e-5});
      for (int64_t j = 0; j < sizes[i]; ++j)
        QCOMPARE(k::to_float(model[i][j]), k::to_float(k::from_float<T>(master[i][j])));
    }
  }

 private slots:
  void initTestCase() { torch::set_num_threads(1); }

  void layernormFp32() { layernorm<float>(7, 1023, 1); }
  void layernormBf16() { layernorm<bf16>(5, 4096 + 3, 2); }
  void rmsnormFp32() { rmsnorm<float>(9, 777, 3); }
  void rmsnormBf16() { rmsnorm<bf16>(4, 2049, 4); }
  void vocabCrossEntropyFp32() { vocab_cross_entropy<float>(6, 1001, 3, 5); }
  void vocabCrossEntropyBf16() { vocab_cross_entropy<bf16>(5, 501, 2, 6); }
  void vocabCrossEntropyLargeShard() { vocab_cross_entropy<float>(3, 50257 / 4 + 1, 4, 7); }
  void ropeFp32() { rope<float>(13, 3, 64, 8); }
  void ropeBf16() { rope<bf16>(11, 5, 128, 9); }
  void biasGeluFp32() { bias_gelu<float>(7, 333, 10); }
  void biasGeluBf16() { bias_gelu<bf16>(6, 517, 11); }
  void swigluFp32() { swiglu<float>(37, 81, 12); }
  void swigluBf16() { swiglu<bf16>(19, 107, 13); }
  void adamwFp32() { adamw<float>(14); }
  void adamwBf16Model() { adamw<bf16>(15); }
  void adamwClippedGradients() { adamw<bf16>(16, 0.37f); }
};

QTEST_APPLESS_MAIN(TestKernelsTorch)
#include "test_kernels_torch.moc"
