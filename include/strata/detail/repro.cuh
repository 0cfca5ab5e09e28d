// The exact accumulator behind strata::reproducible sums (the idea of Demmel and Nguyen's binned
// summation, ReproBLAS, on a fixed grid). Bit positions are cut into 30-bit windows: window w has
// the unit u_w = 2^(30w - 1072). An accumulator with top window T holds, for windows T-3..T, the
// exact integer sum (in units u_w) of what its elements deposited there. T is the smallest window
// >= 3 with |x| < 2^29 u_T for every element x. An element x is deposited from the top down: at
// window T it leaves d_T = x rounded to a multiple of u_T (to nearest, a tie away from zero), the
// remainder x - d_T (exact, |.| <= u_T / 2) goes on to window T-1, and so on; what is left below
// u_(T-3) / 2 is dropped. An element below 2^29 u_T deposits 0 in every window above T, so an
// accumulator raised to a higher top (its lowest windows dropped) holds exactly what its elements
// would have deposited with that top. Window sums are integers: adding them is associative and
// commutative, and the top depends only on the largest element, so the result is the same for any
// grouping and order of the same elements: any number of places, any partition, any grid of
// threads. It is rounded once, at the end.
//
// The deposits run in double arithmetic on a thread's running accumulator (repro_thread): window
// k's running value is 1.5 * 2^52 * u_k plus the deposits, so adding (x with its lowest bit set)
// rounds x to a multiple of u_k, ties away from zero whatever the running value, and the difference
// is exact (a few floating-point additions per window and element, no integer work: the
// memory-bound sum hides them). Tops from 60 up work in units scaled by 2^-64 so that no running
// value overflows; elements too small for that scaling to be exact deposit nothing at such tops.
//
// Sums rounded to float keep three windows (T-2..T) instead of four: the same rules with the
// lowest window T-2 (a raise drops what falls below it), an error bound of N * 2^-60 * max|x|,
// still some 2^36 below a float's precision for the element counts allowed, and a third fewer
// double additions per element: float sums are the ones where the FP64 deposit work, not the
// memory, bounded the speed. Float terms widen to double by bit arithmetic (the conversion
// instruction runs at a quarter of the FP64 adds' rate on sm_90), compare against the limit in
// float, and skip zeros.
#pragma once

#include <cub/block/block_reduce.cuh>

#include <cuda/std/limits>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace strata::detail {

/// Integer window sums of a reproducible floating-point sum. `w[k]` holds window `top - 3 + k`;
/// `top` is -1 for an accumulator without finite elements; `special` records infinities
/// (bit 0: +inf, bit 1: -inf) and NaNs (bit 2).
struct repro_acc {
  static constexpr int window_bits = 30;
  static constexpr int windows = 4;
  static constexpr int unit0 = -1072;  ///< window w's unit is 2^(30w + unit0)
  static constexpr int min_top = 3;
  static constexpr int scaled_top = 60;  ///< tops from here on run in units scaled by 2^-scale_bits
  static constexpr int scale_bits = 64;
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

/// How many windows (from the top) a sum rounded to T keeps: 3 for float, 4 for double.
template <class T>
inline constexpr int repro_windows_for = std::is_same_v<T, float> ? 3 : 4;

/// The smallest top window T (>= 3) with |x| < 2^29 u_T, for a finite x.
__host__ __device__ inline int repro_top_of(double x) {
  std::uint64_t u;
  ::memcpy(&u, &x, sizeof u);
  const int e = static_cast<int>((u >> 52) & 0x7ff);
  // |x| < 2^(b + 1) with b = e - 1023 (normal) or -1023 (zero, subnormal: |x| < 2^-1022).
  const int b = (e != 0 ? e : 1) - 1023;
  // b + 1 <= 30T - 1043  <=>  T >= (b + 1044) / 30
  const int need = b + 1044;
  const int t = need <= 0 ? 0 : (need + 29) / 30;
  return t < repro_acc::min_top ? repro_acc::min_top : t;
}

/// x with the lowest bit of its significand set.
__host__ __device__ inline double repro_or1(double x) {
  std::uint64_t u;
  ::memcpy(&u, &x, sizeof u);
  u |= 1;
  ::memcpy(&x, &u, sizeof u);
  return x;
}

/// A finite nonzero normal float widened to double by bit arithmetic (exact, as the conversion).
__host__ __device__ __forceinline__ double repro_widen_normal(float f) {
  std::uint32_t u;
  ::memcpy(&u, &f, sizeof u);
  // Sign stays; exponent and the top 20 significand bits move to the high word, rebiased
  // (1023 - 127); the low 3 significand bits open the low word.
  const std::uint32_t hi = (u & 0x80000000u) | (((u & 0x7fffffffu) >> 3) + ((1023u - 127u) << 20));
  const std::uint64_t b = (std::uint64_t{hi} << 32) | (std::uint64_t{u} << 29 & 0xffffffffu);
  double d;
  ::memcpy(&d, &b, sizeof d);
  return d;
}

/// A thread's running accumulator keeping W windows (3 or 4): deposits in double arithmetic (see
/// the file comment), turned into a repro_acc at the end. `s[k]` runs window top - k.
template <int W = repro_acc::windows>
struct repro_thread {
  static_assert(W == 3 || W == 4, "reproducible sums keep 3 or 4 windows");
  double s[W];
  double limit;  // 2^29 u_top (unscaled): an element at or above it raises the top (or is inf/NaN)
  float limit_f;  // the same limit as a float (0 below the floats, inf above them): exact
  double scale;  // 1, or 2^-64 from scaled_top up
  int top;
  std::uint32_t special;

