// Histograms over every GPU: 256 equal-width bins of a range spread over the places (every place
// counts its share with CUB, the bins are added on the device), bins between given edges, and one
// sum per segment of global offsets (segmented_reduce: a segment may straddle two GPUs). Checked
// against the host.
#include <strata/strata.cuh>

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main() {
  if (strata::visible_device_count() == 0) {
    std::printf("No CUDA device is visible.\n");
    return 1;
  }
  const auto gpus = strata::device_set::all();
  const std::uint64_t n = 50'000'017;

  // Samples in [0, 1), generated on the GPUs from their global index.
  strata::distributed_vector<float> x(n, gpus);
  strata::tabulate(x, [] __device__(std::uint64_t i) {
    return static_cast<float>((i * 2654435761ull) % 1000003ull) / 1000003.0f;
  });
  const auto h = x.to_std_vector();

  const auto bins = strata::histogram_even(x, 256, 0.0f, 1.0f);
  // The host's bins: a sample within rounding of a bin edge may land on either side (CUB computes
  // the bin in float), so the counts agree up to a few and add up exactly.
  std::vector<std::uint64_t> want(256, 0);
  for (float v : h) ++want[std::min<std::size_t>(static_cast<std::size_t>(v * 256.0f), 255)];
  std::uint64_t counted = 0;
  bool ok = true;
  for (int b = 0; b < 256; ++b) {
    counted += bins[b];
    ok = ok && std::llabs(static_cast<long long>(bins[b]) - static_cast<long long>(want[b])) <= 64;
  }
  ok = ok && counted == n;

  const auto tails = strata::histogram_range(x, std::vector<float>{0.0f, 0.01f, 0.99f, 1.0f});
  ok = ok && tails[0] + tails[1] + tails[2] == n;

  // One sum per million samples, the last segment shorter: segments straddle the places' edges.
  std::vector<std::uint64_t> offsets;
  for (std::uint64_t o = 0; o < n; o += 1'000'000) offsets.push_back(o);
  offsets.push_back(n);
  const auto sums = strata::segmented_reduce(x, offsets, 0.0);
  double first = 0;
  for (std::uint64_t i = 0; i < 1'000'000; ++i) first += h[i];
  ok = ok && sums.size() == offsets.size() - 1 && std::abs(sums[0] - first) < 1e-6 * first;

  std::printf("%llu samples over %zu place(s): bin 0 holds %llu, %llu below 0.01, first segment sums to %.1f: %s\n",
              static_cast<unsigned long long>(n), gpus.size(), static_cast<unsigned long long>(bins[0]),
              static_cast<unsigned long long>(tails[0]), sums.empty() ? 0.0 : sums[0], ok ? "matches the host" : "WRONG");
  return ok ? 0 : 1;
}
