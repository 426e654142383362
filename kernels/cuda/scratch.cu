// The kernels' short-lived device scratch (common.cuh's Scratch): from the allocator the runtime
// installs (set_scratch_allocator, kernels.hpp), else cudaMallocAsync / cudaFreeAsync.
#include "common.cuh"

namespace tessera::kernels::cuda {

using namespace detail;

namespace {
ScratchAllocator scratch_allocator;  // set before the first kernel runs (the runtime does so at start)
}  // namespace

void set_scratch_allocator(ScratchAllocator allocator) {
  if ((allocator.allocate == nullptr) != (allocator.release == nullptr))
    throw std::invalid_argument("set_scratch_allocator: set both allocate and release, or neither");
  scratch_allocator = allocator;
}

namespace detail {
Scratch::Scratch(size_t bytes, cudaStream_t stream, const char* what) : stream_(stream) {
  if (scratch_allocator.allocate) {
    pointer_ = scratch_allocator.allocate(bytes, stream);
    release_ = scratch_allocator.release;
  } else {
    check(cudaMallocAsync(&pointer_, bytes, stream), what);
  }
}
Scratch::~Scratch() {
  if (release_)
    release_(pointer_, stream_);
  else
    cudaFreeAsync(pointer_, stream_);
}
}  // namespace detail

}  // namespace tessera::kernels::cuda
