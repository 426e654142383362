// A CPU allocator that counts: installed with c10::SetCPUAllocator in front of the default one, it
// knows the exact bytes of live tensors (and other LibTorch CPU buffers) and their peak.
#pragma once

#include <atomic>
#include <cstdint>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

namespace tessera::runtime {

class CountingAllocator final : public c10::Allocator {
 public:
  /// Installs the process-wide instance (once) in front of the current CPU allocator.
  static CountingAllocator& install();

  int64_t live_bytes() const { return live_.load(); }
  int64_t peak_bytes() const { return peak_.load(); }

  c10::DataPtr allocate(size_t bytes) override;
  void copy_data(void* dest, const void* src, std::size_t count) const override;
  c10::DeleterFnPtr raw_deleter() const override;

 private:
  explicit CountingAllocator(c10::Allocator* base) : base_(base) {}
  static void release(void* context);

  c10::Allocator* base_;
  std::atomic<int64_t> live_{0}, peak_{0};
};

}  // namespace tessera::runtime
