// Philox4x32-10 and the normal numbers drawn from it (counter_rng.hpp).
#include "runtime/model/counter_rng.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tessera::runtime {

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> key) {
  // The multipliers and the key schedule's Weyl constants of Salmon et al. 2011, §3.3 (Random123).
  constexpr uint64_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kW0;
      key[1] += kW1;
    }
    const uint64_t p0 = kM0 * c[0], p1 = kM1 * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ key[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ key[1], static_cast<uint32_t>(p0)};
  }
  return c;
}

namespace {

// log(x) for a normal float x > 0: x = m·2^e with m in [√½, √2), log m = 2·atanh(t), t = (m − 1)/(m + 1),
// |t| < 0.172, by its series to t⁹ (relative error 2e-7 against libm over (0, 1]).
inline float log_positive(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  int32_t exponent = static_cast<int32_t>((bits >> 23) & 0xffu) - 127;
  const uint32_t mantissa_bits = (bits & 0x7fffffu) | 0x3f800000u;
  float m;
  std::memcpy(&m, &mantissa_bits, sizeof m);
  const auto above = static_cast<int32_t>(m > 1.41421356f);  // arithmetic, not a branch: the loop vectorises
  m *= 1.0f - 0.5f * static_cast<float>(above);
  exponent += above;
  const float t = (m - 1.0f) / (m + 1.0f), t2 = t * t;
  const float series = 1.0f + t2 * (1.0f / 3 + t2 * (1.0f / 5 + t2 * (1.0f / 7 + t2 * (1.0f / 9))));
  return static_cast<float>(exponent) * 0.693147180559945f + 2.0f * t * series;
}

// sin and cos of 2πx for x in [0, 1): x = q/4 + r, |r| ≤ 1/8, Taylor polynomials of 2πr to degree 9 and
// 8, turned by q quarter turns (error 2e-7).
inline void sin_cos_2pi(float x, float& sine, float& cosine) {
  const auto quarter = static_cast<int32_t>(4.0f * x + 0.5f);
  const float a = 6.28318530717958647692f * (x - 0.25f * static_cast<float>(quarter)), a2 = a * a;
  const float s = a * (1.0f + a2 * (-1.0f / 6 + a2 * (1.0f / 120 + a2 * (-1.0f / 5040 + a2 * (1.0f / 362880)))));
  const float c = 1.0f + a2 * (-0.5f + a2 * (1.0f / 24 + a2 * (-1.0f / 720 + a2 * (1.0f / 40320))));
  const int32_t q = quarter & 3;  // sin: s, c, −s, −c; cos: c, −s, −c, s
  const float swap = static_cast<float>(q & 1);
  sine = (s + swap * (c - s)) * (1.0f - 2.0f * static_cast<float>(q >> 1));
  cosine = (c + swap * (s - c)) * (1.0f - 2.0f * static_cast<float>((q ^ (q >> 1)) & 1));
}

// Box-Muller on n pairs of words, each as a 24-bit uniform: u1 in (0, 1] (at least 2^-25: its log is
// finite), u2 in [0, 1); z[2i] and z[2i + 1] are std times the cos and the sin of pair i. Plain arithmetic in one
// loop, which the compiler vectorises (this file is built with -O3 -fno-math-errno, and
// -ffp-contract=off so that every machine rounds alike).
// On x86-64 an AVX2 clone as well, chosen when the CPU has it (the same IEEE operations, lane by lane:
// the same bits, 1.3x faster here).
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target_clones("avx2", "default")))
#endif
void box_muller(const uint32_t* first_words, const uint32_t* second_words, float std, float* z, int n) {
  constexpr float kUnit = 1.0f / 16777216.0f;  // 2^-24
  for (int i = 0; i < n; ++i) {
    const float u1 = (static_cast<float>(first_words[i] >> 8) + 0.5f) * kUnit;
    const float radius = std * std::sqrt(-2.0f * log_positive(u1));
    float sine, cosine;
    sin_cos_2pi(static_cast<float>(second_words[i] >> 8) * kUnit, sine, cosine);
    z[2 * i] = radius * cosine;
    z[2 * i + 1] = radius * sine;
  }
}

}  // namespace

void normal_range(uint64_t key, int64_t first, int64_t count, float std, float* out) {
  if (count <= 0) return;
  const std::array<uint32_t, 2> words{static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
  constexpr int kBlocks = 256;  // Philox blocks per round: 1,024 numbers, in L1
  uint32_t first_words[2 * kBlocks], second_words[2 * kBlocks];
  float z[4 * kBlocks];  // numbers 4·block .. 4·(block + n) − 1: pair i is words (2i mod 4, 2i mod 4 + 1) of block i/2
  const int64_t end = first + count;
  for (int64_t block = first >> 2, last = (end - 1) >> 2; block <= last; block += kBlocks) {
    const int n = static_cast<int>(std::min<int64_t>(kBlocks, last - block + 1));
    for (int j = 0; j < n; ++j) {
      const auto b = static_cast<uint64_t>(block + j);
      const auto w = philox4x32_10({static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32), 0, 0}, words);
      first_words[2 * j] = w[0], second_words[2 * j] = w[1];
      first_words[2 * j + 1] = w[2], second_words[2 * j + 1] = w[3];
    }
    box_muller(first_words, second_words, std, z, 2 * n);
    const int64_t from = std::max(first, 4 * block), to = std::min(end, 4 * (block + n));
    std::copy(z + (from - 4 * block), z + (to - 4 * block), out + (from - first));
  }
}

}  // namespace tessera::runtime
