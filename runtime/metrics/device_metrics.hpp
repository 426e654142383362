// What a rank measures about its device: the timestamps of its pipeline operations (the host clock on
// the CPU path, CUDA events on the GPU path, so the timeline shows when the GPU ran each op, not when
// the host enqueued it), its memory (the counting CPU allocator, or the CUDA caching allocator's
// allocated and reserved bytes) and the peak FLOP/s that MFU divides by.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

namespace tessera::runtime {

/// Timestamps within one step.
class OpTimer {
 public:
  virtual ~OpTimer() = default;
  /// The origin of this step's timestamps; forgets the previous step's marks.
  virtual void begin_step() = 0;
  /// A timestamp now (on the device: on the current stream); returns its index.
  virtual int mark() = 0;
  /// Seconds from begin_step() to every mark of this step, by index (waits for the device).
  virtual std::vector<double> seconds() = 0;
};

std::unique_ptr<OpTimer> make_op_timer(const c10::Device& device);

struct MemoryReading {
  int64_t peak_bytes = 0;           ///< most bytes of live tensors since the last reset
  int64_t live_bytes = 0;           ///< bytes of live tensors now
  int64_t peak_reserved_bytes = 0;  ///< most bytes the allocator held (CUDA cache); the CPU path holds no cache: peak_bytes
};

/// The CPU path counts through CountingAllocator (installed first); CUDA reads the caching allocator.
MemoryReading read_memory(const c10::Device& device);
/// Starts the peak over (CUDA only: the CPU counting allocator's peak covers the whole run).
void reset_memory_peak(const c10::Device& device);

/// The peak of the device for MFU, in TFLOP/s: on CUDA the dense peak of the GPU preset whose name
/// matches the detected GPU (H200, H100, A100 40/80 GB, B200, L40S) for `dtype`; on the CPU, and
/// on a GPU without a preset, a large GEMM measured now. `source` says which.
double peak_tflops(const c10::Device& device, c10::ScalarType dtype, std::string* source = nullptr);

/// Makes CUDA device `index` this thread's current one (streams, NCCL, new tensors).
void set_current_cuda_device(int index);

/// The CUDA device's name and memory ("" and 0 without CUDA).
struct CudaDeviceInfo {
  std::string name;
  int64_t memory_bytes = 0;
};
CudaDeviceInfo cuda_device_info(int index);

}  // namespace tessera::runtime
