// The CPU emulator of CUDA (kernels/emu) keeps CUDA's rules: block-wide reductions through warp shuffles
// and __syncthreads give the right sums, a barrier that some threads skip or a write out of bounds fails
// the launch with a message naming the kernel, a bad launch configuration is refused, a 1-D launch has CUDA's unused coordinates (0) and dimensions (1), unwritten device
// memory reads as NaN, and a reduction missing its barrier gives a wrong result (so the CUDA kernels'
// emulated tests can catch that class of bug), random schedules show a race that thread order hides, and
// the kernels' scratch comes from the installed allocator.
#include <QtTest/QtTest>

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/common.cuh"

namespace {

using namespace tessera::kernels::cuda::detail;

__global__ void block_sum_kernel(const float* in, float* out, int64_t n) {
  float v = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) v += in[blockIdx.x * n + i];
  const float total = block_reduce<false>(v);
  const float largest = block_reduce<true>(v);
  if (threadIdx.x == 0) {
    out[2 * blockIdx.x] = total;
    out[2 * blockIdx.x + 1] = largest;
  }
}

__global__ void skipped_sync_kernel(float* out) {
  if (threadIdx.x < 100) __syncthreads();
  out[threadIdx.x] = 1.0f;
}

__global__ void half_warp_shuffle_kernel(float* out) {
  float v = static_cast<float>(threadIdx.x);
  if (threadIdx.x % 32 < 16) v = __shfl_xor_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
}

__global__ void one_past_the_end_kernel(float* out, int64_t n) {
  for (int64_t i = threadIdx.x; i <= n; i += blockDim.x) out[i] = 2.0f;  // <= : one too many
}

template <bool Barrier>
__global__ void shared_sum_kernel(float* out) {
  __shared__ float partial[256];
  partial[threadIdx.x] = static_cast<float>(threadIdx.x);
  if (Barrier) __syncthreads();
  if (threadIdx.x == 0) {
    float sum = 0;
    for (unsigned i = 0; i < blockDim.x; ++i) sum += partial[i];
    out[blockIdx.x] = sum;
  }
}

// block_reduce without its first barrier: in the second of two sums, warp 0 may write partial[0] before a
// slower thread has read the first sum from it.
__device__ float racy_block_sum(float v) {
  __shared__ float partial[32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  float r = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0f;
  if (warp == 0) r = warp_sum(r);
  if (threadIdx.x == 0) partial[0] = r;
  __syncthreads();
  return partial[0];
}

__global__ void two_racy_sums_kernel(float* out) {
  const float first = racy_block_sum(1.0f);
  racy_block_sum(2.0f);
  out[blockIdx.x * blockDim.x + threadIdx.x] = first;  // each thread's view of the first sum
}

// A 1-D launch: the unused coordinates of blockIdx and threadIdx are 0, of gridDim and blockDim 1 (as in CUDA).
__global__ void coordinates_kernel(float* out) {
  if (blockIdx.x != 1 || threadIdx.x != 5) return;
  const unsigned values[] = {blockIdx.y, blockIdx.z, threadIdx.y, threadIdx.z, gridDim.y, gridDim.z, blockDim.y, blockDim.z};
  for (int i = 0; i < 8; ++i) out[i] = static_cast<float>(values[i]);
}

__global__ void copy_kernel(const float* in, float* out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = in[i];
}

struct Buffer {
  float* ptr = nullptr;
  size_t n;
  explicit Buffer(size_t count) : n(count) { check(cudaMalloc(&ptr, n * sizeof(float)), "cudaMalloc"); }
  ~Buffer() { cudaFree(ptr); }
  void upload(const std::vector<float>& host) {
    check(cudaMemcpy(ptr, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), "upload");
  }
  std::vector<float> download() const {
    std::vector<float> host(n);
    check(cudaMemcpy(host.data(), ptr, n * sizeof(float), cudaMemcpyDeviceToHost), "download");
    return host;
  }
};

// The launch error's message, or "" when the launch succeeded.
std::string launch_error(const char* kernel) {
  try {
    check_launch(kernel);
    return {};
  } catch (const std::runtime_error& e) {
    return e.what();
  }
}

}  // namespace