  __host__ __device__ repro_thread() : s{}, limit(0), limit_f(0), scale(1), top(-1), special(0) {}

  // log2 of window (top - k)'s unit as the running values hold it.
  __host__ __device__ __forceinline__ int unit_exp(int k) const {
    return repro_acc::window_bits * (top - k) + repro_acc::unit0 - (top >= repro_acc::scaled_top ? repro_acc::scale_bits : 0);
  }

  /// Sets the windows from an accumulator whose top is this thread's (every |w| < 2^51).
  __host__ __device__ __forceinline__ void load(const repro_acc& a) {
    scale = top >= repro_acc::scaled_top ? ::ldexp(1.0, -repro_acc::scale_bits) : 1.0;
    // (unscaled: it meets the element before the scaling; infinite from the top that holds every double)
    limit = ::ldexp(1.0, repro_acc::window_bits * top + repro_acc::unit0 + 29);
    limit_f = static_cast<float>(limit);  // a power of two: exact, 0 or inf outside the floats
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const int e = unit_exp(k);
      s[k] = ::ldexp(1.5, e + 52) + ::ldexp(static_cast<double>(a.w[repro_acc::windows - 1 - k]), e);
    }
  }

  /// The exact window sums (windows below the W kept ones hold 0).
  __host__ __device__ __forceinline__ repro_acc get() const {
    repro_acc a = repro_zero();
    a.special = special;
    if (top < 0) return a;
    a.top = top;
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const int e = unit_exp(k);
      // s[k] and its base lie in one binade: the difference is exact, and an integer in units.
      a.w[repro_acc::windows - 1 - k] = static_cast<std::int64_t>(::ldexp(s[k] - ::ldexp(1.5, e + 52), -e));
    }
    return a;
  }

  // The rare path: an infinity or NaN, or an element that needs a higher top.
  __host__ __device__ __forceinline__ bool admit(double x) {
    if (x != x) {
      special |= 4u;
      return false;
    }
    if (x == cuda::std::numeric_limits<double>::infinity()) {
      special |= 1u;
      return false;
    }
    if (x == -cuda::std::numeric_limits<double>::infinity()) {
      special |= 2u;
      return false;
    }
    const int t = repro_top_of(x);
    if (t > top) raise(t);
    return true;
  }

  __host__ __device__ __forceinline__ void raise(int t);

  /// Deposits one element. Running values stay exact for 2^21 deposits (each is at most
  /// 2^29 units of its window, the running value may move 2^50 units): callers give a thread no
  /// more elements than that.
  __host__ __device__ __forceinline__ void add(double x) {
    if (!(::fabs(x) < limit) && !admit(x)) return;
    deposit(x * scale);
  }

  /// Deposits one float element: the same deposit as add(double(x)), cheaper (see the file
  /// comment); floats never reach the scaled tops (|x| < 2^128), so no scaling.
  __host__ __device__ __forceinline__ void add(float x) {
    std::uint32_t u;
    ::memcpy(&u, &x, sizeof u);
    if (::fabsf(x) < limit_f && (u & 0x7f800000u) != 0) {
      deposit(repro_widen_normal(x));  // the common case: a normal float under the limit
      return;
    }
    // The rest: zeros (they deposit nothing), subnormals, infinities, NaNs, new tops.
    if (x == 0.0f) return;
    const double d = static_cast<double>(x);
    if (!(::fabs(d) < limit) && !admit(d)) return;
    deposit(d);
  }

 private:
  __host__ __device__ __forceinline__ void deposit(double x) {
#pragma unroll
    for (int k = 0; k < W - 1; ++k) {
      const double q = s[k] + repro_or1(x);
      const double d = q - s[k];
      s[k] = q;
      x -= d;
    }
    s[W - 1] += repro_or1(x);
  }
};

