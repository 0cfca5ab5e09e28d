// Host-only partition math: which [offset, offset + count) of n elements each of k places owns.
// No CUDA here, so every machine tests it for real.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace strata {

/// A layout of `size()` elements over `places()` places: place `i` owns the contiguous global
/// range `[offset(i), offset(i) + count(i))`. Ranges are in place order and tile `[0, size())`
/// exactly; a place may own nothing. Sizes and offsets are 64-bit.
class partition {
 public:
  /// An empty partition over no places (what a default-constructed container holds).
  partition() : offsets_{0} {}

  /// Block partition of `n` elements over `k` places: every place gets `n / k`, and the first
  /// `n % k` places one more. Throws std::invalid_argument if `k == 0`.
  static partition even(std::uint64_t n, std::size_t k) {
    if (k == 0) throw std::invalid_argument("strata::partition::even: the number of places must be positive");
    std::vector<std::uint64_t> sizes(k, n / k);
    const std::uint64_t rem = n % k;
    for (std::uint64_t i = 0; i < rem; ++i) ++sizes[i];
    return partition(std::move(sizes));
  }

  /// Partition of `n` elements over `weights.size()` places, place `i` getting a share
  /// proportional to `weights[i]`. Each count is within one of `n * w_i / sum(w)` (largest
  /// remainder rounding, ties to the lower index), and places of weight 0 get nothing.
  /// Throws std::invalid_argument if `weights` is empty, any weight is negative, NaN or
  /// infinite, or no weight is positive.
  static partition weighted(std::uint64_t n, const std::vector<double>& weights) {
    if (weights.empty()) throw std::invalid_argument("strata::partition::weighted: the weight list is empty");
    long double total = 0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      const double w = weights[i];
      if (std::isnan(w))
        throw std::invalid_argument("strata::partition::weighted: weight " + std::to_string(i) + " is NaN");
      if (std::isinf(w))
        throw std::invalid_argument("strata::partition::weighted: weight " + std::to_string(i) + " is infinite");
      if (w < 0)
        throw std::invalid_argument("strata::partition::weighted: weight " + std::to_string(i) + " is negative (" +
                                    std::to_string(w) + ")");
      total += w;
    }
    if (!(total > 0))
      throw std::invalid_argument("strata::partition::weighted: at least one weight must be positive");

