// fused_ops_bench: each of Tessera's fused ops (runtime/model/fused_ops.hpp), forward and backward, next
// to the ATen composition it replaces in the model (and the AdamW step next to LibTorch's fused AdamW
// plus the model-copy update), timed in the same run on one device and dtype: the
// median of --repeats runs after two warm-ups, the ratio, and how far the two results (output and input
// gradient) are apart. Qt-free, so that tests/gpu/check.sh builds and runs it on a GPU at GPT-1.3B
// sizes; CTest runs it on the CPU at small sizes (test_fused_ops_bench fails when a result disagrees,
// never on a timing). Exit: 0, 1 when a result disagrees, 2 on bad arguments, 77 when --device cuda
// finds no GPU.
#include <torch/torch.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "runtime/comm/solo_communicator.hpp"
#include "runtime/model/fused_ops.hpp"
#include "runtime/train/optimizer.hpp"

using namespace tessera::runtime;

namespace {

struct Sizes {
  int64_t tokens = 16384, hidden = 2048, ffn = 8192, heads = 16, vocab = 50304;
  int64_t params = 1'300'000'000;  ///< AdamW: the weights of GPT-1.3B in one flat buffer
};

// One implementation of an op: runs forward and backward from fresh leaves, returns {output, input grad}.
using Impl = std::function<std::pair<at::Tensor, at::Tensor>()>;

void synchronize(const at::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index() < 0 ? 0 : device.index());
}