/// `a` (keeping W windows) re-expressed with its highest window at `t` >= a.top: windows below
/// t - (W - 1) are dropped.
template <int W = repro_acc::windows>
__host__ __device__ __forceinline__ repro_acc repro_raise(const repro_acc& a, int t) {
  if (a.top == t) return a;
  repro_acc b = a;
  b.top = t;
  const int d = a.top < 0 ? repro_acc::windows : t - a.top;
  // One window down per step, with constant indices only (an indexed form would put the
  // accumulator in local memory on the device).
#pragma unroll
  for (int step = 0; step < repro_acc::windows; ++step) {
    const bool shift = step < d;
#pragma unroll
    for (int k = 0; k < repro_acc::windows; ++k) {
      const std::int64_t above = k + 1 < repro_acc::windows ? b.w[k + 1 < repro_acc::windows ? k + 1 : k] : 0;
      b.w[k] = shift ? above : b.w[k];
    }
  }
#pragma unroll
  for (int k = 0; k < repro_acc::windows - W; ++k) b.w[k] = 0;  // below the kept windows
  return b;
}

template <int W>
__host__ __device__ __forceinline__ void repro_thread<W>::raise(int t) {
  const repro_acc a = repro_raise<W>(get(), t);
  top = t;
  load(a);
}

/// The accumulator of one element (keeping W windows).
template <int W = repro_acc::windows>
__host__ __device__ __forceinline__ repro_acc repro_of(double x) {
  repro_thread<W> t;
  t.add(x);
  return t.get();
}