class TestCudaEmulator : public QObject {
  Q_OBJECT
 private slots:
  void blockReductionsThroughShufflesAndBarriersAreExact() {
    const int64_t blocks = 3, n = 1000;
    std::vector<float> in(blocks * n);
    std::iota(in.begin(), in.end(), 0.0f);
    Buffer d_in(in.size()), d_out(2 * blocks);
    d_in.upload(in);
    TESSERA_LAUNCH(blocks, kBlock, nullptr, block_sum_kernel)(d_in.ptr, d_out.ptr, n);
    QCOMPARE(launch_error("block_sum"), std::string());
    const auto out = d_out.download();
    for (int64_t b = 0; b < blocks; ++b) {
      // Integers below 2^24 are exact in fp32, so any order of summation gives the same total.
      double expected = 0;
      for (int64_t i = 0; i < n; ++i) expected += static_cast<double>(b * n + i);
      QCOMPARE(static_cast<double>(out[2 * b]), expected);
      // The largest per-thread partial: thread t sums elements t, t+256, ...; thread 231 has 4 of them (231..999).
      float largest = 0;
      for (int64_t t = 0; t < kBlock; ++t) {
        float partial = 0;
        for (int64_t i = t; i < n; i += kBlock) partial += in[b * n + i];
        largest = std::max(largest, partial);
      }
      QCOMPARE(out[2 * b + 1], largest);
    }
  }

  void aBarrierSomeThreadsSkipFailsTheLaunch() {
    Buffer out(kBlock);
    TESSERA_LAUNCH(2, kBlock, nullptr, skipped_sync_kernel)(out.ptr);
    const std::string error = launch_error("skipped_sync");
    QVERIFY2(error.find("skipped_sync_kernel") != std::string::npos, error.c_str());
    QVERIFY2(error.find("block 0") != std::string::npos, error.c_str());
    QVERIFY2(error.find("__syncthreads") != std::string::npos, error.c_str());
    QVERIFY2(error.find("threads 100, 101") != std::string::npos, error.c_str());
  }

  void aShuffleHalfAWarpSkipsFailsTheLaunch() {
    Buffer out(64);
    TESSERA_LAUNCH(1, 64, nullptr, half_warp_shuffle_kernel)(out.ptr);
    const std::string error = launch_error("half_warp_shuffle");
    QVERIFY2(error.find("warp 0") != std::string::npos, error.c_str());
    QVERIFY2(error.find("warp shuffle") != std::string::npos, error.c_str());
    QVERIFY2(error.find("16, 17") != std::string::npos, error.c_str());
  }

  void aWriteOutOfBoundsFailsTheLaunch() {
    const int64_t n = 37;
    Buffer out(n), bystander(n);
    TESSERA_LAUNCH(1, kBlock, nullptr, one_past_the_end_kernel)(out.ptr, n);
    const std::string error = launch_error("one_past_the_end");
    QVERIFY2(error.find("one_past_the_end_kernel") != std::string::npos, error.c_str());
    QVERIFY2(error.find("148-byte buffer, at byte offset 148") != std::string::npos, error.c_str());
    // The guards are restored: the next, correct launch is not blamed.
    TESSERA_LAUNCH(1, kBlock, nullptr, one_past_the_end_kernel)(out.ptr, n - 1);
    QCOMPARE(launch_error("in bounds"), std::string());
  }

  void badLaunchConfigurationsAreRefused() {
    Buffer out(4);
    TESSERA_LAUNCH(0, kBlock, nullptr, copy_kernel)(out.ptr, out.ptr, int64_t{4});
    QVERIFY(launch_error("no blocks").find("0 blocks of 256 threads") != std::string::npos);
    TESSERA_LAUNCH(1, 2048, nullptr, copy_kernel)(out.ptr, out.ptr, int64_t{4});
    QVERIFY(launch_error("too many threads").find("1 blocks of 2048 threads") != std::string::npos);
    QCOMPARE(cudaGetLastError(), cudaSuccess);  // reading the error cleared it
  }

  void unusedCoordinatesAreZeroAndUnusedDimensionsOne() {
    Buffer out(8);
    TESSERA_LAUNCH(2, 64, nullptr, coordinates_kernel)(out.ptr);
    QCOMPARE(launch_error("coordinates"), std::string());
    QCOMPARE(out.download(), (std::vector<float>{0, 0, 0, 0, 1, 1, 1, 1}));
  }

  void unwrittenDeviceMemoryReadsAsNaN() {
    const int64_t n = 1000;
    Buffer in(n), out(n);
    TESSERA_LAUNCH(3, kBlock, nullptr, copy_kernel)(in.ptr, out.ptr, n);
    QCOMPARE(launch_error("copy"), std::string());
    for (float v : out.download()) QVERIFY(std::isnan(v));
  }

