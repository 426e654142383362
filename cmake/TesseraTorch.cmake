# LibTorch (from the pinned torch wheel in .venv/) and the Gloo headers, for runtime/ and its tests.
# Included only with TESSERA_BUILD_RUNTIME=ON, where a missing LibTorch is an error.

# The wheel is CUDA-enabled; without a GPU its CMake config cannot detect an architecture, so name one
# (the GPU machine's H200 is sm_90). The CPU path compiles no CUDA code.
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST "9.0")
endif()
find_package(Torch QUIET)
if(NOT Torch_FOUND)
  message(FATAL_ERROR
    "TESSERA_BUILD_RUNTIME=ON but LibTorch was not found. Run ./test.sh (it installs the pinned torch "
    "wheel into .venv/ and passes its prefix), or configure with "
    "-DCMAKE_PREFIX_PATH=$(.venv/bin/python -c 'import torch; print(torch.utils.cmake_prefix_path)'), "
    "or build without the runtime: -DTESSERA_BUILD_RUNTIME=OFF")
endif()
# ProcessGroupGloo.hpp includes Gloo's headers, which the wheel does not ship (Debian: libgloo-dev).
# Only declarations are used: every Gloo object is created inside LibTorch.
find_path(GLOO_INCLUDE_DIR gloo/algorithm.h)
if(NOT GLOO_INCLUDE_DIR)
  message(FATAL_ERROR "Gloo headers not found (gloo/algorithm.h): apt-get install libgloo-dev, or -DTESSERA_BUILD_RUNTIME=OFF")
endif()

