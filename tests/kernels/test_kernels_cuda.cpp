// CUDA kernels against their CPU references on random, odd shapes (fp32 and bf16). Without a GPU
// the program prints why and exits 77, which CTest reports as "not run".
#include <QtTest/QtTest>

#include <cuda_runtime.h>

#include <cstdio>
#include <random>
#include <vector>

#include "kernels.hpp"

namespace k = tessera::kernels;
using k::bf16;

namespace {

template <typename T>
struct DeviceBuffer {
  T* ptr = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : n(count) { QVERIFY(cudaMalloc(&ptr, std::max<size_t>(1, n) * sizeof(T)) == cudaSuccess); }
  DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    cudaMemcpy(ptr, host.data(), n * sizeof(T), cudaMemcpyHostToDevice);
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  std::vector<T> host() const {
    std::vector<T> out(n);
    cudaMemcpy(out.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost);
    return out;
  }
};

template <typename T>
std::vector<T> random_values(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<T> v(n);
  for (auto& x : v) x = T(dist(rng));
  return v;
}

template <typename T>
double max_error(const std::vector<T>& a, const std::vector<T>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = k::to_float(a[i]), y = k::to_float(b[i]);
    worst = std::max(worst, std::abs(x - y) / std::max(1.0, std::abs(y)));
  }
  return worst;
}

template <typename T>
double tolerance() {
  return std::is_same_v<T, float> ? 2e-4 : 2e-2;
}

template <typename T>
void check_norms(int64_t rows, int64_t cols) {
  std::mt19937 rng(static_cast<unsigned>(rows * 131 + cols));
  const auto x = random_values<T>(rows * cols, rng, 2.0f);
  const auto dy = random_values<T>(rows * cols, rng);
  const auto w = random_values<float>(cols, rng), b = random_values<float>(cols, rng);
  std::vector<T> y(rows * cols), dx(rows * cols);
  std::vector<float> mean(rows), rstd(rows), dw(cols), db(cols);
  k::cpu::layernorm_forward(x.data(), w.data(), b.data(), y.data(), mean.data(), rstd.data(), rows, cols, 1e-5f);
  k::cpu::layernorm_backward(dy.data(), x.data(), w.data(), mean.data(), rstd.data(), dx.data(), dw.data(), db.data(), rows, cols);
  DeviceBuffer<T> d_x(x), d_dy(dy), d_y(rows * cols), d_dx(rows * cols);
  DeviceBuffer<float> d_w(w), d_b(b), d_mean(rows), d_rstd(rows), d_dw(cols), d_db(cols);
  k::cuda::layernorm_forward(d_x.ptr, d_w.ptr, d_b.ptr, d_y.ptr, d_mean.ptr, d_rstd.ptr, rows, cols, 1e-5f, nullptr);
  k::cuda::layernorm_backward(d_dy.ptr, d_x.ptr, d_w.ptr, d_mean.ptr, d_rstd.ptr, d_dx.ptr, d_dw.ptr, d_db.ptr, rows, cols,
                              nullptr);
  QVERIFY(max_error(d_y.host(), y) < tolerance<T>());
  QVERIFY(max_error(d_dx.host(), dx) < tolerance<T>());
  QVERIFY(max_error(d_dw.host(), dw) < 1e-3 * rows);
  QVERIFY(max_error(d_db.host(), db) < 1e-3 * rows);
  std::vector<float> rs(rows), dwr(cols);
  k::cpu::rmsnorm_forward(x.data(), w.data(), y.data(), rs.data(), rows, cols, 1e-6f);
  k::cpu::rmsnorm_backward(dy.data(), x.data(), w.data(), rs.data(), dx.data(), dwr.data(), rows, cols);
  k::cuda::rmsnorm_forward(d_x.ptr, d_w.ptr, d_y.ptr, d_rstd.ptr, rows, cols, 1e-6f, nullptr);
  k::cuda::rmsnorm_backward(d_dy.ptr, d_x.ptr, d_w.ptr, d_rstd.ptr, d_dx.ptr, d_dw.ptr, rows, cols, nullptr);
  QVERIFY(max_error(d_y.host(), y) < tolerance<T>());
  QVERIFY(max_error(d_dx.host(), dx) < tolerance<T>());
  QVERIFY(max_error(d_dw.host(), dwr) < 1e-3 * rows);
}

