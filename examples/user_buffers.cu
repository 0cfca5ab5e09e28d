// Data that already lives on every GPU, in buffers your own code allocated: view it as one
// distributed_span and reduce it with one call.
#include <strata/strata.cuh>

#include <cstdio>
#include <vector>

int main() {
  if (strata::visible_device_count() == 0) {
    std::printf("No CUDA device is visible.\n");
    return 1;
  }
  const auto gpus = strata::device_set::all();

  // Your code: one buffer per GPU, of different lengths, filled however you like.
  std::vector<strata::user_segment<double>> parts;
  std::vector<double*> buffers;
  double expect = 0;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const std::size_t n = 1000000 + 12345 * i;
    cudaSetDevice(gpus.device(i));
    double* p = nullptr;
    if (cudaMalloc(&p, n * sizeof(double)) != cudaSuccess) return 1;
    std::vector<double> h(n, 0.5 * static_cast<double>(i + 1));
    cudaMemcpy(p, h.data(), n * sizeof(double), cudaMemcpyHostToDevice);
    expect += 0.5 * static_cast<double>(i + 1) * static_cast<double>(n);
    buffers.push_back(p);
    parts.push_back({gpus.device(i), p, n});
  }

  // One view over all of them; every algorithm takes it.
  strata::distributed_span<double> all(gpus, parts);
  const double sum = strata::reduce(all);
  const auto big = strata::max_element(all);
  std::printf("%zu buffers, %llu elements: sum = %.1f (expected %.1f), largest %.1f at global index %llu\n",
              parts.size(), static_cast<unsigned long long>(all.size()), sum, expect, big.value,
              static_cast<unsigned long long>(big.index));

  for (std::size_t i = 0; i < buffers.size(); ++i) {
    cudaSetDevice(gpus.device(i));
    cudaFree(buffers[i]);
  }
  return sum == expect ? 0 : 1;
}
