// The exact accumulator behind strata::reproducible sums. A double is an integer m < 2^53 times
// a power of two; on a fixed grid of 30-bit windows of bit positions (window w holds bits
// [30w, 30w + 30) of x * 2^1074) it splits exactly into at most three integer chunks. The
// accumulator keeps the integer sums of the four windows at and below the highest window any of
// its elements reached, dropping whole windows below. Adding integers is associative and
// commutative, and which windows are dropped depends only on the highest window of all the
// elements, so the result is the same for any grouping and order of the same elements: any number
// of places, any partition, any CUB reduction tree. It is rounded once, at the end.
#pragma once

#include <cuda/std/limits>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace strata::detail {

/// Integer window sums of a reproducible floating-point sum. `w[k]` holds window `top - 3 + k`;
/// `top` is -1 for an accumulator without finite non-zero elements; `special` records infinities
/// (bit 0: +inf, bit 1: -inf) and NaNs (bit 2).
struct repro_acc {
  static constexpr int window_bits = 30;
  static constexpr int windows = 4;
  std::int64_t w[windows];
  std::int32_t top;
  std::uint32_t special;
};

/// The accumulator of no elements.
__host__ __device__ inline repro_acc repro_zero() {
  repro_acc a{};
  a.top = -1;
  return a;
}

/// The accumulator of one double: its chunks in the windows at and below its highest non-zero one.
__host__ __device__ inline repro_acc repro_of(double x) {
  repro_acc a = repro_zero();
  std::uint64_t u;
  ::memcpy(&u, &x, sizeof u);
  const bool negative = (u >> 63) != 0;
  const int e = static_cast<int>((u >> 52) & 0x7ff);
  const std::uint64_t f = u & ((std::uint64_t{1} << 52) - 1);
  if (e == 0x7ff) {
    a.special = f != 0 ? 4u : (negative ? 2u : 1u);
    return a;
  }
  if (e == 0 && f == 0) return a;
  // x = m * 2^(L - 1074): the lowest bit of m sits at grid position L.
  const std::uint64_t m = e != 0 ? (f | (std::uint64_t{1} << 52)) : f;
  const int L = e != 0 ? e - 1 : 0;
  const int wl = L / repro_acc::window_bits, r = L % repro_acc::window_bits;
  const std::uint64_t lo = m << r, hi = r != 0 ? m >> (64 - r) : 0;
  constexpr std::uint64_t mask = (std::uint64_t{1} << repro_acc::window_bits) - 1;
  std::int64_t c[3] = {static_cast<std::int64_t>(lo & mask), static_cast<std::int64_t>((lo >> 30) & mask),
                       static_cast<std::int64_t>((lo >> 60) | (hi << 4))};
  const int top = wl + (c[2] != 0 ? 2 : (c[1] != 0 ? 1 : 0));
  a.top = top;
  // Window wl + j goes to slot (wl + j) - (top - 3).
#pragma unroll
  for (int k = 0; k < repro_acc::windows; ++k) {
    std::int64_t v = 0;
#pragma unroll
    for (int j = 0; j < 3; ++j)
      if (wl + j - (top - 3) == k) v = c[j];
    a.w[k] = negative ? -v : v;
  }
  return a;
}

/// `a` re-expressed with its highest window at `t` >= a.top: windows below t - 3 are dropped.
__host__ __device__ inline repro_acc repro_raise(const repro_acc& a, int t) {
  if (a.top == t) return a;
  repro_acc b = a;
  b.top = t;
  const int d = a.top < 0 ? repro_acc::windows : t - a.top;
#pragma unroll
  for (int k = 0; k < repro_acc::windows; ++k) {
    std::int64_t v = 0;
#pragma unroll
    for (int j = 0; j < repro_acc::windows; ++j)
      if (j == k + d) v = a.w[j];
    b.w[k] = v;
  }
  return b;
}

/// The accumulator of the elements of both: exact, associative and commutative.
__host__ __device__ inline repro_acc repro_combine(const repro_acc& a, const repro_acc& b) {
  const int t = a.top > b.top ? a.top : b.top;
  const repro_acc x = repro_raise(a, t), y = repro_raise(b, t);
  repro_acc s;
  s.top = t;
  s.special = a.special | b.special;
#pragma unroll
  for (int k = 0; k < repro_acc::windows; ++k) s.w[k] = x.w[k] + y.w[k];
  return s;
}