template <typename T>
void check_vocab(int64_t rows, int64_t cols, int64_t shard_start) {
  std::mt19937 rng(static_cast<unsigned>(rows + cols));
  const auto logits = random_values<T>(rows * cols, rng, 3.0f);
  std::vector<int64_t> targets(rows);
  for (int64_t r = 0; r < rows; ++r) targets[r] = shard_start - 5 + static_cast<int64_t>(rng() % (cols + 10));
  std::vector<float> mx(rows), se(rows), tl(rows), loss(rows), dloss = random_values<float>(rows, rng);
  std::vector<T> dlogits(rows * cols);
  k::cpu::vocab_shard_max(logits.data(), mx.data(), rows, cols);
  k::cpu::vocab_shard_sumexp(logits.data(), mx.data(), targets.data(), shard_start, se.data(), tl.data(), rows, cols);
  k::cpu::vocab_loss(mx.data(), se.data(), tl.data(), loss.data(), rows);
  k::cpu::vocab_shard_backward(logits.data(), mx.data(), se.data(), targets.data(), shard_start, dloss.data(), dlogits.data(),
                               rows, cols);
  DeviceBuffer<T> d_logits(logits), d_dlogits(rows * cols);
  DeviceBuffer<int64_t> d_targets(targets);
  DeviceBuffer<float> d_mx(rows), d_se(rows), d_tl(rows), d_loss(rows), d_dloss(dloss);
  k::cuda::vocab_shard_max(d_logits.ptr, d_mx.ptr, rows, cols, nullptr);
  k::cuda::vocab_shard_sumexp(d_logits.ptr, d_mx.ptr, d_targets.ptr, shard_start, d_se.ptr, d_tl.ptr, rows, cols, nullptr);
  k::cuda::vocab_loss(d_mx.ptr, d_se.ptr, d_tl.ptr, d_loss.ptr, rows, nullptr);
  k::cuda::vocab_shard_backward(d_logits.ptr, d_mx.ptr, d_se.ptr, d_targets.ptr, shard_start, d_dloss.ptr, d_dlogits.ptr,
                                rows, cols, nullptr);
  QCOMPARE(max_error(d_mx.host(), mx), 0.0);
  QVERIFY(max_error(d_se.host(), se) < 1e-4);
  QVERIFY(max_error(d_loss.host(), loss) < 1e-4);
  QVERIFY(max_error(d_dlogits.host(), dlogits) < tolerance<T>());
}

template <typename T>
void check_elementwise(int64_t rows, int64_t cols) {
  std::mt19937 rng(static_cast<unsigned>(rows * 7 + cols));
  const int64_t n = rows * cols;
  const auto x = random_values<T>(n, rng, 2.0f), up = random_values<T>(n, rng), dy = random_values<T>(n, rng);
  const auto bias = random_values<float>(cols, rng);
  std::vector<T> y(n), dx(n), dup(n);
  std::vector<float> dbias(cols);
  DeviceBuffer<T> d_x(x), d_up(up), d_dy(dy), d_y(n), d_dx(n), d_dup(n);
  DeviceBuffer<float> d_bias(bias), d_dbias(cols);
  k::cpu::bias_gelu_forward(x.data(), bias.data(), y.data(), rows, cols);
  k::cuda::bias_gelu_forward(d_x.ptr, d_bias.ptr, d_y.ptr, rows, cols, nullptr);
  QVERIFY(max_error(d_y.host(), y) < tolerance<T>());
  k::cpu::bias_gelu_backward(dy.data(), x.data(), bias.data(), dx.data(), dbias.data(), rows, cols);
  k::cuda::bias_gelu_backward(d_dy.ptr, d_x.ptr, d_bias.ptr, d_dx.ptr, d_dbias.ptr, rows, cols, nullptr);
  QVERIFY(max_error(d_dx.host(), dx) < tolerance<T>());
  QVERIFY(max_error(d_dbias.host(), dbias) < 1e-3 * rows);
  k::cpu::swiglu_forward(x.data(), up.data(), y.data(), n);
  k::cuda::swiglu_forward(d_x.ptr, d_up.ptr, d_y.ptr, n, nullptr);
  QVERIFY(max_error(d_y.host(), y) < tolerance<T>());
  k::cpu::swiglu_backward(dy.data(), x.data(), up.data(), dx.data(), dup.data(), n);
  k::cuda::swiglu_backward(d_dy.ptr, d_x.ptr, d_up.ptr, d_dx.ptr, d_dup.ptr, n, nullptr);
  QVERIFY(max_error(d_dx.host(), dx) < tolerance<T>());
  QVERIFY(max_error(d_dup.host(), dup) < tolerance<T>());
  // RoPE over [rows tokens, 3 heads, head_dim 2*cols]
  const int64_t heads = 3, head_dim = 2 * cols;
  const auto q = random_values<T>(rows * heads * head_dim, rng);
  std::vector<int64_t> positions(rows);
  for (int64_t t = 0; t < rows; ++t) positions[t] = t * 37;
  std::vector<T> rq(q.size()), bq(q.size());
  DeviceBuffer<T> d_q(q), d_rq(q.size()), d_bq(q.size());
  DeviceBuffer<int64_t> d_pos(positions);
  k::cpu::rope_forward(q.data(), rq.data(), positions.data(), rows, heads, head_dim, 10000.0f);
  k::cuda::rope_forward(d_q.ptr, d_rq.ptr, d_pos.ptr, rows, heads, head_dim, 10000.0f, nullptr);
  QVERIFY(max_error(d_rq.host(), rq) < (std::is_same_v<T, float> ? 2e-3 : 2e-2));
  k::cpu::rope_backward(q.data(), bq.data(), positions.data(), rows, heads, head_dim, 10000.0f);
  k::cuda::rope_backward(d_q.ptr, d_bq.ptr, d_pos.ptr, rows, heads, head_dim, 10000.0f, nullptr);
  QVERIFY(max_error(d_bq.host(), bq) < (std::is_same_v<T, float> ? 2e-3 : 2e-2));
}