    const std::size_t k = weights.size();
    std::vector<std::uint64_t> sizes(k, 0);
    std::vector<long double> frac(k, 0);
    std::uint64_t assigned = 0;
    for (std::size_t i = 0; i < k; ++i) {
      const long double quota = static_cast<long double>(n) * (static_cast<long double>(weights[i]) / total);
      long double whole = std::floor(quota);
      if (whole > static_cast<long double>(n)) whole = static_cast<long double>(n);
      sizes[i] = static_cast<std::uint64_t>(whole);
      frac[i] = quota - whole;
      assigned += sizes[i];
    }
    // Rounding in long double can leave the floors a little over n for huge n: take back from
    // the places with the smallest remainders first.
    std::vector<std::size_t> order(k);
    std::iota(order.begin(), order.end(), std::size_t{0});
    while (assigned > n) {
      std::size_t pick = k;
      for (std::size_t i = 0; i < k; ++i)
        if (sizes[i] > 0 && (pick == k || frac[i] < frac[pick])) pick = i;
      --sizes[pick];
      frac[pick] += 1;
      --assigned;
    }
    // Hand out what is left, largest remainder first, ties to the lower index, positive weights only.
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return frac[a] > frac[b]; });
    while (assigned < n) {
      for (std::size_t idx : order) {
        if (assigned == n) break;
        if (weights[idx] > 0) {
          ++sizes[idx];
          ++assigned;
        }
      }
    }
    return partition(std::move(sizes));
  }

  /// Partition with the given per-place counts, which must sum to `n`. Throws
  /// std::invalid_argument if `sizes` is empty or the counts do not sum to `n` (or overflow).
  static partition explicit_sizes(std::uint64_t n, std::vector<std::uint64_t> sizes) {
    if (sizes.empty()) throw std::invalid_argument("strata::partition::explicit_sizes: the size list is empty");
    std::uint64_t sum = 0;
    for (std::uint64_t s : sizes) {
      if (s > UINT64_MAX - sum)
        throw std::invalid_argument("strata::partition::explicit_sizes: the sizes overflow a 64-bit count");
      sum += s;
    }
    if (sum != n)
      throw std::invalid_argument("strata::partition::explicit_sizes: the sizes sum to " + std::to_string(sum) +
                                  ", not to the " + std::to_string(n) + " elements being partitioned");
    return partition(std::move(sizes));
  }

  /// Total number of elements.
  std::uint64_t size() const noexcept { return offsets_.back(); }
  /// Number of places (segments), including empty ones.
  std::size_t places() const noexcept { return offsets_.size() - 1; }
  /// First global index owned by place `i`. Throws std::out_of_range if `i >= places()`.
  std::uint64_t offset(std::size_t i) const { return offsets_.at(check_place(i)); }
  /// Number of elements owned by place `i`. Throws std::out_of_range if `i >= places()`.
  std::uint64_t count(std::size_t i) const { return offsets_[check_place(i) + 1] - offsets_[i]; }
  /// The per-place counts, in place order.
  std::vector<std::uint64_t> counts() const {
    std::vector<std::uint64_t> c(places());
    for (std::size_t i = 0; i < places(); ++i) c[i] = offsets_[i + 1] - offsets_[i];
    return c;
  }

  /// The place that owns global index `g`. Throws std::out_of_range if `g >= size()`.
  std::size_t owner(std::uint64_t g) const {
    if (g >= size())
      throw std::out_of_range("strata::partition::owner: index " + std::to_string(g) + " is out of range for " +
                              std::to_string(size()) + " elements");
    // The last offset <= g; among equal offsets (empty places) the last one is the owner.
    auto it = std::upper_bound(offsets_.begin(), offsets_.end(), g);
    return static_cast<std::size_t>(it - offsets_.begin()) - 1;
  }

  /// True if both partitions have the same places and counts.
  friend bool operator==(const partition& a, const partition& b) noexcept { return a.offsets_ == b.offsets_; }
  /// True if the partitions differ in places or counts.
  friend bool operator!=(const partition& a, const partition& b) noexcept { return !(a == b); }

 private:
  explicit partition(std::vector<std::uint64_t> sizes) : offsets_(sizes.size() + 1, 0) {
    for (std::size_t i = 0; i < sizes.size(); ++i) offsets_[i + 1] = offsets_[i] + sizes[i];
  }
  std::size_t check_place(std::size_t i) const {
    if (i >= places())
      throw std::out_of_range("strata::partition: place " + std::to_string(i) + " is out of range for " +
                              std::to_string(places()) + " places");
    return i;
  }

  std::vector<std::uint64_t> offsets_;  // places() + 1 entries, offsets_[0] == 0
};

/// How a container lays out its elements over a device_set's places: a recipe, applied to the
/// element count and the number of places when the container is made.
class partition_policy {
 public:
  /// Block partition (the default): see partition::even.
  static partition_policy even() { return partition_policy(kind::even, {}, {}); }
  /// Proportional to `weights` (one per place): see partition::weighted. Validated when applied.
  static partition_policy weighted(std::vector<double> weights) {
    return partition_policy(kind::weighted, std::move(weights), {});
  }
  /// The given counts (one per place, summing to the size): see partition::explicit_sizes.
  static partition_policy explicit_sizes(std::vector<std::uint64_t> sizes) {
    return partition_policy(kind::explicit_sizes, {}, std::move(sizes));
  }

  /// Builds the partition of `n` elements over `k` places. Throws std::invalid_argument if the
  /// policy's weights or sizes are not one per place, or are invalid for `n`.
  partition apply(std::uint64_t n, std::size_t k) const {
    switch (kind_) {
      case kind::even:
        return partition::even(n, k);
      case kind::weighted:
        if (weights_.size() != k)
          throw std::invalid_argument("strata::partition_policy::weighted: " + std::to_string(weights_.size()) +
                                      " weights given for " + std::to_string(k) + " places");
        return partition::weighted(n, weights_);
      case kind::explicit_sizes:
      default:
        if (sizes_.size() != k)
          throw std::invalid_argument("strata::partition_policy::explicit_sizes: " + std::to_string(sizes_.size()) +
                                      " sizes given for " + std::to_string(k) + " places");
        return partition::explicit_sizes(n, sizes_);
    }
  }

 private:
  enum class kind { even, weighted, explicit_sizes };
  partition_policy(kind k, std::vector<double> w, std::vector<std::uint64_t> s)
      : kind_(k), weights_(std::move(w)), sizes_(std::move(s)) {}
  kind kind_;
  std::vector<double> weights_;
  std::vector<std::uint64_t> sizes_;
};

}  // namespace strata
