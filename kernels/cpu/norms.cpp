// CPU references of LayerNorm and RMSNorm, forward and backward (double accumulation).
#include <cmath>
#include <vector>

#include "kernels.hpp"

namespace tessera::kernels::cpu {

template <typename T>
void layernorm_forward(const T* x, const float* weight, const float* bias, T* y, float* mean, float* rstd, int64_t rows,
                       int64_t cols, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    double sum = 0, sq = 0;
    for (int64_t c = 0; c < cols; ++c) sum += to_float(xr[c]);
    const double mu = sum / static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c) {
      const double d = to_float(xr[c]) - mu;
      sq += d * d;
    }
    const double rs = 1.0 / std::sqrt(sq / static_cast<double>(cols) + eps);
    mean[r] = static_cast<float>(mu);
    rstd[r] = static_cast<float>(rs);
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = from_float<T>(static_cast<float>((to_float(xr[c]) - mu) * rs * weight[c] + bias[c]));
  }
}

template <typename T>
void layernorm_backward(const T* dy, const T* x, const float* weight, const float* mean, const float* rstd, T* dx,
                        float* dweight, float* dbias, int64_t rows, int64_t cols) {
  std::vector<double> dw(cols, 0.0), db(cols, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    const T* dyr = dy + r * cols;
    double mean_g = 0, mean_gx = 0;  // means of g = dy*w and g*xhat
    for (int64_t c = 0; c < cols; ++c) {
      const double xhat = (to_float(xr[c]) - mean[r]) * rstd[r];
      const double g = static_cast<double>(to_float(dyr[c])) * weight[c];
      mean_g += g;
      mean_gx += g * xhat;
      dw[c] += static_cast<double>(to_float(dyr[c])) * xhat;
      db[c] += to_float(dyr[c]);
    }
    mean_g /= static_cast<double>(cols);
    mean_gx /= static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c) {
      const double xhat = (to_float(xr[c]) - mean[r]) * rstd[r];
      const double g = static_cast<double>(to_float(dyr[c])) * weight[c];
      dx[r * cols + c] = from_float<T>(static_cast<float>(rstd[r] * (g - mean_g - xhat * mean_gx)));
    }
  }
  for (int64_t c = 0; c < cols; ++c) {
    dweight[c] = static_cast<float>(dw[c]);
    dbias[c] = static_cast<float>(db[c]);
  }
}

template <typename T>
void rmsnorm_forward(const T* x, const float* weight, T* y, float* rstd, int64_t rows, int64_t cols, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    double sq = 0;
    for (int64_t c = 0; c < cols; ++c) sq += static_cast<double>(to_float(xr[c])) * to_float(xr[c]);
    const double rs = 1.0 / std::sqrt(sq / static_cast<double>(cols) + eps);
    rstd[r] = static_cast<float>(rs);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = from_float<T>(static_cast<float>(to_float(xr[c]) * rs * weight[c]));
  }
}

template <typename T>
void rmsnorm_backward(const T* dy, const T* x, const float* weight, const float* rstd, T* dx, float* dweight, int64_t rows,
                      int64_t cols) {
  std::vector<double> dw(cols, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    const T* dyr = dy + r * cols;
    double mean_gx = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const double xhat = to_float(xr[c]) * static_cast<double>(rstd[r]);
      const double g = static_cast<double>(to_float(dyr[c])) * weight[c];
      mean_gx += g * xhat;
      dw[c] += static_cast<double>(to_float(dyr[c])) * xhat;
    }
    mean_gx /= static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c) {
      const double xhat = to_float(xr[c]) * static_cast<double>(rstd[r]);
      const double g = static_cast<double>(to_float(dyr[c])) * weight[c];
      dx[r * cols + c] = from_float<T>(static_cast<float>(rstd[r] * (g - xhat * mean_gx)));
    }
  }
  for (int64_t c = 0; c < cols; ++c) dweight[c] = static_cast<float>(dw[c]);
}

#define INSTANTIATE(T)                                                                                          \
  template void layernorm_forward<T>(const T*, const float*, const float*, T*, float*, float*, int64_t, int64_t, \
                                     float);                                                                    \
  template void layernorm_backward<T>(const T*, const T*, const float*, const float*, const float*, T*, float*,  \
                                      float*, int64_t, int64_t);                                                \
  template void rmsnorm_forward<T>(const T*, const float*, T*, float*, int64_t, int64_t, float);                \
  template void rmsnorm_backward<T>(const T*, const T*, const float*, const float*, T*, float*, int64_t, int64_t);
INSTANTIATE(float)
INSTANTIATE(bf16)
#undef INSTANTIATE

}  // namespace tessera::kernels::cpu
