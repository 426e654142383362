// bfloat16 storage for the CPU references: 16 bits, converted to and from float with
// round-to-nearest-even, bit-compatible with CUDA's __nv_bfloat16.
#pragma once

#include <cstdint>
#include <cstring>

namespace tessera::kernels {

struct bf16 {
  uint16_t bits = 0;
  bf16() = default;
  explicit bf16(float value) {
    uint32_t u;
    std::memcpy(&u, &value, 4);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) {
      bits = static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
      return;
    }
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
    bits = static_cast<uint16_t>(u >> 16);
  }
  explicit operator float() const {
    const uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

inline float to_float(float x) { return x; }
inline float to_float(bf16 x) { return static_cast<float>(x); }
template <typename T>
T from_float(float x) {
  return T(x);
}

}  // namespace tessera::kernels
