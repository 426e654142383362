// Device metrics: host-clock and CUDA-event timers, CPU and CUDA memory readings, the peak FLOP/s.
#include "runtime/metrics/device_metrics.hpp"

#include <chrono>
#include <stdexcept>

#include <ATen/ATen.h>
#include <torch/cuda.h>

#include "runtime/metrics/counting_allocator.hpp"
#include "runtime/metrics/gemm_peak.hpp"
#include "spec/presets.hpp"

#ifdef TESSERA_WITH_CUDA
#include <cuda_runtime.h>

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace tessera::runtime {

namespace {

class HostTimer final : public OpTimer {
 public:
  void begin_step() override {
    origin_ = Clock::now();
    marks_.clear();
  }
  int mark() override {
    marks_.push_back(std::chrono::duration<double>(Clock::now() - origin_).count());
    return static_cast<int>(marks_.size()) - 1;
  }
  std::vector<double> seconds() override { return marks_; }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point origin_ = Clock::now();
  std::vector<double> marks_;
};

#ifdef TESSERA_WITH_CUDA
void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

// Events recorded on the current stream; a pool reused from step to step (no creation per op).
class CudaEventTimer final : public OpTimer {
 public:
  explicit CudaEventTimer(c10::DeviceIndex device) : device_(device) {}
  ~CudaEventTimer() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  // Event 0 is the origin; mark i is event i + 1.
  void begin_step() override {
    used_ = 0;
    record();
  }
  int mark() override { return static_cast<int>(record()) - 1; }
  std::vector<double> seconds() override {
    std::vector<double> out;
    if (used_ == 0) return out;
    check_cuda(cudaEventSynchronize(events_[used_ - 1]), "cudaEventSynchronize");
    for (size_t i = 1; i < used_; ++i) {
      float ms = 0;
      check_cuda(cudaEventElapsedTime(&ms, events_[0], events_[i]), "cudaEventElapsedTime");
      out.push_back(1e-3 * ms);
    }
    return out;
  }

 private:
  size_t record() {
    if (used_ == events_.size()) {
      cudaEvent_t e = nullptr;
      check_cuda(cudaEventCreate(&e), "cudaEventCreate");
      events_.push_back(e);
    }
    check_cuda(cudaEventRecord(events_[used_], c10::cuda::getCurrentCUDAStream(device_).stream()), "cudaEventRecord");
    return used_++;
  }

  c10::DeviceIndex device_;
  std::vector<cudaEvent_t> events_;
  size_t used_ = 0;
};
#endif

[[noreturn, maybe_unused]] void no_cuda() {  // unused where CUDA is built in
  throw std::runtime_error("this tessera-train was built without CUDA (TESSERA_WITH_CUDA=OFF): use --device cpu");
}

}  // namespace

std::unique_ptr<OpTimer> make_op_timer(const c10::Device& device) {
  if (device.is_cpu()) return std::make_unique<HostTimer>();
#ifdef TESSERA_WITH_CUDA
  return std::make_unique<CudaEventTimer>(device.index());
#else
  no_cuda();
#endif
}

MemoryReading read_memory(const c10::Device& device) {
  if (device.is_cpu()) {
    const auto& counter = CountingAllocator::install();
    return {counter.peak_bytes(), counter.live_bytes(), counter.peak_bytes()};
  }
#ifdef TESSERA_WITH_CUDA
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
  constexpr auto all = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  return {stats.allocated_bytes[all].peak, stats.allocated_bytes[all].current, stats.reserved_bytes[all].peak};
#else
  no_cuda();
#endif
}

void reset_memory_peak(const c10::Device& device) {
  if (device.is_cpu()) return;
#ifdef TESSERA_WITH_CUDA
  // Blocks cached while the model was built (its per-parameter copies, freed once flattened) would
  // stay in the reserved peak: returned to the device first.
  c10::cuda::CUDACachingAllocator::emptyCache();
  c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
#else
  no_cuda();
#endif
}

void set_current_cuda_device(int index) {
#ifdef TESSERA_WITH_CUDA
  check_cuda(cudaSetDevice(index), ("cudaSetDevice(" + std::to_string(index) + ")").c_str());
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(index));
#else
  (void)index;
  no_cuda();
#endif
}

CudaDeviceInfo cuda_device_info(int index) {
#ifdef TESSERA_WITH_CUDA
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, index) != cudaSuccess) return {};
  return {properties.name, static_cast<int64_t>(properties.totalGlobalMem)};
#else
  (void)index;
  return {};
#endif
}

double peak_tflops(const c10::Device& device, c10::ScalarType dtype, std::string* source) {
  if (device.is_cuda()) {
    const auto info = cuda_device_info(device.index());
    const std::string id = spec::gpu_preset_id_for_device(info.name, info.memory_bytes);
    if (const auto* preset = spec::PresetCatalog::builtin().gpu(id)) {
      if (source) *source = preset->name + " preset";
      return preset->peak_tflops(dtype == at::kBFloat16 ? spec::Precision::bf16 : spec::Precision::fp32);
    }
    if (source) *source = "a GEMM measured on " + (info.name.empty() ? std::string("the GPU") : info.name);
  } else if (source) {
    *source = "a GEMM measured on the CPU";
  }
  return measure_gemm_peak_tflops(at::TensorOptions().device(device).dtype(dtype));
}

}  // namespace tessera::runtime
