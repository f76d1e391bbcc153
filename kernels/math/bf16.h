// bfloat16 as its 16 bits: the top half of an IEEE f32, rounded to nearest even. One definition for the CPU loop and
// the CUDA kernel, so both backends round every value the same way (and tests/test_bf16.cpp checks it on the host).
#pragma once

#include "kernels/math/hd.h"

namespace hr::math {

HR_HD uint32_t float_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  return __builtin_bit_cast(uint32_t, f);
#endif
}

HR_HD float bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  return __builtin_bit_cast(float, u);
#endif
}

HR_HD uint16_t to_bf16(float f) {
  const uint32_t u = float_bits(f);
  // a NaN keeps its sign and stays a (quiet) NaN; rounding could carry its payload into infinity
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);  // ties to even; overflow rounds to inf
}

HR_HD float from_bf16(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

}  // namespace hr::math
