// CPU references of RoPE, bias+GELU, SwiGLU and the multi-tensor AdamW step.
#include <cmath>
#include <vector>

#include "kernels.hpp"

namespace tessera::kernels::cpu {

namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;

double gelu_tanh(double x) { return 0.5 * x * (1 + std::tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x))); }
double gelu_tanh_grad(double x) {
  const double u = kSqrt2OverPi * (x + 0.044715 * x * x * x);
  const double t = std::tanh(u);
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * kSqrt2OverPi * (1 + 3 * 0.044715 * x * x);
}
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// Rotates pairs (i, i + half) of every head by +angle (sign 1) or -angle (sign -1).
template <typename T>
void rope_rotate(const T* in, T* out, const int64_t* positions, int64_t tokens, int64_t heads, int64_t head_dim, float theta,
                 double sign) {
  const int64_t half = head_dim / 2;
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      const T* xi = in + (t * heads + h) * head_dim;
      T* yo = out + (t * heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const double freq = std::pow(static_cast<double>(theta), -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
        const double angle = sign * static_cast<double>(positions[t]) * freq;
        const double c = std::cos(angle), s = std::sin(angle);
        const double a = to_float(xi[i]), b = to_float(xi[i + half]);
        yo[i] = from_float<T>(static_cast<float>(a * c - b * s));
        yo[i + half] = from_float<T>(static_cast<float>(a * s + b * c));
      }
    }
}

}  // namespace

template <typename T>
void rope_forward(const T* x, T* y, const int64_t* positions, int64_t tokens, int64_t heads, int64_t head_dim, float theta) {
  rope_rotate(x, y, positions, tokens, heads, head_dim, theta, 1.0);
}

template <typename T>
void rope_backward(const T* dy, T* dx, const int64_t* positions, int64_t tokens, int64_t heads, int64_t head_dim, float theta) {
  rope_rotate(dy, dx, positions, tokens, heads, head_dim, theta, -1.0);  // the transpose of a rotation is its inverse
}

template <typename T>
void adamw_step(const AdamWTensor<T>* tensors, int64_t count, const AdamWConfig& cfg) {
  const double bc1 = 1 - std::pow(static_cast<double>(cfg.beta1), static_cast<double>(cfg.step));
  const double bc2 = 1 - std::pow(static_cast<double>(cfg.beta2), static_cast<double>(cfg.step));
  for (int64_t k = 0; k < count; ++k) {
    const auto& t = tensors[k];
    for (int64_t i = 0; i < t.numel; ++i) {
      const float g = t.grad[i] * cfg.grad_scale;
      const float m = cfg.beta1 * t.exp_avg[i] + (1 - cfg.beta1) * g;
      const float v = cfg.beta2 * t.exp_avg_sq[i] + (1 - cfg.beta2) * g * g;
      t.exp_avg[i] = m;
      t.exp_avg_sq[i] = v;
      const double update = (m / bc1) / (std::sqrt(v / bc2) + cfg.eps);
      const double p = t.master[i] * (1.0 - static_cast<double>(cfg.lr) * cfg.weight_decay) - cfg.lr * update;
      t.master[i] = static_cast<float>(p);
      t.model[i] = from_float<T>(t.master[i]);
    }
  }
}

template <typename T>
void bias_gelu_forward(const T* x, const float* bias, T* y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = from_float<T>(static_cast<float>(gelu_tanh(static_cast<double>(to_float(x[r * cols + c])) + bias[c])));
}

template <typename T>
void bias_gelu_backward(const T* dy, const T* x, const float* bias, T* dx, float* dbias, int64_t rows, int64_t cols) {
  std::vector<double> db(cols, 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const double g = static_cast<double>(to_float(dy[r * cols + c])) *
                       gelu_tanh_grad(static_cast<double>(to_float(x[r * cols + c])) + bias[c]);
      dx[r * cols + c] = from_float<T>(static_cast<float>(g));
      db[c] += g;
    }
  for (int64_t c = 0; c < cols; ++c) dbias[c] = static_cast<float>(db[c]);
}

template <typename T>
void swiglu_forward(const T* gate_up, T* y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* gate = gate_up + r * 2 * cols;
    const T* up = gate + cols;
    for (int64_t c = 0; c < cols; ++c) {
      const double g = to_float(gate[c]);
      y[r * cols + c] = from_float<T>(static_cast<float>(g * sigmoid(g) * to_float(up[c])));
    }
  }
}

template <typename T>
void swiglu_backward(const T* dy, const T* gate_up, T* dgate_up, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* gate = gate_up + r * 2 * cols;
    const T* up = gate + cols;
    T* dgate = dgate_up + r * 2 * cols;
    T* dup = dgate + cols;
    for (int64_t c = 0; c < cols; ++c) {
      const double g = to_float(gate[c]), u = to_float(up[c]), d = to_float(dy[r * cols + c]);
      const double s = sigmoid(g);
      dgate[c] = from_float<T>(static_cast<float>(d * u * s * (1 + g * (1 - s))));
      dup[c] = from_float<T>(static_cast<float>(d * g * s));
    }
  }
}

#define INSTANTIATE(T)                                                                                            \
  template void rope_forward<T>(const T*, T*, const int64_t*, int64_t, int64_t, int64_t, float);                 \
  template void rope_backward<T>(const T*, T*, const int64_t*, int64_t, int64_t, int64_t, float);                \
  template void adamw_step<T>(const AdamWTensor<T>*, int64_t, const AdamWConfig&);                               \
  template void bias_gelu_forward<T>(const T*, const float*, T*, int64_t, int64_t);                              \
  template void bias_gelu_backward<T>(const T*, const T*, const float*, T*, float*, int64_t, int64_t);           \
  template void swiglu_forward<T>(const T*, T*, int64_t, int64_t);                                               \
  template void swiglu_backward<T>(const T*, const T*, T*, int64_t, int64_t);
INSTANTIATE(float)
INSTANTIATE(bf16)
#undef INSTANTIATE

}  // namespace tessera::kernels::cpu