template <typename T>
void check_adamw() {
  std::mt19937 rng(11);
  const std::vector<int64_t> sizes = {1, 1000, 70001, 3};
  std::vector<std::vector<float>> master, grad, m, v;
  std::vector<std::vector<T>> model;
  for (int64_t n : sizes) {
    master.push_back(random_values<float>(n, rng));
    grad.push_back(random_values<float>(n, rng, 0.01f));
    m.push_back(random_values<float>(n, rng, 0.001f));
    v.push_back(std::vector<float>(n, 1e-6f));
    model.push_back(std::vector<T>(n));
  }
  std::vector<std::unique_ptr<DeviceBuffer<float>>> d_master, d_grad, d_m, d_v;
  std::vector<std::unique_ptr<DeviceBuffer<T>>> d_model;
  std::vector<k::AdamWTensor<T>> host_tensors, device_tensors;
  for (size_t i = 0; i < sizes.size(); ++i) {
    d_master.push_back(std::make_unique<DeviceBuffer<float>>(master[i]));
    d_grad.push_back(std::make_unique<DeviceBuffer<float>>(grad[i]));
    d_m.push_back(std::make_unique<DeviceBuffer<float>>(m[i]));
    d_v.push_back(std::make_unique<DeviceBuffer<float>>(v[i]));
    d_model.push_back(std::make_unique<DeviceBuffer<T>>(model[i]));
    host_tensors.push_back({master[i].data(), model[i].data(), grad[i].data(), m[i].data(), v[i].data(), sizes[i]});
    device_tensors.push_back({d_master[i]->ptr, d_model[i]->ptr, d_grad[i]->ptr, d_m[i]->ptr, d_v[i]->ptr, sizes[i]});
  }
  k::AdamWConfig cfg;
  cfg.lr = 3e-4f;
  cfg.weight_decay = 0.1f;
  cfg.step = 7;
  k::cpu::adamw_step(host_tensors.data(), static_cast<int64_t>(host_tensors.size()), cfg);
  k::cuda::adamw_step(device_tensors.data(), static_cast<int64_t>(device_tensors.size()), cfg, nullptr);
  QVERIFY(cudaDeviceSynchronize() == cudaSuccess);
  for (size_t i = 0; i < sizes.size(); ++i) {
    QVERIFY(max_error(d_master[i]->host(), master[i]) < 1e-6);
    QVERIFY(max_error(d_m[i]->host(), m[i]) < 1e-6);
    QVERIFY(max_error(d_v[i]->host(), v[i]) < 1e-6);
    QVERIFY(max_error(d_model[i]->host(), model[i]) < tolerance<T>());
  }
}

}  // namespace

class TestKernelsCuda : public QObject {
  Q_OBJECT
 private slots:
  void norms() {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {37, 1531}, {256, 4096}, {3, 12289}}) {
      check_norms<float>(rows, cols);
      check_norms<bf16>(rows, cols);
    }
  }
  void vocabParallelCrossEntropy() {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{7, 50257}, {64, 16032}, {1, 3}}) {
      check_vocab<float>(rows, cols, 1000);
      check_vocab<bf16>(rows, cols, 0);
    }
  }
  void elementwise() {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{5, 17}, {129, 1000}}) {
      check_elementwise<float>(rows, cols);
      check_elementwise<bf16>(rows, cols);
    }
  }
  void adamw() {
    check_adamw<float>();
    check_adamw<bf16>();
  }
};

int main(int argc, char** argv) {
  if (k::cuda::device_count() == 0) {
    std::printf("no CUDA device: the CUDA kernel tests were not run\n");
    return 77;
  }
  TestKernelsCuda tests;
  return QTest::qExec(&tests, argc, argv);
}
#include "test_kernels_cuda.moc"
