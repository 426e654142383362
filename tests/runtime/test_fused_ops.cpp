// The fused kernels as autograd ops (runtime/model/fused_ops.hpp) against the ATen compositions the
// model uses otherwise: forward values and every gradient (random upstream gradients) on odd shapes,
// in fp32 (tight) and bf16 (against ATen in fp32 on the same bf16-rounded inputs). The vocab-parallel
// cross-entropy also on two ranks (threads, Gloo) against the full-vocabulary cross-entropy.
// LibTorch before Qt: Qt's `slots` macro would break LibTorch's headers.
// moc needs none of these (it reads the test class alone); LibTorch would cost it ~20 s.
#ifndef Q_MOC_RUN
#include <torch/torch.h>

#include <QtTest/QtTest>

#include <functional>
#include <mutex>
#include <thread>

#include "runtime/comm/gloo_world.hpp"
#include "runtime/comm/solo_communicator.hpp"
#include "runtime/launch/local_launcher.hpp"
#include "runtime/model/fused_ops.hpp"
#include "thread_ranks.hpp"
#endif

using namespace tessera::runtime;

namespace {

constexpr int64_t kRows = 37, kCols = 129;

/// max |got - want| / max |want|, both compared in double.
double error(const at::Tensor& got, const at::Tensor& want) {
  const at::Tensor g = got.detach().to(at::kDouble), w = want.detach().to(at::kDouble);
  if (g.sizes() != w.sizes()) throw std::runtime_error("shape " + c10::str(g.sizes()) + " vs " + c10::str(w.sizes()));
  return (g - w).abs().max().item<double>() / std::max(w.abs().max().item<double>(), 1e-30);
}

/// Tolerances: fp32 outputs, and bf16 outputs (one rounding to 8 bits of mantissa).
double tolerance(at::ScalarType dtype) { return dtype == at::kFloat ? 1e-5 : 1e-2; }

#define CHECK_CLOSE(name, got, want, tol)                                                                         \
  do {                                                                                                            \
    const double e_ = error(got, want);                                                                           \
    qInfo("%s: max error %.3g (relative to max |ref|), tolerance %.0e", name, e_, tol);               \
    QVERIFY2(e_ < (tol), qPrintable(QString("%1: error %2 >= %3").arg(name).arg(e_).arg(tol)));                   \
  } while (0)

/// x in `dtype`, requiring grad, and its fp32 copy (the same rounded values) for the reference.
std::pair<at::Tensor, at::Tensor> input(at::IntArrayRef shape, at::ScalarType dtype, double scale = 1.0,
                                        double shift = 0.0) {
  const at::Tensor x = (at::randn(shape) * scale + shift).to(dtype).requires_grad_();
  const at::Tensor ref = x.detach().to(at::kFloat).requires_grad_();
  return {x, ref};
}

void add_dtypes() {
  QTest::addColumn<int>("dtype");
  QTest::newRow("fp32") << static_cast<int>(at::kFloat);
  QTest::newRow("bf16") << static_cast<int>(at::kBFloat16);
}

using tessera::test::run_ranks;

}  // namespace

