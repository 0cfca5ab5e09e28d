// The README's quick start, compiled as is: a vector spread over every GPU, a sum, a dot
// product, a scan and a transform. Build with --extended-lambda for the device lambda.
#include <strata/strata.cuh>

#include <cstdio>
#include <vector>

int main() try {
  auto gpus = strata::device_set::all();                    // every visible GPU, peer access on
  std::vector<float> host(10'000'000, 1.0f);
  strata::distributed_vector<float> x(host, gpus);          // split evenly across the GPUs
  strata::distributed_vector<float> y(x.size(), 2.0f, gpus);

  float sum = strata::reduce(x);                            // CUB on every GPU, merged on GPU 0
  double dot = strata::transform_reduce(x, y, 0.0, cuda::std::plus<>{}, cuda::std::multiplies<>{});
  strata::inclusive_scan(x, y);                             // y[i] = x[0] + ... + x[i]
  strata::transform(x, x, [] __device__(float v) { return 3.0f * v; });
  auto big = strata::max_element(y);                        // value and global index

  std::printf("sum = %.0f, dot = %.0f, last prefix = %.0f at index %llu, x[0] = %.0f\n", sum, dot, big.value,
              static_cast<unsigned long long>(big.index), x.get(0));
  return (sum == 1e7f && big.index == x.size() - 1) ? 0 : 1;
} catch (const std::exception& e) {                         // e.g. no GPU: strata::cuda_error
  std::fprintf(stderr, "quick_start: %s\n", e.what());
  return 1;
}