/// The accumulator of the elements of both (each keeping W windows): exact, associative and
/// commutative.
template <int W = repro_acc::windows>
__host__ __device__ __forceinline__ repro_acc repro_combine(const repro_acc& a, const repro_acc& b) {
  const int t = a.top > b.top ? a.top : b.top;
  const repro_acc x = repro_raise<W>(a, t), y = repro_raise<W>(b, t);
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
  const int base = repro_acc::window_bits * (a.top - 3) + repro_acc::unit0;
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
template <int W>
struct repro_combine_fn {
  __host__ __device__ repro_acc operator()(const repro_acc& a, const repro_acc& b) const { return repro_combine<W>(a, b); }
};

// ---- the per-segment kernels ----------------------------------------------------------

inline constexpr int repro_block = 256;
/// The most elements one thread of repro_blocks_kernel may deposit (see repro_thread::add).
inline constexpr std::uint64_t repro_max_per_thread = std::uint64_t{1} << 21;

/// Every block's accumulator (keeping W windows) of the terms g(0) .. g(n - 1) (floats as they
/// are, anything else converted to double), over a grid-stride loop. The result does not depend
/// on the grid.
template <int W, class G>
__global__ void __launch_bounds__(repro_block) repro_blocks_kernel(G g, std::uint64_t n, repro_acc* out) {
  // Loads issued ahead of the deposits: 32 bytes per thread in flight (8 floats, 4 doubles), as a
  // memory-bound loop needs to cover the memory latency.
  using term = std::decay_t<decltype(g(std::uint64_t{0}))>;
  constexpr int ahead = sizeof(term) >= 8 ? 4 : 8;
  repro_thread<W> t;
  const auto add = [&t](const term& x) {
    if constexpr (std::is_same_v<term, float>)
      t.add(x);
    else
      t.add(static_cast<double>(x));
  };
  const std::uint64_t stride = std::uint64_t{gridDim.x} * repro_block;
  std::uint64_t i = std::uint64_t{blockIdx.x} * repro_block + threadIdx.x;
  const std::uint64_t batch = ahead * stride;
  if constexpr (std::is_same_v<term, float>) {
    // Float terms: the next batch's loads are issued before this batch's deposits, so a thread's
    // 32 bytes stay in flight while it computes (the float path is where the deposits' time shows;
    // 2026-12-03: 0.59x of CUB's plain float sum with load-then-deposit batches).
    if (i + (ahead - 1) * stride < n) {
      term cur[ahead];
#pragma unroll
      for (int j = 0; j < ahead; ++j) cur[j] = g(i + j * stride);
      for (;;) {
        const std::uint64_t next = i + batch;
        const bool more = next + (ahead - 1) * stride < n;
        term nxt[ahead];
        if (more) {
#pragma unroll
          for (int j = 0; j < ahead; ++j) nxt[j] = g(next + j * stride);
        }
#pragma unroll
        for (int j = 0; j < ahead; ++j) add(cur[j]);
        i = next;
        if (!more) break;
#pragma unroll
        for (int j = 0; j < ahead; ++j) cur[j] = nxt[j];
      }
    }
  } else {
    for (; i + (ahead - 1) * stride < n; i += batch) {
      term x[ahead];
#pragma unroll
      for (int j = 0; j < ahead; ++j) x[j] = g(i + j * stride);
#pragma unroll
      for (int j = 0; j < ahead; ++j) add(x[j]);
    }
  }
  for (; i < n; i += stride) add(g(i));
  using block_reduce = cub::BlockReduce<repro_acc, repro_block>;
  __shared__ typename block_reduce::TempStorage temp;
  const repro_acc a = block_reduce(temp).Reduce(t.get(), repro_combine_fn<W>{});
  if (threadIdx.x == 0) out[blockIdx.x] = a;
}

/// *out = the accumulators in[0 .. n) (keeping W windows) combined (one block).
template <int W>
__global__ void __launch_bounds__(repro_block) repro_fold_kernel(const repro_acc* in, unsigned n, repro_acc* out) {
  repro_acc a = repro_zero();
  for (unsigned j = threadIdx.x; j < n; j += repro_block) a = repro_combine<W>(a, in[j]);
  using block_reduce = cub::BlockReduce<repro_acc, repro_block>;
  __shared__ typename block_reduce::TempStorage temp;
  const repro_acc r = block_reduce(temp).Reduce(a, repro_combine_fn<W>{});
  if (threadIdx.x == 0) *out = r;
}

/// Blocks for n terms on a device that holds `resident` blocks at once: one wave that fills it
/// (a second, partial wave would leave most of the device idle while it runs), at least 4 terms
/// per thread, and never more than repro_max_per_thread terms per thread.
inline unsigned repro_grid(std::uint64_t n, std::uint64_t resident) {
  const std::uint64_t per_block = repro_block * repro_max_per_thread;
  const std::uint64_t fill = (n + 4 * repro_block - 1) / (4 * repro_block);
  std::uint64_t blocks = fill < resident ? fill : resident;
  const std::uint64_t need = (n + per_block - 1) / per_block;
  if (blocks < need) blocks = need;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

}  // namespace strata::detail
