// The counting allocator: each allocation is preceded by a 64-byte header (the alignment LibTorch
// keeps) holding its size and how to free the base allocation, so the release subtracts exactly what
// was added, and the data pointer is its own context (what raw_allocate, used by oneDNN's bf16
// kernels, requires).
#include "runtime/metrics/counting_allocator.hpp"

#include <cstring>

namespace tessera::runtime {

namespace {

constexpr size_t kHeaderBytes = 64;

struct Header {
  int64_t bytes;
  void* base_context;
  c10::DeleterFnPtr base_deleter;
  std::atomic<int64_t>* live;
};
static_assert(sizeof(Header) <= kHeaderBytes);

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
  c10::DataPtr base = base_->allocate(bytes + kHeaderBytes);
  auto* start = static_cast<char*>(base.get());
  const c10::Device device = base.device();
  void* data = start + kHeaderBytes;
  c10::DeleterFnPtr base_deleter = base.get_deleter();
  void* base_context = base.release_context();
  new (start) Header{static_cast<int64_t>(bytes), base_context, base_deleter, &live_};
  const int64_t now = live_.fetch_add(static_cast<int64_t>(bytes)) + static_cast<int64_t>(bytes);
  int64_t peak = peak_.load();
  while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
  }
  return {data, data, &CountingAllocator::release, device};
}

c10::DeleterFnPtr CountingAllocator::raw_deleter() const { return &CountingAllocator::release; }

void CountingAllocator::release(void* data) {
  auto* header = reinterpret_cast<Header*>(static_cast<char*>(data) - kHeaderBytes);
  header->live->fetch_sub(header->bytes);
  const Header copy = *header;
  if (copy.base_deleter) copy.base_deleter(copy.base_context);  // frees the header with the rest
}

void CountingAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  std::memcpy(dest, src, count);
}

}  // namespace tessera::runtime
