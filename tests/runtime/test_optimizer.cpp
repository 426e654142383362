// The runtime's AdamW on a flat buffer (weight decay by element ranges, LibTorch's fused kernel)
// against torch::optim::AdamW with two parameter groups (decay and no decay) over several steps;
// clip_ranges against ranges worked out by hand; the learning-rate schedule's corner points.
// LibTorch before Qt: Qt's `slots` macro would break LibTorch's headers.
// moc needs none of these (it reads the test class alone); LibTorch would cost it ~20 s.
#ifndef Q_MOC_RUN
#include <ATen/ATen.h>
#include <torch/torch.h>

#include <QtTest/QtTest>

#include <cmath>

#include "runtime/train/optimizer.hpp"
#endif

using namespace tessera::runtime;

namespace {

tessera::spec::TrainingSpec training() {
  tessera::spec::TrainingSpec t;
  t.lr = 3e-3;
  t.min_lr = 3e-4;
  t.warmup_steps = 2;
  t.train_steps = 10;
  t.weight_decay = 0.1;
  return t;
}

}  // namespace

class TestOptimizer : public QObject {
  Q_OBJECT

 private slots:
  void matchesTorchAdamWWithTwoGroups() {
    // Three "parameters" in one flat buffer: [0, 700) decays, [700, 1000) does not, [1000, 1500) decays.
    const std::vector<int64_t> sizes{700, 300, 500};
    torch::manual_seed(7);
    const at::Tensor initial = torch::randn({1500});
    at::Tensor values = initial.clone();
    AdamW ours(training(), 1500, {{0, 700}, {1000, 500}});

    std::vector<torch::Tensor> params;
    int64_t offset = 0;
    for (int64_t n : sizes) {
      params.push_back(initial.narrow(0, offset, n).clone().set_requires_grad(true));
      offset += n;
    }
    auto options = [](double wd) {
      return std::make_unique<torch::optim::AdamWOptions>(
          torch::optim::AdamWOptions(3e-3).betas({0.9, 0.95}).eps(1e-8).weight_decay(wd));
    };
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<torch::Tensor>{params[0], params[2]}, options(0.1));
    groups.emplace_back(std::vector<torch::Tensor>{params[1]}, options(0.0));
    torch::optim::AdamW reference(groups, torch::optim::AdamWOptions(3e-3));

    for (int step = 1; step <= 5; ++step) {
      const at::Tensor grads = torch::randn({1500});
      ours.step(values, grads, 3e-3);
      offset = 0;
      for (size_t i = 0; i < params.size(); ++i) {
        params[i].mutable_grad() = grads.narrow(0, offset, sizes[i]).clone();
        offset += sizes[i];
      }
      reference.step();
    }
    QCOMPARE(ours.steps_taken(), int64_t{5});
    const at::Tensor expected = torch::cat({params[0].detach(), params[1].detach(), params[2].detach()});
    const double max_error = (values - expected).abs().max().item<double>();
    QVERIFY2(max_error < 1e-6, qPrintable(QString("max |ours - torch| = %1").arg(max_error)));
    // The weights moved (the comparison is not of two untouched copies).
    QVERIFY((values - initial).abs().max().item<double>() > 1e-3);
  }

  // Tessera's multi-tensor kernel (its CPU reference here; the CUDA kernel is checked against that
  // reference by kernel_check on GPUs) against LibTorch's fused AdamW, with the bf16 model copy
  // written in the same pass, and in fp32 in place.
  void tesseraKernelMatchesLibTorchAndWritesTheModelCopy() {
    torch::manual_seed(11);
    const at::Tensor initial = torch::randn({1500});
    const std::vector<ElementRange> decay{{0, 700}, {1000, 500}};
    AdamW aten(training(), 1500, decay), kernel(training(), 1500, decay, at::kCPU, true), in_place(training(), 1500, decay, at::kCPU, true);
    at::Tensor by_aten = initial.clone(), by_kernel = initial.clone(), by_kernel_in_place = initial.clone();
    at::Tensor model = at::zeros({1500}, at::kBFloat16);
    for (int step = 1; step <= 5; ++step) {
      const at::Tensor grads = torch::randn({1500});
      const at::Tensor unscaled = grads.clone();
      const float clip = step >= 3 ? 0.37f : 1.0f;  // clipped steps: the kernel scales as it reads
      QVERIFY(!aten.step(by_aten, grads.clone(), 3e-3, model, clip));  // LibTorch's path leaves the copy to the caller
      QVERIFY(kernel.step(by_kernel, grads, 3e-3, model, clip));
      QVERIFY(!in_place.step(by_kernel_in_place, grads, 3e-3, {}, clip));
      QVERIFY(at::equal(grads, unscaled));  // read, not written
    }
    const double max_error = (by_kernel - by_aten).abs().max().item<double>();
    QVERIFY2(max_error < 1e-6, qPrintable(QString("max |kernel - LibTorch| = %1").arg(max_error)));
    QVERIFY((by_kernel_in_place - by_kernel).abs().max().item<double>() == 0.0);
    QVERIFY((kernel.exp_avg_sq() - aten.exp_avg_sq()).abs().max().item<double>() < 1e-6);  // second moments ~1
    QVERIFY(at::equal(model, by_kernel.to(at::kBFloat16)));  // the copy is the masters rounded to bf16
    QVERIFY((by_kernel - initial).abs().max().item<double>() > 1e-3);
  }

  void clipRangesShiftsMergesAndDropsOutside() {
    const std::vector<ElementRange> ranges{{0, 10}, {10, 5}, {20, 10}, {40, 5}};
    // Shard [5, 35): [5,10)+[10,15) merge to [0,10); [20,30) becomes [15,25); [40,45) is outside.
    const auto clipped = clip_ranges(ranges, 5, 30);
    QCOMPARE(clipped.size(), size_t{2});
    QCOMPARE(clipped[0].offset, int64_t{0});
    QCOMPARE(clipped[0].length, int64_t{10});
    QCOMPARE(clipped[1].offset, int64_t{15});
    QCOMPARE(clipped[1].length, int64_t{10});
    QVERIFY(clip_ranges(ranges, 30, 10).empty());
  }

  void learningRateWarmsUpThenDecaysToMin() {
    const auto t = training();
    QCOMPARE(learning_rate(t, 1), 1.5e-3);  // lr · 1/2
    QCOMPARE(learning_rate(t, 2), 3e-3);
    QVERIFY(std::abs(learning_rate(t, 10) - 3e-4) < 1e-12);
    const double middle = learning_rate(t, 6);  // half-way through the cosine: the mean of lr and min_lr
    QVERIFY2(std::abs(middle - 0.5 * (3e-3 + 3e-4)) < 1e-12, qPrintable(QString::number(middle)));
  }
};

QTEST_GUILESS_MAIN(TestOptimizer)
#include "test_optimizer.moc"
