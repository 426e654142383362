// The CUDA kernels of kernels/cuda, the same source compiled as C++ for the CPU emulator (cuda_emu.hpp),
// so that they run and are tested where no GPU is.
#include "../cuda/norms.cu"
#include "../cuda/vocab_ce.cu"
#include "../cuda/elementwise.cu"
#include "../cuda/scratch.cu"
