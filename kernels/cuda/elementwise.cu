// CUDA RoPE, bias+GELU, SwiGLU (elementwise over row chunks; bias+GELU's backward over column tiles, both
// in common.cuh) and the multi-tensor AdamW step (one launch for all tensors: a table of (tensor, offset)
// chunks).
#include <vector>

#include "common.cuh"

namespace tessera::kernels::cuda {

using namespace detail;

namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;

__device__ inline float gelu_tanh(float x) { return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x))); }
__device__ inline float gelu_tanh_grad(float x) {
  const float t = tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * 0.044715f * x * x);
}
__device__ inline float sigmoidf(float x) { return 1.0f / (1.0f + __expf(-x)); }

// Rows are tokens; a token's columns are its heads' rotated pairs (i, i + half), head by head, so that
// a block's threads all have work however small head_dim is (a row of one head's half pairs would
// leave most of them idle). The 32-bit division of a column into (head, i) is small next to the powf
// and sincosf each pair needs.
template <typename D>
__global__ void rope_kernel(const D* in, D* out, const int64_t* positions, int64_t tokens, int64_t heads, int64_t head_dim,
                            float theta, float sign) {
  const int64_t half = head_dim / 2, width = heads * half;
  for (int64_t pair = blockIdx.x; pair < row_chunk_pairs(tokens, width); pair += gridDim.x) {
    const RowChunk chunk = row_chunk(pair, width);
    const float position = static_cast<float>(positions[chunk.row]);
    for (int64_t j = chunk.first + threadIdx.x; j < chunk.end; j += blockDim.x) {
      const uint32_t head = static_cast<uint32_t>(j) / static_cast<uint32_t>(half);
      const uint32_t i = static_cast<uint32_t>(j) - head * static_cast<uint32_t>(half);
      const int64_t base = (chunk.row * heads + head) * head_dim;
      const float freq = powf(theta, -2.0f * static_cast<float>(i) / static_cast<float>(head_dim));
      float s, c;
      sincosf(sign * position * freq, &s, &c);
      const float a = load(in[base + i]), b = load(in[base + i + half]);
      out[base + i] = store<D>(a * c - b * s);
      out[base + i + half] = store<D>(a * s + b * c);
    }
  }
}

template <typename D>
struct DeviceAdamWTensor {
  float* master;
  D* model;
  const float* grad;
  float* exp_avg;
  float* exp_avg_sq;
  int64_t numel;
};

constexpr int64_t kAdamChunk = 65536;

template <typename D>
__global__ void adamw_kernel(const DeviceAdamWTensor<D>* tensors, const int64_t* chunk_tensor, const int64_t* chunk_offset,
                             float lr, float beta1, float beta2, float eps, float weight_decay, float bc1, float bc2,
                             float grad_scale) {
  const auto& t = tensors[chunk_tensor[blockIdx.x]];
  const int64_t begin = chunk_offset[blockIdx.x];
  const int64_t end = begin + kAdamChunk < t.numel ? begin + kAdamChunk : t.numel;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float g = t.grad[i] * grad_scale;
    const float m = beta1 * t.exp_avg[i] + (1.0f - beta1) * g;
    const float v = beta2 * t.exp_avg_sq[i] + (1.0f - beta2) * g * g;
    t.exp_avg[i] = m;
    t.exp_avg_sq[i] = v;
    const float update = (m / bc1) / (sqrtf(v / bc2) + eps);
    const float p = t.master[i] * (1.0f - lr * weight_decay) - lr * update;
    t.master[i] = p;
    t.model[i] = store<D>(p);
  }
}

template <typename D>
__global__ void bias_gelu_forward_kernel(const D* x, const float* bias, D* y, int64_t rows, int64_t cols) {
  for (int64_t pair = blockIdx.x; pair < row_chunk_pairs(rows, cols); pair += gridDim.x) {
    const RowChunk chunk = row_chunk(pair, cols);
    const int64_t base = chunk.row * cols;
    for (int64_t c = chunk.first + threadIdx.x; c < chunk.end; c += blockDim.x)
      y[base + c] = store<D>(gelu_tanh(load(x[base + c]) + bias[c]));
  }
}