class TestFusedOps : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    at::set_num_threads(1);
    at::manual_seed(20261130);
  }

  void layerNorm_data() { add_dtypes(); }
  void layerNorm() {
    QFETCH(int, dtype);
    const auto dt = static_cast<at::ScalarType>(dtype);
    auto [x, x_ref] = input({kRows, 3, kCols}, dt, 2.0, 0.5);  // a non-zero mean
    // Parameters in the activation dtype: the gradients come back in it.
    auto [w, w_ref] = input({kCols}, dt);
    auto [b, b_ref] = input({kCols}, dt);
    const at::Tensor y = fused_layer_norm(x, w, b, 1e-5);
    const at::Tensor y_ref = at::layer_norm(x_ref, {kCols}, w_ref, b_ref, 1e-5);
    QCOMPARE(y.scalar_type(), dt);
    CHECK_CLOSE("y", y, y_ref, tolerance(dt));
    const at::Tensor g = at::randn(y.sizes()).to(dt);
    y.backward(g);
    y_ref.backward(g.to(at::kFloat));
    QCOMPARE(w.grad().scalar_type(), dt);
    CHECK_CLOSE("dx", x.grad(), x_ref.grad(), tolerance(dt));
    CHECK_CLOSE("dweight", w.grad(), w_ref.grad(), tolerance(dt));
    CHECK_CLOSE("dbias", b.grad(), b_ref.grad(), tolerance(dt));
  }

  // fp32 parameters with bf16 activations (the mixed-precision case): fp32 gradients, tight.
  void layerNormFp32WeightsOnBf16() {
    auto [x, x_ref] = input({kRows, kCols}, at::kBFloat16);
    auto [w, w_ref] = input({kCols}, at::kFloat);
    auto [b, b_ref] = input({kCols}, at::kFloat);
    const at::Tensor y = fused_layer_norm(x, w, b, 1e-5);
    const at::Tensor y_ref = at::layer_norm(x_ref, {kCols}, w_ref, b_ref, 1e-5);
    const at::Tensor g = at::randn(y.sizes()).to(at::kBFloat16);
    y.backward(g);
    y_ref.backward(g.to(at::kFloat));
    QCOMPARE(w.grad().scalar_type(), at::kFloat);
    CHECK_CLOSE("dweight", w.grad(), w_ref.grad(), 1e-4);
    CHECK_CLOSE("dbias", b.grad(), b_ref.grad(), 1e-4);
  }

  void rmsNorm_data() { add_dtypes(); }
  void rmsNorm() {
    QFETCH(int, dtype);
    const auto dt = static_cast<at::ScalarType>(dtype);
    auto [x, x_ref] = input({kRows, kCols}, dt, 3.0);
    auto [w, w_ref] = input({kCols}, dt);
    const at::Tensor y = fused_rms_norm(x, w, 1e-5);
    const at::Tensor y_ref = at::rms_norm(x_ref, {kCols}, w_ref, 1e-5);
    CHECK_CLOSE("y", y, y_ref, tolerance(dt));
    const at::Tensor g = at::randn(y.sizes()).to(dt);
    y.backward(g);
    y_ref.backward(g.to(at::kFloat));
    QCOMPARE(w.grad().scalar_type(), dt);
    CHECK_CLOSE("dx", x.grad(), x_ref.grad(), tolerance(dt));
    CHECK_CLOSE("dweight", w.grad(), w_ref.grad(), tolerance(dt));
  }

  // The model's convention (transformer.cpp): angles pos * theta^(-2i/d) duplicated over both halves,
  // y = x cos + rotate_half(x) sin; here in double, so only the kernel's rounding is measured.
  void rope_data() { add_dtypes(); }
  void rope() {
    QFETCH(int, dtype);
    const auto dt = static_cast<at::ScalarType>(dtype);
    const int64_t tokens = kRows, heads = 3, d = 66;
    auto [x, x_ref] = input({tokens, heads, d}, dt);
    const at::Tensor positions = at::randint(0, 512, {tokens}, at::kLong);
    const double theta = 10000.0;
    auto reference = [&](const at::Tensor& v) {
      const auto inv_freq =
          at::pow(theta, at::arange(0, d, 2, at::kDouble) / static_cast<double>(d)).reciprocal();
      const auto angles = at::outer(positions.to(at::kDouble), inv_freq);
      const auto both = at::cat({angles, angles}, -1).unsqueeze(1);  // [tokens, 1, d]
      const auto halves = v.chunk(2, -1);
      return v * both.cos() + at::cat({-halves[1], halves[0]}, -1) * both.sin();
    };
    const at::Tensor y = fused_rope(x, positions, theta);
    const at::Tensor x64 = x_ref.detach().to(at::kDouble).requires_grad_();
    const at::Tensor y_ref = reference(x64);
    CHECK_CLOSE("y", y, y_ref, tolerance(dt));
    const at::Tensor g = at::randn(y.sizes()).to(dt);
    y.backward(g);
    y_ref.backward(g.to(at::kDouble));
    CHECK_CLOSE("dx", x.grad(), x64.grad(), tolerance(dt));
    // A non-contiguous input (the model passes a slice of the fused qkv) gives the same result.
    const at::Tensor wide = at::cat({x.detach(), x.detach()}, -1).narrow(-1, 0, d);
    QVERIFY(!wide.is_contiguous());
    QVERIFY(at::equal(fused_rope(wide, positions, theta), y.detach()));
  }

  void biasGelu_data() { add_dtypes(); }
  void biasGelu() {
    QFETCH(int, dtype);
    const auto dt = static_cast<at::ScalarType>(dtype);
    auto [x, x_ref] = input({kRows, 2, kCols}, dt, 2.0);
    auto [b, b_ref] = input({kCols}, at::kFloat);
    const at::Tensor y = fused_bias_gelu(x, b);
    const at::Tensor y_ref = at::gelu(x_ref + b_ref, "tanh");
    CHECK_CLOSE("y", y, y_ref, tolerance(dt));
    const at::Tensor g = at::randn(y.sizes()).to(dt);
    y.backward(g);
    y_ref.backward(g.to(at::kFloat));
    CHECK_CLOSE("dx", x.grad(), x_ref.grad(), tolerance(dt));
    CHECK_CLOSE("dbias", b.grad(), b_ref.grad(), 1e-4);
  }

  void swiglu_data() { add_dtypes(); }
  void swiglu() {
    QFETCH(int, dtype);
    const auto dt = static_cast<at::ScalarType>(dtype);
    auto [x, x_ref] = input({kRows, 2, 2 * kCols}, dt, 2.0);
    const at::Tensor y = fused_swiglu(x);
    const auto halves = x_ref.chunk(2, -1);
    const at::Tensor y_ref = at::silu(halves[0]) * halves[1];
    QCOMPARE(y.sizes(), y_ref.sizes());
    CHECK_CLOSE("y", y, y_ref, tolerance(dt));
    const at::Tensor g = at::randn(y.sizes()).to(dt);
    y.backward(g);
    y_ref.backward(g.to(at::kFloat));
    CHECK_CLOSE("dgate", x.grad().chunk(2, -1)[0], x_ref.grad().chunk(2, -1)[0], tolerance(dt));
    CHECK_CLOSE("dup", x.grad().chunk(2, -1)[1], x_ref.grad().chunk(2, -1)[1], tolerance(dt));
  }

  // One rank: the whole vocabulary, against log_softmax + NLL.
  void vocabCrossEntropySolo_data() { add_dtypes(); }
  void vocabCrossEntropySolo() {
    QFETCH(int, dtype);
    const auto dt = static_cast<at::ScalarType>(dtype);
    auto [logits, logits_ref] = input({kRows, 2 * kCols}, dt, 4.0);
    const at::Tensor targets = at::randint(0, 2 * kCols, {kRows}, at::kLong);
    SoloCommunicator solo("tp", 0);
    const at::Tensor loss = fused_vocab_parallel_cross_entropy(logits, targets, solo);
    const at::Tensor loss_ref = at::nll_loss(at::log_softmax(logits_ref, -1), targets, {}, at::Reduction::None);
    QCOMPARE(loss.scalar_type(), at::kFloat);
    CHECK_CLOSE("loss", loss, loss_ref, 1e-5);  // fp32 statistics in both dtypes
    const at::Tensor g = at::randn({kRows});
    loss.backward(g);
    loss_ref.backward(g);
    QCOMPARE(logits.grad().scalar_type(), dt);
    CHECK_CLOSE("dlogits", logits.grad(), logits_ref.grad(), tolerance(dt));
  }

  // Two ranks (threads), each with half of the vocabulary; targets fall in both halves.
  void vocabCrossEntropyTwoRanks_data() { add_dtypes(); }
  void vocabCrossEntropyTwoRanks() {
    QFETCH(int, dtype);
    const auto dt = static_cast<at::ScalarType>(dtype);
    auto [logits, logits_ref] = input({kRows, 2 * kCols}, dt, 4.0);
    const at::Tensor targets = at::randint(0, 2 * kCols, {kRows}, at::kLong);
    const at::Tensor loss_ref = at::nll_loss(at::log_softmax(logits_ref, -1), targets, {}, at::Reduction::None);
    const at::Tensor g = at::randn({kRows});
    loss_ref.backward(g);
    std::vector<at::Tensor> losses(2), grads(2);
    const auto failures = run_ranks(2, [&](int rank, GlooWorld& world) {
      auto tp = world.make_group("tp", {0, 1});
      const at::Tensor shard = logits.detach().narrow(1, rank * kCols, kCols).clone().requires_grad_();
      at::Tensor loss = fused_vocab_parallel_cross_entropy(shard, targets, *tp);
      loss.backward(g);
      losses[rank] = loss.detach();
      grads[rank] = shard.grad();
    });
    QVERIFY2(failures.empty(), failures.empty() ? "" : failures.front().c_str());
    CHECK_CLOSE("loss rank 0", losses[0], loss_ref, 1e-5);
    CHECK_CLOSE("loss rank 1", losses[1], loss_ref, 1e-5);
    CHECK_CLOSE("dlogits", at::cat({grads[0], grads[1]}, 1), logits_ref.grad(), tolerance(dt));
  }

  void unsupportedDtypeIsNamed() {
    const at::Tensor x = at::randn({4, 8}, at::kDouble);
    try {
      fused_rms_norm(x, at::ones({8}), 1e-5);
      QFAIL("no exception for a double input");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).contains("Double"), e.what());
    }
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, fused_swiglu(at::randn({4, 8}, at::kHalf)));
  }
};

QTEST_APPLESS_MAIN(TestFusedOps)
#include "test_fused_ops.moc"