double median_ms(const Impl& impl, const at::Device& device, int repeats) {
  for (int i = 0; i < 2; ++i) impl();
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    synchronize(device);
    const auto start = std::chrono::steady_clock::now();
    impl();
    synchronize(device);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// max |a - b| / max |b|, in double.
double apart(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor x = a.detach().to(at::kDouble), y = b.detach().to(at::kDouble);
  return (x - y).abs().max().item<double>() / std::max(y.abs().max().item<double>(), 1e-30);
}

// A fresh leaf over the same storage (no copy): each run gets its own gradient.
at::Tensor leaf(const at::Tensor& t) { return t.detach().requires_grad_(); }

at::Tensor rotate_half(const at::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Tessera's fused ops next to the ATen compositions they replace, timed in the same run"};
  std::string device_name = "cuda", dtype_name = "bf16";
  Sizes n;
  int repeats = 20;
  app.add_option("--device", device_name, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--dtype", dtype_name, "activations: fp32 or bf16")->check(CLI::IsMember({"fp32", "bf16"}));
  app.add_option("--tokens", n.tokens, "rows: micro-batch x sequence")->check(CLI::PositiveNumber);
  app.add_option("--hidden", n.hidden, "hidden size")->check(CLI::PositiveNumber);
  app.add_option("--ffn", n.ffn, "MLP width (bias+GELU; each SwiGLU half)")->check(CLI::PositiveNumber);
  app.add_option("--heads", n.heads, "attention heads (RoPE: hidden/heads per head, even)")->check(CLI::PositiveNumber);
  app.add_option("--vocab", n.vocab, "vocabulary (cross-entropy)")->check(CLI::PositiveNumber);
  app.add_option("--params", n.params, "weights updated by AdamW (fp32 masters and moments)")
      ->check(CLI::PositiveNumber);
  app.add_option("--repeats", repeats, "timed runs per implementation (the median is shown)")
      ->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  if (n.hidden % n.heads != 0 || (n.hidden / n.heads) % 2 != 0) {
    std::fprintf(stderr, "--heads: hidden/heads must be a whole, even head size (hidden %lld, heads %lld)\n",
                 static_cast<long long>(n.hidden), static_cast<long long>(n.heads));
    return 2;
  }
  if (device_name == "cuda" && !torch::cuda::is_available()) {
    std::printf("no CUDA device: the fused-op benchmark was not run\n");
    return 77;
  }
  at::set_num_threads(1);
  torch::manual_seed(1234);
  const at::Device device = device_name == "cuda" ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  const at::ScalarType dtype = dtype_name == "bf16" ? at::kBFloat16 : at::kFloat;
  const auto on = at::TensorOptions().device(device).dtype(dtype);
  const auto fp32 = at::TensorOptions().device(device).dtype(at::kFloat);
  const double tolerance = dtype == at::kFloat ? 1e-4 : 3e-2;
  const int64_t head_dim = n.hidden / n.heads;
  SoloCommunicator solo("tp", 0);

  struct Row {
    std::string op, shape;
    Impl ours, aten;
  };
  std::vector<Row> rows;
  auto shape = [](std::initializer_list<int64_t> dims) {
    std::string s;
    for (int64_t d : dims) s += (s.empty() ? "" : "x") + std::to_string(d);
    return s;
  };

  {
    const at::Tensor x = at::randn({n.tokens, n.hidden}, on) * 2 + 0.5, g = at::randn_like(x);
    const at::Tensor w = at::randn({n.hidden}, fp32), b = at::randn({n.hidden}, fp32);
    auto run = [=](bool fused) {
      const at::Tensor xi = leaf(x), wi = leaf(w.to(dtype)), bi = leaf(b.to(dtype));
      const at::Tensor y = fused ? fused_layer_norm(xi, wi, bi, 1e-5) : at::layer_norm(xi, {n.hidden}, wi, bi, 1e-5);
      y.backward(g);
      return std::make_pair(y, xi.grad());
    };
    rows.push_back({"layer_norm", shape({n.tokens, n.hidden}), [=] { return run(true); }, [=] { return run(false); }});
  }
  {
    const at::Tensor x = at::randn({n.tokens, n.hidden}, on), g = at::randn_like(x);
    const at::Tensor w = at::randn({n.hidden}, fp32);
    auto run = [=](bool fused) {
      const at::Tensor xi = leaf(x), wi = leaf(w.to(dtype));
      const at::Tensor y = fused ? fused_rms_norm(xi, wi, 1e-5) : at::rms_norm(xi, {n.hidden}, wi, 1e-5);
      y.backward(g);
      return std::make_pair(y, xi.grad());
    };
    rows.push_back({"rms_norm", shape({n.tokens, n.hidden}), [=] { return run(true); }, [=] { return run(false); }});
  }
  {
    const at::Tensor x = at::randn({n.tokens, n.heads, head_dim}, on), g = at::randn_like(x);
    const at::Tensor positions = at::arange(n.tokens, fp32.dtype(at::kLong)) % 2048;
    // The ATen path's tables, built once as the model builds them (outside the timed runs).
    const at::Tensor inv_freq = at::pow(10000.0, -at::arange(0, head_dim, 2, fp32) / static_cast<double>(head_dim));
    const at::Tensor angles = at::outer(positions.to(at::kFloat), inv_freq);
    const at::Tensor both = at::cat({angles, angles}, -1).unsqueeze(1);
    const at::Tensor cos = both.cos().to(dtype), sin = both.sin().to(dtype);
    auto run = [=](bool fused) {
      const at::Tensor xi = leaf(x);
      const at::Tensor y = fused ? fused_rope(xi, positions, 10000.0) : xi * cos + rotate_half(xi) * sin;
      y.backward(g);
      return std::make_pair(y, xi.grad());
    };
    rows.push_back(
        {"rope", shape({n.tokens, n.heads, head_dim}), [=] { return run(true); }, [=] { return run(false); }});
  }
  {
    const at::Tensor x = at::randn({n.tokens, n.ffn}, on), g = at::randn_like(x);
    const at::Tensor b = at::randn({n.ffn}, fp32) * 0.1;
    auto run = [=](bool fused) {
      const at::Tensor xi = leaf(x), bi = leaf(b.to(dtype));
      const at::Tensor y = fused ? fused_bias_gelu(xi, bi) : at::gelu(xi + bi, "tanh");
      y.backward(g);
      return std::make_pair(y, xi.grad());
    };
    rows.push_back({"bias_gelu", shape({n.tokens, n.ffn}), [=] { return run(true); }, [=] { return run(false); }});
  }
  {
    const at::Tensor x = at::randn({n.tokens, 2 * n.ffn}, on), g = at::randn({n.tokens, n.ffn}, on);
    auto run = [=](bool fused) {
      const at::Tensor xi = leaf(x);
      at::Tensor y;
      if (fused) {
        y = fused_swiglu(xi);
      } else {
        const auto halves = xi.chunk(2, -1);
        y = at::silu(halves[0]) * halves[1];
      }
      y.backward(g);
      return std::make_pair(y, xi.grad());
    };
    rows.push_back({"swiglu", shape({n.tokens, 2 * n.ffn}), [=] { return run(true); }, [=] { return run(false); }});
  }
  {
    const at::Tensor logits = at::randn({n.tokens, n.vocab}, on) * 3;
    const at::Tensor targets = at::randint(n.vocab, {n.tokens}, fp32.dtype(at::kLong));
    const at::Tensor g = at::rand({n.tokens}, fp32);
    auto run = [=, &solo](bool fused) {
      const at::Tensor li = leaf(logits);
      // The ATen path computes the loss in fp32 (the model's, at tp = 1).
      const at::Tensor loss = fused ? fused_vocab_parallel_cross_entropy(li, targets, solo)
                                    : at::cross_entropy_loss(li.to(at::kFloat), targets, {}, at::Reduction::None);
      loss.backward(g);
      return std::make_pair(loss, li.grad());
    };
    rows.push_back(
        {"cross_entropy", shape({n.tokens, n.vocab}), [=] { return run(true); }, [=] { return run(false); }});
  }

  {
    // One optimizer step over a flat buffer (half of it with weight decay, as the trainer splits it),
    // writing the model's copy in --dtype: Tessera's kernel does both in one pass; the ATen path is
    // LibTorch's fused AdamW and then the copy, as the trainer does without --kernels fused. Each
    // side has its own state from the same start, so their first steps compare.
    const at::Tensor master = at::randn({n.params}, fp32), grads = at::randn({n.params}, fp32) * 0.01;
    tessera::spec::TrainingSpec training;
    training.weight_decay = 0.1;
    const std::vector<ElementRange> decay = {{0, n.params / 2}};
    auto make = [=, &training](bool fused) {
      auto optimizer = std::make_shared<AdamW>(training, n.params, decay, device, fused);
      auto values = std::make_shared<at::Tensor>(master.clone());
      const at::Tensor model = at::empty({n.params}, on);
      return [=]() mutable {
        if (!optimizer->step(*values, grads, 3e-4, model)) model.copy_(*values);
        return std::make_pair(*values, model);
      };
    };
    rows.push_back({"adamw (+copy)", shape({n.params}), make(true), make(false)});
  }

  std::printf("fused ops on %s, %s, forward + backward, median of %d (after 2 warm-ups)\n", device_name.c_str(),
              dtype_name.c_str(), repeats);
  std::printf("%-14s %-18s %11s %11s %10s %12s %10s  %s\n", "op", "shape", "fused ms", "ATen ms", "ATen/fused",
              "output apart", "grad apart", "result");
  // (AdamW's row: "output" = the fp32 weights after the first step, "grad" = the model's copy.)
  int failed = 0;
  for (const Row& row : rows) {
    const auto [y, dx] = row.ours();
    const auto [y_ref, dx_ref] = row.aten();
    const double y_apart = apart(y, y_ref), dx_apart = apart(dx, dx_ref);
    const bool ok = y_apart <= tolerance && dx_apart <= tolerance;
    const double fused_ms = median_ms(row.ours, device, repeats), aten_ms = median_ms(row.aten, device, repeats);
    std::printf("%-14s %-18s %11.3f %11.3f %10.2f %12.2e %10.2e  %s\n", row.op.c_str(), row.shape.c_str(), fused_ms,
                aten_ms, aten_ms / fused_ms, y_apart, dx_apart, ok ? "ok" : "DISAGREE");
    failed += ok ? 0 : 1;
  }
  std::printf("tolerance %.0e (max |fused - ATen| / max |ATen|); ATen/fused > 1: the fused op is faster\n", tolerance);
  return failed == 0 ? 0 : 1;
}
