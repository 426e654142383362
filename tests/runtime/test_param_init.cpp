// The weights' initialisation: Philox4x32-10 against Random123's known answers, normal numbers drawn
// in any piece equal to the same numbers drawn at once, every tp rank's block of a weight equal to its
// part of the single-process tensor (rows, columns, a middle dim) on any number of threads, and the
// numbers normal in mean, spread and tails.
// LibTorch before Qt: Qt's `slots` macro would break LibTorch's headers.
// moc needs none of these (it reads the test class alone); LibTorch would cost it ~20 s.
#ifndef Q_MOC_RUN
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <QtTest/QtTest>

#include <cmath>
#include <vector>

#include "runtime/model/counter_rng.hpp"
#include "runtime/model/param_store.hpp"
#endif

using namespace tessera::runtime;

namespace {

// This rank's block of `name` for every tp rank, joined along `dim`.
at::Tensor joined_blocks(const std::string& name, std::vector<int64_t> shape, int64_t dim, int64_t tp) {
  std::vector<at::Tensor> blocks;
  for (int64_t rank = 0; rank < tp; ++rank) blocks.push_back(ParamStore(11, rank, tp).normal(name, shape, 0.02, Shard::along(dim)));
  return at::cat(blocks, dim);
}

}  // namespace

class TestParamInit : public QObject {
  Q_OBJECT
 private slots:
  // Random123's kat_vectors (philox4x32 10): counter, key → the four words.
  void philoxKnownAnswers() {
    using W4 = std::array<uint32_t, 4>;
    QCOMPARE(philox4x32_10({0, 0, 0, 0}, {0, 0}), (W4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
    QCOMPARE(philox4x32_10({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}), (W4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
    QCOMPARE(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
             (W4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
  }

  // The float polynomials for log, sin and cos against Box-Muller in double with libm, on the same words.
  void boxMullerAgreesWithLibm() {
    constexpr uint64_t key = 0x1234567890abcdefULL;
    constexpr int64_t n = 40000;
    std::vector<float> z(n);
    normal_range(key, 0, n, 1.0f, z.data());
    double worst = 0;
    for (int64_t block = 0; block < n / 4; ++block) {
      const auto w = philox4x32_10({static_cast<uint32_t>(block), 0, 0, 0},
                                   {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
      for (int pair = 0; pair < 2; ++pair) {
        const double u1 = ((w[2 * pair] >> 8) + 0.5) / 16777216.0, u2 = (w[2 * pair + 1] >> 8) / 16777216.0;
        const double radius = std::sqrt(-2.0 * std::log(u1));
        worst = std::max({worst, std::abs(z[4 * block + 2 * pair] - radius * std::cos(2 * M_PI * u2)),
                          std::abs(z[4 * block + 2 * pair + 1] - radius * std::sin(2 * M_PI * u2))});
      }
    }
    QVERIFY2(worst < 5e-6, qPrintable(QString::number(worst)));
  }

  // Pieces that start and end inside Philox's blocks of four give exactly the numbers of one draw.
  void anyPieceIsTheSameNumbers() {
    constexpr int64_t n = 1001;
    std::vector<float> whole(n), pieces(n);
    normal_range(42, 5, n, 1.0f, whole.data());
    for (int64_t first = 0, size = 1; first < n; first += size, size = size % 7 + 2)
      normal_range(42, 5 + first, std::min(size, n - first), 1.0f, pieces.data() + first);
    QCOMPARE(pieces, whole);
    std::vector<float> other(n);
    normal_range(43, 5, n, 1.0f, other.data());
    QVERIFY(other != whole);
  }

  void blocksJoinIntoTheSingleProcessTensor_data() {
    QTest::addColumn<QList<qint64>>("shape");
    QTest::addColumn<int>("dim");
    QTest::addColumn<int>("tp");
    QTest::newRow("rows, tp 2") << QList<qint64>{6, 10} << 0 << 2;
    QTest::newRow("columns, tp 2") << QList<qint64>{6, 10} << 1 << 2;
    QTest::newRow("columns of odd rows, tp 5") << QList<qint64>{7, 15} << 1 << 5;
    QTest::newRow("middle dim, tp 3") << QList<qint64>{4, 9, 5} << 1 << 3;
    QTest::newRow("rows of a vocabulary, tp 8") << QList<qint64>{1000, 33} << 0 << 8;
    QTest::newRow("columns past the thread grain, tp 4") << QList<qint64>{3, 40000} << 1 << 4;
  }
  void blocksJoinIntoTheSingleProcessTensor() {
    QFETCH(QList<qint64>, shape);
    QFETCH(int, dim);
    QFETCH(int, tp);
    const std::vector<int64_t> full_shape(shape.begin(), shape.end());
    at::set_num_threads(1);
    const at::Tensor single = ParamStore(11, 0, 1).normal("layers.0.w", full_shape, 0.02, Shard::along(dim));
    QCOMPARE(single.sizes().vec(), full_shape);
    QVERIFY(at::equal(joined_blocks("layers.0.w", full_shape, dim, tp), single));
    for (int threads : {2, 3}) {  // the blocks and the whole drawn on several threads: the same numbers
      at::set_num_threads(threads);
      QVERIFY(at::equal(joined_blocks("layers.0.w", full_shape, dim, tp), single));
      QVERIFY(at::equal(ParamStore(11, 0, 1).normal("layers.0.w", full_shape, 0.02, Shard::along(dim)), single));
    }
    // Another name or seed, other numbers; replicated, the whole tensor on every rank.
    QVERIFY(!at::equal(ParamStore(11, 0, 1).normal("layers.1.w", full_shape, 0.02), single));
    QVERIFY(!at::equal(ParamStore(12, 0, 1).normal("layers.0.w", full_shape, 0.02), single));
    QVERIFY(at::equal(ParamStore(11, 1, tp).normal("layers.0.w", full_shape, 0.02), single));
  }

  // 2^20 numbers: mean 0 and spread std (standard errors ~0.001·std), 68.27% within one std and
  // 4.55% beyond two (standard errors 0.05% and 0.02%), nothing beyond √(50 ln 2) = 5.89 std (the
  // 24-bit uniform's least value, 2^-25).
  void numbersAreNormal() {
    const at::Tensor z = ParamStore(3, 0, 1).normal("embedding.word.weight", {1024, 1024}, 0.5) / 0.5;
    QVERIFY2(std::abs(z.mean().item<double>()) < 5e-3, qPrintable(QString::number(z.mean().item<double>())));
    QVERIFY2(std::abs(z.std().item<double>() - 1.0) < 5e-3, qPrintable(QString::number(z.std().item<double>())));
    const double within1 = (z.abs() < 1.0).to(at::kDouble).mean().item<double>();
    const double beyond2 = (z.abs() > 2.0).to(at::kDouble).mean().item<double>();
    QVERIFY2(std::abs(within1 - 0.6827) < 3e-3, qPrintable(QString::number(within1)));
    QVERIFY2(std::abs(beyond2 - 0.0455) < 1.5e-3, qPrintable(QString::number(beyond2)));
    QVERIFY(z.abs().max().item<double>() <= std::sqrt(50 * std::log(2.0)) + 1e-5);
    QVERIFY(z.isfinite().all().item<bool>());
  }
};

QTEST_APPLESS_MAIN(TestParamInit)
#include "test_param_init.moc"
