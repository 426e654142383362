// The kernels' CPU references against their definitions: finite-difference gradients, identities
// (RoPE inverse, sharded cross-entropy equals the full one), hand-computed AdamW, bf16 rounding.
#include <QtTest/QtTest>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "kernels.hpp"

namespace k = tessera::kernels;
using k::bf16;

namespace {

std::vector<float> random_vector(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

// Largest |analytic - numeric| / max(1, |numeric|) over the first `count` inputs, central differences
// of loss(x) = <dy, f(x)>.
double gradient_error(std::vector<float> x, const std::vector<float>& analytic, const std::function<double(const std::vector<float>&)>& loss,
                      size_t count, float step = 1e-2f) {
  double worst = 0;
  for (size_t i = 0; i < count && i < x.size(); ++i) {
    const float saved = x[i];
    x[i] = saved + step;
    const double up = loss(x);
    x[i] = saved - step;
    const double down = loss(x);
    x[i] = saved;
    const double numeric = (up - down) / (2 * step);
    worst = std::max(worst, std::abs(analytic[i] - numeric) / std::max(1.0, std::abs(numeric)));
  }
  return worst;
}

}  // namespace

class TestKernelsCpu : public QObject {
  Q_OBJECT
 private slots:
  void bf16RoundsToNearestEven() {
    QCOMPARE(static_cast<float>(bf16(1.0f)), 1.0f);
    QCOMPARE(static_cast<float>(bf16(-2.5f)), -2.5f);
    // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
    QCOMPARE(static_cast<float>(bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
    QCOMPARE(static_cast<float>(bf16(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
    QVERIFY(std::isnan(static_cast<float>(bf16(std::nanf("")))));
    QCOMPARE(bf16(3.0f).bits, uint16_t{0x4040});
  }

  void layernormForwardNormalisesAndBackwardMatchesFiniteDifferences() {
    std::mt19937 rng(1);
    const int64_t rows = 3, cols = 37;
    const auto x = random_vector(rows * cols, rng, 2.0f);
    const auto w = random_vector(cols, rng);
    const auto b = random_vector(cols, rng);
    const auto dy = random_vector(rows * cols, rng);
    std::vector<float> ones(cols, 1.0f), zeros(cols, 0.0f), y(rows * cols), mean(rows), rstd(rows);
    k::cpu::layernorm_forward(x.data(), ones.data(), zeros.data(), y.data(), mean.data(), rstd.data(), rows, cols, 1e-5f);
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0, sq = 0;
      for (int64_t c = 0; c < cols; ++c) s += y[r * cols + c];
      for (int64_t c = 0; c < cols; ++c) sq += y[r * cols + c] * y[r * cols + c];
      QVERIFY(std::abs(s / cols) < 1e-5);
      QVERIFY(std::abs(sq / cols - 1) < 1e-3);
    }
    std::vector<float> dx(rows * cols), dw(cols), db(cols);
    auto loss = [&](const std::vector<float>& in) {
      std::vector<float> out(rows * cols), m(rows), rs(rows);
      k::cpu::layernorm_forward(in.data(), w.data(), b.data(), out.data(), m.data(), rs.data(), rows, cols, 1e-5f);
      return dot(dy, out);
    };
    k::cpu::layernorm_forward(x.data(), w.data(), b.data(), y.data(), mean.data(), rstd.data(), rows, cols, 1e-5f);
    k::cpu::layernorm_backward(dy.data(), x.data(), w.data(), mean.data(), rstd.data(), dx.data(), dw.data(), db.data(), rows, cols);
    QVERIFY(gradient_error(x, dx, loss, x.size()) < 2e-3);
    // dbias = sum over rows of dy.
    for (int64_t c = 0; c < cols; ++c) QCOMPARE(db[c], dy[c] + dy[cols + c] + dy[2 * cols + c]);
  }

  void rmsnormBackwardMatchesFiniteDifferences() {
    std::mt19937 rng(2);
    const int64_t rows = 2, cols = 33;
    const auto x = random_vector(rows * cols, rng);
    const auto w = random_vector(cols, rng);
    const auto dy = random_vector(rows * cols, rng);
    std::vector<float> y(rows * cols), rstd(rows), dx(rows * cols), dw(cols);
    k::cpu::rmsnorm_forward(x.data(), w.data(), y.data(), rstd.data(), rows, cols, 1e-6f);
    k::cpu::rmsnorm_backward(dy.data(), x.data(), w.data(), rstd.data(), dx.data(), dw.data(), rows, cols);
    auto loss = [&](const std::vector<float>& in) {
      std::vector<float> out(rows * cols), rs(rows);
      k::cpu::rmsnorm_forward(in.data(), w.data(), out.data(), rs.data(), rows, cols, 1e-6f);
      return dot(dy, out);
    };
    QVERIFY(gradient_error(x, dx, loss, x.size()) < 2e-3);
    auto loss_w = [&](const std::vector<float>& weight) {
      std::vector<float> out(rows * cols), rs(rows);
      k::cpu::rmsnorm_forward(x.data(), weight.data(), out.data(), rs.data(), rows, cols, 1e-6f);
      return dot(dy, out);
    };
    QVERIFY(gradient_error(w, dw, loss_w, w.size()) < 2e-3);
  }

  void shardedCrossEntropyEqualsTheFullOne() {
    std::mt19937 rng(3);
    const int64_t rows = 5, vocab = 1001, split = 400;  // two uneven shards [0, 400) and [400, 1001)
    const auto logits = random_vector(rows * vocab, rng, 3.0f);
    const std::vector<int64_t> targets = {0, 399, 400, 1000, 123};
    std::vector<float> shard0(rows * split), shard1(rows * (vocab - split));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < vocab; ++c)
        (c < split ? shard0[r * split + c] : shard1[r * (vocab - split) + c - split]) = logits[r * vocab + c];
    std::vector<float> m0(rows), m1(rows), gmax(rows), s0(rows), s1(rows), t0(rows), t1(rows), gsum(rows), gt(rows), loss(rows);
    k::cpu::vocab_shard_max(shard0.data(), m0.data(), rows, split);
    k::cpu::vocab_shard_max(shard1.data(), m1.data(), rows, vocab - split);
    for (int64_t r = 0; r < rows; ++r) gmax[r] = std::max(m0[r], m1[r]);  // the all-reduce MAX
    k::cpu::vocab_shard_sumexp(shard0.data(), gmax.data(), targets.data(), 0, s0.data(), t0.data(), rows, split);
    k::cpu::vocab_shard_sumexp(shard1.data(), gmax.data(), targets.data(), split, s1.data(), t1.data(), rows, vocab - split);
    for (int64_t r = 0; r < rows; ++r) {
      gsum[r] = s0[r] + s1[r];  // the all-reduce SUM
      gt[r] = t0[r] + t1[r];
    }
    k::cpu::vocab_loss(gmax.data(), gsum.data(), gt.data(), loss.data(), rows);
    for (int64_t r = 0; r < rows; ++r) {
      double z = 0;
      for (int64_t c = 0; c < vocab; ++c) z += std::exp(static_cast<double>(logits[r * vocab + c]));
      const double expected = std::log(z) - logits[r * vocab + targets[r]];
      QVERIFY2(std::abs(loss[r] - expected) < 1e-4, std::to_string(r).c_str());
    }
    // Backward: gradients of each row sum to zero over the whole vocabulary, and match finite differences.
    std::vector<float> dloss(rows, 1.0f), d0(rows * split), d1(rows * (vocab - split));
    k::cpu::vocab_shard_backward(shard0.data(), gmax.data(), gsum.data(), targets.data(), 0, dloss.data(), d0.data(), rows, split);
    k::cpu::vocab_shard_backward(shard1.data(), gmax.data(), gsum.data(), targets.data(), split, dloss.data(), d1.data(), rows,
                                 vocab - split);
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int64_t c = 0; c < split; ++c) sum += d0[r * split + c];
      for (int64_t c = 0; c < vocab - split; ++c) sum += d1[r * (vocab - split) + c];
      QVERIFY(std::abs(sum) < 1e-5);
    }
    auto row0_loss = [&](const std::vector<float>& shard) {
      std::vector<float> mx(rows), se(rows), tl(rows), l(rows);
      k::cpu::vocab_shard_max(shard.data(), mx.data(), rows, split);
      k::cpu::vocab_shard_sumexp(shard.data(), mx.data(), targets.data(), 0, se.data(), tl.data(), rows, split);
      k::cpu::vocab_loss(mx.data(), se.data(), tl.data(), l.data(), rows);
      return static_cast<double>(l[0]);
    };
    // Single-shard check on row 0 (target 0 is in shard 0).
    std::vector<float> m_single(rows), s_single(rows), t_single(rows), d_single(rows * split);
    k::cpu::vocab_shard_max(shard0.data(), m_single.data(), rows, split);
    k::cpu::vocab_shard_sumexp(shard0.data(), m_single.data(), targets.data(), 0, s_single.data(), t_single.data(), rows, split);
    std::vector<float> only_row0(rows, 0.0f);
    only_row0[0] = 1.0f;
    k::cpu::vocab_shard_backward(shard0.data(), m_single.data(), s_single.data(), targets.data(), 0, only_row0.data(),
                                 d_single.data(), rows, split);
    QVERIFY(gradient_error(shard0, d_single, row0_loss, 40, 1e-2f) < 2e-3);
  }

  void ropeIsARotationAndBackwardItsInverse() {
    std::mt19937 rng(4);
    const int64_t tokens = 5, heads = 3, head_dim = 16;
    const auto x = random_vector(tokens * heads * head_dim, rng);
    const std::vector<int64_t> positions = {0, 1, 7, 100, 4095};
    std::vector<float> y(x.size()), back(x.size());
    k::cpu::rope_forward(x.data(), y.data(), positions.data(), tokens, heads, head_dim, 10000.0f);
    for (int64_t i = 0; i < heads * head_dim; ++i) QCOMPARE(y[i], x[i]);  // position 0: identity
    QVERIFY(std::abs(dot(y, y) - dot(x, x)) < 1e-3 * dot(x, x));        // rotations keep the norm
    k::cpu::rope_backward(y.data(), back.data(), positions.data(), tokens, heads, head_dim, 10000.0f);
    for (size_t i = 0; i < x.size(); ++i) QVERIFY(std::abs(back[i] - x[i]) < 1e-5);
    // Position 1, pair 0 rotates by exactly 1 radian.
    const float a = x[heads * head_dim], b = x[heads * head_dim + head_dim / 2];
    QVERIFY(std::abs(y[heads * head_dim] - (a * std::cos(1.0f) - b * std::sin(1.0f))) < 1e-6);
  }

  void adamwFirstStepByHand() {
    std::vector<float> master = {1.0f, -2.0f, 0.5f}, grad = {0.1f, -0.2f, 0.0f}, m(3, 0.0f), v(3, 0.0f);
    std::vector<bf16> model(3);
    k::AdamWTensor<bf16> t{master.data(), model.data(), grad.data(), m.data(), v.data(), 3};
    k::AdamWConfig cfg;
    cfg.lr = 0.01f;
    cfg.beta1 = 0.9f;
    cfg.beta2 = 0.95f;
    cfg.eps = 1e-8f;
    cfg.weight_decay = 0.1f;
    cfg.step = 1;
    k::cpu::adamw_step(&t, 1, cfg);
    // Step 1: m_hat = g, v_hat = g^2, so the update is g / (|g| + eps) = sign(g).
    QVERIFY(std::abs(master[0] - (1.0f * (1 - 0.001f) - 0.01f)) < 1e-6);
    QVERIFY(std::abs(master[1] - (-2.0f * (1 - 0.001f) + 0.01f)) < 1e-6);
    QVERIFY(std::abs(master[2] - 0.5f * (1 - 0.001f)) < 1e-7);
    QVERIFY(std::abs(m[1] - (-0.02f)) < 1e-7);
    QVERIFY(std::abs(v[1] - 0.05f * 0.04f) < 1e-8);
    QCOMPARE(static_cast<float>(model[0]), static_cast<float>(bf16(master[0])));
  }

  void activationsMatchFiniteDifferences() {
    std::mt19937 rng(5);
    const int64_t rows = 4, cols = 9;
    const auto x = random_vector(rows * cols, rng, 2.0f);
    const auto bias = random_vector(cols, rng);
    const auto dy = random_vector(rows * cols, rng);
    std::vector<float> y(x.size()), dx(x.size()), dbias(cols);
    const std::vector<float> zero_bias(cols, 0.0f);
    const std::vector<float> probe = {0.0f, 10.0f, -10.0f};
    std::vector<float> probe_out(3);
    k::cpu::bias_gelu_forward(probe.data(), zero_bias.data(), probe_out.data(), 1, 3);
    QCOMPARE(probe_out[0], 0.0f);
    QVERIFY(std::abs(probe_out[1] - 10.0f) < 1e-5 && std::abs(probe_out[2]) < 1e-5);
    k::cpu::bias_gelu_backward(dy.data(), x.data(), bias.data(), dx.data(), dbias.data(), rows, cols);
    auto gelu_loss = [&](const std::vector<float>& in) {
      std::vector<float> out(in.size());
      k::cpu::bias_gelu_forward(in.data(), bias.data(), out.data(), rows, cols);
      return dot(dy, out);
    };
    QVERIFY(gradient_error(x, dx, gelu_loss, x.size(), 1e-3f) < 2e-3);
    for (int64_t c = 0; c < cols; ++c) {
      double expected = 0;
      for (int64_t r = 0; r < rows; ++r) expected += dx[r * cols + c];
      QVERIFY(std::abs(dbias[c] - expected) < 1e-5);
    }
    // SwiGLU on rows of [gate | up]: both halves' gradients against finite differences, and the
    // layout: row r's output reads only row r's two halves.
    const auto gate_up = random_vector(rows * 2 * cols, rng, 2.0f);
    std::vector<float> dgate_up(gate_up.size());
    k::cpu::swiglu_backward(dy.data(), gate_up.data(), dgate_up.data(), rows, cols);
    auto swiglu_loss = [&](const std::vector<float>& in) {
      std::vector<float> out(rows * cols);
      k::cpu::swiglu_forward(in.data(), out.data(), rows, cols);
      return dot(dy, out);
    };
    QVERIFY(gradient_error(gate_up, dgate_up, swiglu_loss, gate_up.size(), 1e-3f) < 2e-3);
    std::vector<float> one_row(2 * cols);
    std::copy(gate_up.begin() + 2 * 2 * cols, gate_up.begin() + 3 * 2 * cols, one_row.begin());
    std::vector<float> all_out(rows * cols), row_out(cols);
    k::cpu::swiglu_forward(gate_up.data(), all_out.data(), rows, cols);
    k::cpu::swiglu_forward(one_row.data(), row_out.data(), 1, cols);
    QVERIFY(std::equal(row_out.begin(), row_out.end(), all_out.begin() + 2 * cols));
    const float g0 = gate_up[2 * 2 * cols], u0 = gate_up[2 * 2 * cols + cols];
    QVERIFY(std::abs(row_out[0] - g0 / (1 + std::exp(-g0)) * u0) < 1e-5);
  }
};

QTEST_APPLESS_MAIN(TestKernelsCpu)
#include "test_kernels_cpu.moc"