// dx elementwise; dbias summed per column tile (common.cuh) before one atomic.
template <typename D>
__global__ void bias_gelu_backward_kernel(const D* dy, const D* x, const float* bias, D* dx, float* dbias, int64_t rows,
                                          int64_t cols) {
  const ColumnTile tile = column_tile(rows, cols);
  const int64_t c = tile.column;
  if (c >= cols) return;
  const float b = bias[c];
  float sum = 0;
  for (int64_t row = tile.first_row; row < tile.end_row; ++row) {
    const int64_t i = row * cols + c;
    const float g = load(dy[i]) * gelu_tanh_grad(load(x[i]) + b);
    dx[i] = store<D>(g);
    sum += g;
  }
  atomicAdd(&dbias[c], sum);
}

// y[row, c] = silu(gate_up[row, c]) * gate_up[row, cols + c].
template <typename D>
__global__ void swiglu_forward_kernel(const D* gate_up, D* y, int64_t rows, int64_t cols) {
  for (int64_t pair = blockIdx.x; pair < row_chunk_pairs(rows, cols); pair += gridDim.x) {
    const RowChunk chunk = row_chunk(pair, cols);
    const D* gate = gate_up + chunk.row * 2 * cols;
    for (int64_t c = chunk.first + threadIdx.x; c < chunk.end; c += blockDim.x) {
      const float g = load(gate[c]);
      y[chunk.row * cols + c] = store<D>(g * sigmoidf(g) * load(gate[cols + c]));
    }
  }
}

template <typename D>
__global__ void swiglu_backward_kernel(const D* dy, const D* gate_up, D* dgate_up, int64_t rows, int64_t cols) {
  for (int64_t pair = blockIdx.x; pair < row_chunk_pairs(rows, cols); pair += gridDim.x) {
    const RowChunk chunk = row_chunk(pair, cols);
    const D* gate = gate_up + chunk.row * 2 * cols;
    D* dgate = dgate_up + chunk.row * 2 * cols;
    for (int64_t c = chunk.first + threadIdx.x; c < chunk.end; c += blockDim.x) {
      const float g = load(gate[c]), u = load(gate[cols + c]), d = load(dy[chunk.row * cols + c]);
      const float s = sigmoidf(g);
      dgate[c] = store<D>(d * u * s * (1.0f + g * (1.0f - s)));
      dgate[cols + c] = store<D>(d * g * s);
    }
  }
}

}  // namespace

namespace {
// Rotation by +angle (forward) or -angle (backward: the gradient rotated back).
template <typename T>
void rope(const T* in, T* out, const int64_t* positions, int64_t tokens, int64_t heads, int64_t head_dim, float theta,
          float sign, void* stream, const char* name) {
  const int64_t width = heads * (head_dim / 2);
  if (tokens * width == 0) return;
  TESSERA_LAUNCH(row_chunk_grid(tokens, width), kBlock, as_stream(stream), rope_kernel)(
      dev(in), dev(out), positions, tokens, heads, head_dim, theta, sign);
  check_launch(name);
}
}  // namespace

template <typename T>
void rope_forward(const T* x, T* y, const int64_t* positions, int64_t tokens, int64_t heads, int64_t head_dim, float theta,
                  void* stream) {
  rope(x, y, positions, tokens, heads, head_dim, theta, 1.0f, stream, "rope_forward");
}

template <typename T>
void rope_backward(const T* dy, T* dx, const int64_t* positions, int64_t tokens, int64_t heads, int64_t head_dim, float theta,
                   void* stream) {
  rope(dy, dx, positions, tokens, heads, head_dim, theta, -1.0f, stream, "rope_backward");
}