/// The accumulator's exact value rounded once to T (float or double), to nearest, ties to even.
/// Infinities and NaNs follow IEEE addition: any NaN, or both infinities, give NaN.
template <class T>
__host__ __device__ T repro_round(const repro_acc& a) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "reproducible sums are of float or double");
  using limits = ::cuda::std::numeric_limits<T>;
  if (a.special & 4u || (a.special & 3u) == 3u) return limits::quiet_NaN();
  if (a.special & 1u) return limits::infinity();
  if (a.special & 2u) return -limits::infinity();
  if (a.top < 0) return T(0);
  // V = sum_k w[k] * 2^(30k) as a signed 192-bit integer (three 64-bit limbs, two's complement).
  std::uint64_t v[3] = {0, 0, 0};
#pragma unroll
  for (int k = 0; k < repro_acc::windows; ++k) {
    const std::int64_t x = a.w[k];
    const int s = 30 * k;
    const std::uint64_t ext = x < 0 ? ~std::uint64_t{0} : 0;
    std::uint64_t part[3];
    const std::uint64_t ux = static_cast<std::uint64_t>(x);
    if (s == 0) {
      part[0] = ux;
      part[1] = ext;
      part[2] = ext;
    } else if (s < 64) {
      part[0] = ux << s;
      part[1] = (ux >> (64 - s)) | (ext << s);
      part[2] = ext;
    } else {
      const int t = s - 64;  // 0 < t < 64 for the windows used (s = 90)
      part[0] = 0;
      part[1] = ux << t;
      part[2] = (ux >> (64 - t)) | (ext << t);
    }
    std::uint64_t carry = 0;
#pragma unroll
    for (int i = 0; i < 3; ++i) {
      const std::uint64_t sum = v[i] + part[i];
      const std::uint64_t c1 = sum < v[i] ? 1 : 0;
      const std::uint64_t sum2 = sum + carry;
      const std::uint64_t c2 = sum2 < sum ? 1 : 0;
      v[i] = sum2;
      carry = c1 | c2;
    }
  }
  const bool negative = (v[2] >> 63) != 0;
  if (negative) {  // magnitude: two's complement negation
    std::uint64_t carry = 1;
#pragma unroll
    for (int i = 0; i < 3; ++i) {
      const std::uint64_t n = ~v[i] + carry;
      carry = (carry != 0 && n == 0) ? 1 : 0;
      v[i] = n;
    }
  }
  int p = -1;  // highest set bit of the magnitude
  for (int i = 191; i >= 0 && p < 0; --i)
    if ((v[i / 64] >> (i % 64)) & 1) p = i;
  if (p < 0) return T(0);
  // Bit i of V weighs 2^(i + base).
  const int base = 30 * (a.top - 3) - 1074;
  constexpr int digits = std::is_same_v<T, double> ? 53 : 24;
  constexpr int min_exp = std::is_same_v<T, double> ? -1074 : -149;  // weight of the smallest subnormal
  int lsb = p - (digits - 1);
  if (lsb + base < min_exp) lsb = min_exp - base;
  const auto bit = [&](int i) -> std::uint64_t { return i < 0 || i > 191 ? 0 : (v[i / 64] >> (i % 64)) & 1; };
  // Mantissa = bits [lsb, p]; round on bit lsb - 1 and the sticky bits below it.
  std::uint64_t mant = 0;
  for (int i = p; i >= lsb && i >= 0; --i) mant = (mant << 1) | bit(i);
  if (lsb > 0) {
    const std::uint64_t half = bit(lsb - 1);
    bool sticky = false;
    for (int i = lsb - 2; i >= 0 && !sticky; --i) sticky = bit(i) != 0;
    if (half && (sticky || (mant & 1))) ++mant;
  }
  // mant < 2^(digits + 1): exact in double, and ldexp scales exactly (or overflows to inf).
  const int scale = (lsb > 0 ? lsb : 0) + base;
  const double r = ::ldexp(static_cast<double>(mant), scale);
  const T out = static_cast<T>(r);  // exact for float: mant has at most 25 significant bits here
  return negative ? -out : out;
}

/// CUB's reduction operator over accumulators.
struct repro_combine_fn {
  __host__ __device__ repro_acc operator()(const repro_acc& a, const repro_acc& b) const { return repro_combine(a, b); }
};

/// The per-element transform of a reproducible sum: f's result, widened to double (exactly, for
/// float), as an accumulator.
template <class F>
struct repro_of_result {
  F f;
  template <class... X>
  __host__ __device__ repro_acc operator()(const X&... x) const {
    return repro_of(static_cast<double>(f(x...)));
  }
};

}  // namespace strata::detail