  void aReductionMissingItsBarrierGivesAWrongSum() {
    Buffer out(2);
    TESSERA_LAUNCH(2, kBlock, nullptr, shared_sum_kernel<true>)(out.ptr);
    QCOMPARE(launch_error("with barrier"), std::string());
    QCOMPARE(out.download(), std::vector<float>(2, 255.0f * 256.0f / 2.0f));
    // Without it, thread 0 of the first block sums before threads 1..255 have written their values: the
    // fibers run in thread order, so a thread's reads of what later threads write before a barrier go wrong.
    TESSERA_LAUNCH(2, kBlock, nullptr, shared_sum_kernel<false>)(out.ptr);
    QCOMPARE(launch_error("without barrier"), std::string());
    QVERIFY(out.download()[0] != 255.0f * 256.0f / 2.0f);
  }

  // The race above never shows in thread order (every thread reads the first sum before warp 0 gets to
  // run again); random schedules show it, and they still run correct kernels exactly.
  void randomSchedulesShowARaceThreadOrderHides() {
    Buffer out(2 * kBlock);
    auto wrong_views = [&] {
      TESSERA_LAUNCH(2, kBlock, nullptr, two_racy_sums_kernel)(out.ptr);
      check_launch("two racy sums");
      int wrong = 0;
      for (float v : out.download()) wrong += v != 256.0f ? 1 : 0;
      return wrong;
    };
    QCOMPARE(wrong_views(), 0);
    int seeds_showing_it = 0;
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      tessera::kernels::emu::set_schedule(seed);
      seeds_showing_it += wrong_views() > 0 ? 1 : 0;
      blockReductionsThroughShufflesAndBarriersAreExact();
    }
    tessera::kernels::emu::set_schedule(std::nullopt);
    qInfo("%d of 8 random schedules showed the race", seeds_showing_it);
    QVERIFY(seeds_showing_it > 0);
    QCOMPARE(wrong_views(), 0);
  }

  // The kernels take their scratch from the installed allocator (the runtime installs LibTorch's), give
  // all of it back, and still compute the same; a half-installed allocator is refused.
  void scratchComesFromTheInstalledAllocator() {
    static int allocations = 0, releases = 0;
    namespace k = tessera::kernels;
    k::cuda::set_scratch_allocator({[](size_t bytes, void*) {
                                      ++allocations;
                                      void* p = nullptr;
                                      check(cudaMalloc(&p, bytes), "scratch");
                                      return p;
                                    },
                                    [](void* p, void*) {
                                      ++releases;
                                      cudaFree(p);
                                    }});
    const int64_t rows = 5, cols = 300;
    std::vector<float> x(rows * cols), dy(rows * cols), w(cols, 1.5f);
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = std::sin(0.37f * static_cast<float>(i));
      dy[i] = std::cos(0.11f * static_cast<float>(i));
    }
    std::vector<float> rstd(rows), dx(rows * cols), dw(cols), y(rows * cols);
    k::cpu::rmsnorm_forward(x.data(), w.data(), y.data(), rstd.data(), rows, cols, 1e-6f);
    k::cpu::rmsnorm_backward(dy.data(), x.data(), w.data(), rstd.data(), dx.data(), dw.data(), rows, cols);
    Buffer d_x(x.size()), d_dy(dy.size()), d_w(cols), d_rstd(rows), d_dx(dx.size()), d_dw(cols);
    d_x.upload(x);
    d_dy.upload(dy);
    d_w.upload(w);
    d_rstd.upload(rstd);
    k::cuda::rmsnorm_backward(d_dy.ptr, d_x.ptr, d_w.ptr, d_rstd.ptr, d_dx.ptr, d_dw.ptr, rows,
                              cols, nullptr);
    k::cuda::set_scratch_allocator({});
    QCOMPARE(allocations, 1);
    QCOMPARE(releases, 1);
    const auto got = d_dx.download();
    for (size_t i = 0; i < got.size(); ++i) QVERIFY(std::abs(got[i] - dx[i]) < 1e-4f);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             k::cuda::set_scratch_allocator({[](size_t, void*) -> void* { return nullptr; }, nullptr}));
  }

  void copiesRefuseHostPointersAsDeviceMemory() {
    std::vector<float> host(4, 1.0f), other(4);
    QCOMPARE(cudaMemcpy(other.data(), host.data(), 16, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    Buffer small(2);
    QCOMPARE(cudaMemcpy(small.ptr, host.data(), 16, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  }
};

QTEST_GUILESS_MAIN(TestCudaEmulator)
#include "test_cuda_emulator.moc"