template <typename T>
void adamw_step(const AdamWTensor<T>* tensors, int64_t count, const AdamWConfig& cfg, void* stream) {
  using D = device_t<T>;
  std::vector<DeviceAdamWTensor<D>> table;
  std::vector<int64_t> chunk_tensor, chunk_offset;
  for (int64_t k = 0; k < count; ++k) {
    const auto& t = tensors[k];
    table.push_back({t.master, dev(t.model), t.grad, t.exp_avg, t.exp_avg_sq, t.numel});
    for (int64_t offset = 0; offset < t.numel; offset += kAdamChunk) {
      chunk_tensor.push_back(k);
      chunk_offset.push_back(offset);
    }
  }
  if (chunk_tensor.empty()) return;
  const cudaStream_t s = as_stream(stream);
  const size_t table_bytes = table.size() * sizeof(DeviceAdamWTensor<D>);
  const size_t chunk_bytes = chunk_tensor.size() * sizeof(int64_t);
  const Scratch buffer(table_bytes + 2 * chunk_bytes, s, "adamw_step");
  auto* d_table = buffer.as<DeviceAdamWTensor<D>>();
  auto* d_chunk_tensor = reinterpret_cast<int64_t*>(buffer.as<char>() + table_bytes);
  auto* d_chunk_offset = d_chunk_tensor + chunk_tensor.size();
  // Pageable sources: the copies are staged before cudaMemcpyAsync returns, so the vectors may go.
  check(cudaMemcpyAsync(d_table, table.data(), table_bytes, cudaMemcpyHostToDevice, s), "adamw_step");
  check(cudaMemcpyAsync(d_chunk_tensor, chunk_tensor.data(), chunk_bytes, cudaMemcpyHostToDevice, s), "adamw_step");
  check(cudaMemcpyAsync(d_chunk_offset, chunk_offset.data(), chunk_bytes, cudaMemcpyHostToDevice, s), "adamw_step");
  const float bc1 = 1.0f - powf(cfg.beta1, static_cast<float>(cfg.step));
  const float bc2 = 1.0f - powf(cfg.beta2, static_cast<float>(cfg.step));
  TESSERA_LAUNCH(static_cast<unsigned>(chunk_tensor.size()), kBlock, s, adamw_kernel<D>)(
      d_table, d_chunk_tensor, d_chunk_offset, cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay, bc1, bc2,
      cfg.grad_scale);
  check_launch("adamw_step");
}

template <typename T>
void bias_gelu_forward(const T* x, const float* bias, T* y, int64_t rows, int64_t cols, void* stream) {
  if (rows * cols == 0) return;
  TESSERA_LAUNCH(row_chunk_grid(rows, cols), kBlock, as_stream(stream), bias_gelu_forward_kernel)(
      dev(x), bias, dev(y), rows, cols);
  check_launch("bias_gelu_forward");
}

template <typename T>
void bias_gelu_backward(const T* dy, const T* x, const float* bias, T* dx, float* dbias, int64_t rows, int64_t cols,
                        void* stream) {
  check(cudaMemsetAsync(dbias, 0, cols * sizeof(float), as_stream(stream)), "bias_gelu_backward");
  if (rows * cols == 0) return;
  TESSERA_LAUNCH(column_tile_grid(rows, cols), kBlock, as_stream(stream), bias_gelu_backward_kernel)(
      dev(dy), dev(x), bias, dev(dx), dbias, rows, cols);
  check_launch("bias_gelu_backward");
}

template <typename T>
void swiglu_forward(const T* gate_up, T* y, int64_t rows, int64_t cols, void* stream) {
  if (rows * cols == 0) return;
  TESSERA_LAUNCH(row_chunk_grid(rows, cols), kBlock, as_stream(stream), swiglu_forward_kernel)(
      dev(gate_up), dev(y), rows, cols);
  check_launch("swiglu_forward");
}

template <typename T>
void swiglu_backward(const T* dy, const T* gate_up, T* dgate_up, int64_t rows, int64_t cols, void* stream) {
  if (rows * cols == 0) return;
  TESSERA_LAUNCH(row_chunk_grid(rows, cols), kBlock, as_stream(stream), swiglu_backward_kernel)(
      dev(dy), dev(gate_up), dev(dgate_up), rows, cols);
  check_launch("swiglu_backward");
}

#define INSTANTIATE(T)                                                                                            \
  template void rope_forward<T>(const T*, T*, const int64_t*, int64_t, int64_t, int64_t, float, void*);          \
  template void rope_backward<T>(const T*, T*, const int64_t*, int64_t, int64_t, int64_t, float, void*);         \
  template void adamw_step<T>(const AdamWTensor<T>*, int64_t, const AdamWConfig&, void*);                        \
  template void bias_gelu_forward<T>(const T*, const float*, T*, int64_t, int64_t, void*);                       \
  template void bias_gelu_backward<T>(const T*, const T*, const float*, T*, float*, int64_t, int64_t, void*);    \
  template void swiglu_forward<T>(const T*, T*, int64_t, int64_t, void*);                                       \
  template void swiglu_backward<T>(const T*, const T*, T*, int64_t, int64_t, void*);
INSTANTIATE(float)
INSTANTIATE(bf16)
#undef INSTANTIATE

}  // namespace tessera::kernels::cuda
