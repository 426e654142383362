// The debiased EMA against values worked by hand, its edge cases and its streaming form.
#include <QtTest/QtTest>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "smoothing.hpp"

using tessera::ui::DebiasedEma;
using tessera::ui::debiased_ema;

class TestSmoothing : public QObject {
  Q_OBJECT
 private slots:
  void handWorkedValues() {
    // w = 0.5: acc1 = 0.5*4 = 2, /(1-0.5) = 4; acc2 = 0.5*2 + 0.5*2 = 2, /(1-0.25) = 8/3;
    // acc3 = 0.5*2 + 0.5*8 = 5, /(1-0.125) = 40/7.
    const auto s = debiased_ema({4.0, 2.0, 8.0}, 0.5);
    QCOMPARE(s.size(), size_t(3));
    QVERIFY(std::abs(s[0] - 4.0) < 1e-12);
    QVERIFY(std::abs(s[1] - 8.0 / 3.0) < 1e-12);
    QVERIFY(std::abs(s[2] - 40.0 / 7.0) < 1e-12);
  }
  void zeroWeightIsIdentityAndConstantStaysConstant() {
    const std::vector<double> v{3.0, -1.0, 7.5};
    QCOMPARE(debiased_ema(v, 0.0), v);
    for (double x : debiased_ema(std::vector<double>(50, 2.5), 0.99)) QVERIFY(std::abs(x - 2.5) < 1e-9);
  }
  void nonFinitePassThroughWithoutPoisoning() {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const auto s = debiased_ema({4.0, nan, 2.0}, 0.5);
    QVERIFY(std::isnan(s[1]));
    QVERIFY(std::abs(s[2] - 8.0 / 3.0) < 1e-12);  // as if the NaN was not there
  }
  void streamingEqualsBatch() {
    std::vector<double> v;
    for (int i = 0; i < 200; ++i) v.push_back(std::sin(i * 0.1) + i * 0.01);
    const auto batch = debiased_ema(v, 0.9);
    DebiasedEma ema(0.9);
    for (size_t i = 0; i < v.size(); ++i) QCOMPARE(ema.add(v[i]), batch[i]);
  }
  void weightOutOfRangeIsRefused() {
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DebiasedEma(1.0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DebiasedEma(-0.1));
  }
};

QTEST_APPLESS_MAIN(TestSmoothing)
#include "test_smoothing.moc"
