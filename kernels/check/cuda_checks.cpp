// CUDA kernels against their CPU references (see cuda_checks.hpp).
#include "cuda_checks.hpp"

#ifdef TESSERA_CUDA_EMULATION
#include "cuda_emu.hpp"
#else
#include <cuda_runtime.h>
#endif

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <type_traits>

#include "kernels.hpp"

namespace tessera::kernels::checks {

namespace {

template <typename T>
struct DeviceBuffer {
  T* ptr = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : n(count) {
    if (cudaMalloc(&ptr, std::max<size_t>(1, n) * sizeof(T)) != cudaSuccess) throw std::runtime_error("cudaMalloc failed");
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    cudaMemcpy(ptr, host.data(), n * sizeof(T), cudaMemcpyHostToDevice);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(ptr); }
  std::vector<T> host() const {
    std::vector<T> out(n);
    if (cudaMemcpy(out.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost) != cudaSuccess)
      throw std::runtime_error("cudaMemcpy failed");
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
    const double x = to_float(a[i]), y = to_float(b[i]);
    worst = std::max(worst, std::isfinite(x) ? std::abs(x - y) / std::max(1.0, std::abs(y)) : INFINITY);
  }
  return worst;
}

template <typename T>
const char* dtype() {
  return std::is_same_v<T, float> ? "fp32" : "bf16";
}
template <typename T>
double tolerance() {
  return std::is_same_v<T, float> ? 2e-4 : 2e-2;
}

std::string shape(int64_t rows, int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

class Recorder {
 public:
  std::vector<KernelCheck> results;
  template <typename T>
  void add(const char* kernel, const std::string& shape, double error, double tolerance) {
    results.push_back({kernel, dtype<T>(), shape, error, tolerance});
  }
};

template <typename T>
void check_norms(Recorder& out, int64_t rows, int64_t cols) {
  std::mt19937 rng(static_cast<unsigned>(rows * 131 + cols));
  const auto x = random_values<T>(rows * cols, rng, 2.0f);
  const auto dy = random_values<T>(rows * cols, rng);
  const auto w = random_values<float>(cols, rng), b = random_values<float>(cols, rng);
  std::vector<T> y(rows * cols), dx(rows * cols);
  std::vector<float> mean(rows), rstd(rows), dw(cols), db(cols);
  cpu::layernorm_forward(x.data(), w.data(), b.data(), y.data(), mean.data(), rstd.data(), rows, cols, 1e-5f);
  cpu::layernorm_backward(dy.data(), x.data(), w.data(), mean.data(), rstd.data(), dx.data(), dw.data(), db.data(), rows, cols);
  DeviceBuffer<T> d_x(x), d_dy(dy), d_y(rows * cols), d_dx(rows * cols);
  DeviceBuffer<float> d_w(w), d_b(b), d_mean(rows), d_rstd(rows), d_dw(cols), d_db(cols);
  cuda::layernorm_forward(d_x.ptr, d_w.ptr, d_b.ptr, d_y.ptr, d_mean.ptr, d_rstd.ptr, rows, cols, 1e-5f, nullptr);
  cuda::layernorm_backward(d_dy.ptr, d_x.ptr, d_w.ptr, d_mean.ptr, d_rstd.ptr, d_dx.ptr, d_dw.ptr, d_db.ptr, rows, cols, nullptr);
  const double reduce_tol = 1e-4 * static_cast<double>(rows) + tolerance<T>();
  out.add<T>("layernorm_forward", shape(rows, cols), max_error(d_y.host(), y), tolerance<T>());
  out.add<T>("layernorm_backward dx", shape(rows, cols), max_error(d_dx.host(), dx), tolerance<T>());
  out.add<T>("layernorm_backward dweight", shape(rows, cols), max_error(d_dw.host(), dw), reduce_tol);
  out.add<T>("layernorm_backward dbias", shape(rows, cols), max_error(d_db.host(), db), reduce_tol);
  std::vector<float> rs(rows), dwr(cols);
  cpu::rmsnorm_forward(x.data(), w.data(), y.data(), rs.data(), rows, cols, 1e-6f);
  cpu::rmsnorm_backward(dy.data(), x.data(), w.data(), rs.data(), dx.data(), dwr.data(), rows, cols);
  cuda::rmsnorm_forward(d_x.ptr, d_w.ptr, d_y.ptr, d_rstd.ptr, rows, cols, 1e-6f, nullptr);
  cuda::rmsnorm_backward(d_dy.ptr, d_x.ptr, d_w.ptr, d_rstd.ptr, d_dx.ptr, d_dw.ptr, rows, cols, nullptr);
  out.add<T>("rmsnorm_forward", shape(rows, cols), max_error(d_y.host(), y), tolerance<T>());
  out.add<T>("rmsnorm_backward dx", shape(rows, cols), max_error(d_dx.host(), dx), tolerance<T>());
  out.add<T>("rmsnorm_backward dweight", shape(rows, cols), max_error(d_dw.host(), dwr), reduce_tol);
}

template <typename T>
void check_vocab(Recorder& out, int64_t rows, int64_t cols, int64_t shard_start) {
  std::mt19937 rng(static_cast<unsigned>(rows + cols));
  const auto logits = random_values<T>(rows * cols, rng, 3.0f);
  std::vector<int64_t> targets(rows);
  for (int64_t r = 0; r < rows; ++r) targets[r] = shard_start - 5 + static_cast<int64_t>(rng() % (cols + 10));
  std::vector<float> mx(rows), se(rows), tl(rows), loss(rows);
  const auto dloss = random_values<float>(rows, rng);
  std::vector<T> dlogits(rows * cols);
  cpu::vocab_shard_max(logits.data(), mx.data(), rows, cols);
  cpu::vocab_shard_sumexp(logits.data(), mx.data(), targets.data(), shard_start, se.data(), tl.data(), rows, cols);
  cpu::vocab_loss(mx.data(), se.data(), tl.data(), loss.data(), rows);
  cpu::vocab_shard_backward(logits.data(), mx.data(), se.data(), targets.data(), shard_start, dloss.data(), dlogits.data(),
                            rows, cols);
  DeviceBuffer<T> d_logits(logits), d_dlogits(rows * cols);
  DeviceBuffer<int64_t> d_targets(targets);
  DeviceBuffer<float> d_mx(rows), d_se(rows), d_tl(rows), d_loss(rows), d_dloss(dloss);
  cuda::vocab_shard_max(d_logits.ptr, d_mx.ptr, rows, cols, nullptr);
  cuda::vocab_shard_sumexp(d_logits.ptr, d_mx.ptr, d_targets.ptr, shard_start, d_se.ptr, d_tl.ptr, rows, cols, nullptr);
  cuda::vocab_loss(d_mx.ptr, d_se.ptr, d_tl.ptr, d_loss.ptr, rows, nullptr);
  cuda::vocab_shard_backward(d_logits.ptr, d_mx.ptr, d_se.ptr, d_targets.ptr, shard_start, d_dloss.ptr, d_dlogits.ptr, rows,
                             cols, nullptr);
  out.add<T>("vocab_shard_max", shape(rows, cols), max_error(d_mx.host(), mx), 0.0);
  out.add<T>("vocab_shard_sumexp", shape(rows, cols), max_error(d_se.host(), se), 1e-4);
  out.add<T>("vocab_loss", shape(rows, cols), max_error(d_loss.host(), loss), 1e-4);
  out.add<T>("vocab_shard_backward", shape(rows, cols), max_error(d_dlogits.host(), dlogits), tolerance<T>());
}

template <typename T>
void check_elementwise(Recorder& out, int64_t rows, int64_t cols) {
  std::mt19937 rng(static_cast<unsigned>(rows * 7 + cols));
  const int64_t n = rows * cols;
  const auto x = random_values<T>(n, rng, 2.0f), up = random_values<T>(n, rng), dy = random_values<T>(n, rng);
  const auto bias = random_values<float>(cols, rng);
  std::vector<T> y(n), dx(n);
  std::vector<float> dbias(cols);
  DeviceBuffer<T> d_x(x), d_dy(dy), d_y(n), d_dx(n);
  DeviceBuffer<float> d_bias(bias), d_dbias(cols);
  cpu::bias_gelu_forward(x.data(), bias.data(), y.data(), rows, cols);
  cuda::bias_gelu_forward(d_x.ptr, d_bias.ptr, d_y.ptr, rows, cols, nullptr);
  out.add<T>("bias_gelu_forward", shape(rows, cols), max_error(d_y.host(), y), tolerance<T>());
  cpu::bias_gelu_backward(dy.data(), x.data(), bias.data(), dx.data(), dbias.data(), rows, cols);
  cuda::bias_gelu_backward(d_dy.ptr, d_x.ptr, d_bias.ptr, d_dx.ptr, d_dbias.ptr, rows, cols, nullptr);
  out.add<T>("bias_gelu_backward dx", shape(rows, cols), max_error(d_dx.host(), dx), tolerance<T>());
  out.add<T>("bias_gelu_backward dbias", shape(rows, cols), max_error(d_dbias.host(), dbias),
             1e-4 * static_cast<double>(rows) + tolerance<T>());
  // SwiGLU reads rows of [gate | up]: x and up side by side in each row.
  std::vector<T> gate_up(2 * n), dgate_up(2 * n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      gate_up[r * 2 * cols + c] = x[r * cols + c];
      gate_up[r * 2 * cols + cols + c] = up[r * cols + c];
    }
  DeviceBuffer<T> d_gate_up(gate_up), d_dgate_up(2 * n);
  cpu::swiglu_forward(gate_up.data(), y.data(), rows, cols);
  cuda::swiglu_forward(d_gate_up.ptr, d_y.ptr, rows, cols, nullptr);
  out.add<T>("swiglu_forward", shape(rows, cols), max_error(d_y.host(), y), tolerance<T>());
  cpu::swiglu_backward(dy.data(), gate_up.data(), dgate_up.data(), rows, cols);
  cuda::swiglu_backward(d_dy.ptr, d_gate_up.ptr, d_dgate_up.ptr, rows, cols, nullptr);
  out.add<T>("swiglu_backward", shape(rows, 2 * cols), max_error(d_dgate_up.host(), dgate_up), tolerance<T>());
  const int64_t heads = 3, head_dim = 2 * cols;
  const auto q = random_values<T>(rows * heads * head_dim, rng);
  std::vector<int64_t> positions(rows);
  for (int64_t t = 0; t < rows; ++t) positions[t] = t * 37;
  std::vector<T> rq(q.size()), bq(q.size());
  DeviceBuffer<T> d_q(q), d_rq(q.size()), d_bq(q.size());
  DeviceBuffer<int64_t> d_pos(positions);
  // The angle position·θ^(-2i/d) is formed in fp32, as Megatron's and PyTorch's RoPE tables are: with
  // CUDA's powf (4 ulp) and the product's rounding its error grows with the position, ~3e-7 of it, up to
  // 1.4e-3 at the check's last position 4736 (and sincosf adds 2 ulp). The bound allows 1e-6 per
  // position: a wrong pair, sign or frequency is off by O(1).
  const double rope_tol = std::is_same_v<T, float> ? 1e-4 + 1e-6 * static_cast<double>(positions.back()) : 2e-2;
  const std::string rope_shape = std::to_string(rows) + "x3x" + std::to_string(head_dim);
  cpu::rope_forward(q.data(), rq.data(), positions.data(), rows, heads, head_dim, 10000.0f);
  cuda::rope_forward(d_q.ptr, d_rq.ptr, d_pos.ptr, rows, heads, head_dim, 10000.0f, nullptr);
  out.add<T>("rope_forward", rope_shape, max_error(d_rq.host(), rq), rope_tol);
  cpu::rope_backward(q.data(), bq.data(), positions.data(), rows, heads, head_dim, 10000.0f);
  cuda::rope_backward(d_q.ptr, d_bq.ptr, d_pos.ptr, rows, heads, head_dim, 10000.0f, nullptr);
  out.add<T>("rope_backward", rope_shape, max_error(d_bq.host(), bq), rope_tol);
}

template <typename T>
void check_adamw(Recorder& out) {
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
  std::vector<AdamWTensor<T>> host_tensors, device_tensors;
  for (size_t i = 0; i < sizes.size(); ++i) {
    d_master.push_back(std::make_unique<DeviceBuffer<float>>(master[i]));
    d_grad.push_back(std::make_unique<DeviceBuffer<float>>(grad[i]));
    d_m.push_back(std::make_unique<DeviceBuffer<float>>(m[i]));
    d_v.push_back(std::make_unique<DeviceBuffer<float>>(v[i]));
    d_model.push_back(std::make_unique<DeviceBuffer<T>>(model[i]));
    host_tensors.push_back({master[i].data(), model[i].data(), grad[i].data(), m[i].data(), v[i].data(), sizes[i]});
    device_tensors.push_back({d_master[i]->ptr, d_model[i]->ptr, d_grad[i]->ptr, d_m[i]->ptr, d_v[i]->ptr, sizes[i]});
  }
  AdamWConfig cfg;
  cfg.lr = 3e-4f;
  cfg.weight_decay = 0.1f;
  cfg.step = 7;
  cfg.grad_scale = 0.37f;  // clipping, applied as each gradient is read
  cpu::adamw_step(host_tensors.data(), static_cast<int64_t>(host_tensors.size()), cfg);
  cuda::adamw_step(device_tensors.data(), static_cast<int64_t>(device_tensors.size()), cfg, nullptr);
  if (cudaDeviceSynchronize() != cudaSuccess) throw std::runtime_error("adamw_step failed on the device");
  double master_error = 0, moment_error = 0, model_error = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    master_error = std::max(master_error, max_error(d_master[i]->host(), master[i]));
    moment_error = std::max({moment_error, max_error(d_m[i]->host(), m[i]), max_error(d_v[i]->host(), v[i])});
    model_error = std::max(model_error, max_error(d_model[i]->host(), model[i]));
  }
  out.add<T>("adamw_step master", "4 tensors, 71005 values", master_error, 1e-6);
  out.add<T>("adamw_step moments", "4 tensors, 71005 values", moment_error, 1e-6);
  out.add<T>("adamw_step model copy", "4 tensors, 71005 values", model_error, tolerance<T>());
}

template <typename T>
void check_all(Recorder& out) {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {37, 1531}, {130, 300}, {256, 4096}, {3, 12289}}) check_norms<T>(out, rows, cols);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{7, 50257}, {64, 16032}, {1, 3}}) check_vocab<T>(out, rows, cols, 1000);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{5, 17}, {129, 1000}, {3, 2500}})
    check_elementwise<T>(out, rows, cols);
  check_adamw<T>(out);
}

}  // namespace

std::vector<KernelCheck> run_cuda_kernel_checks() {
  Recorder out;
  check_all<float>(out);
  check_all<bf16>(out);
  return out.results;
}

}  // namespace tessera::kernels::checks
