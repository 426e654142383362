// The counting allocator: each allocation carries a small context with the base allocation and its
// size, so the release subtracts exactly what was added.
#include "runtime/metrics/counting_allocator.hpp"

#include <cstring>

namespace tessera::runtime {

namespace {

struct Allocation {
  c10::DataPtr base;
  int64_t bytes;
  std::atomic<int64_t>* live;
};

}  // namespace

CountingAllocator& CountingAllocator::install() {
  static CountingAllocator* instance = [] {
    auto* allocator = new CountingAllocator(c10::GetCPUAllocator());  // lives as long as the process
    c10::SetCPUAllocator(allocator, /*priority=*/1);
    return allocator;
  }();
  return *instance;
}

c10::DataPtr CountingAllocator::allocate(size_t bytes) {
  c10::DataPtr base = base_->allocate(bytes);
  void* data = base.get();
  const c10::Device device = base.device();
  auto* allocation = new Allocation{std::move(base), static_cast<int64_t>(bytes), &live_};
  const int64_t now = live_.fetch_add(allocation->bytes) + allocation->bytes;
  int64_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  return {data, allocation, &CountingAllocator::release, device};
}

void CountingAllocator::release(void* context) {
  auto* allocation = static_cast<Allocation*>(context);
  allocation->live->fetch_sub(allocation->bytes);
  delete allocation;  // frees the base allocation
}

void CountingAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  std::memcpy(dest, src, count);
}

}  // namespace tessera::runtime
