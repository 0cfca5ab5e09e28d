// The STREAM "nstream" update a = a + b + s * c over every GPU, two ways: Strata's n-ary transform
// over a zip of three ranges, and your own CUDA kernel launched on every GPU's share through
// strata::for_each_segment (the device is current and the place's stream is handed to you).
#include <strata/strata.cuh>

#include <cstdio>

__global__ void nstream_kernel(float* a, const float* b, const float* c, float s, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(gridDim.x) * blockDim.x)
    a[i] += b[i] + s * c[i];
}

int main() {
  if (strata::visible_device_count() == 0) {
    std::printf("No CUDA device is visible.\n");
    return 1;
  }
  const auto gpus = strata::device_set::all();
  const std::uint64_t n = 50'000'017;
  const float s = 3.0f;
  strata::distributed_vector<float> a(n, 0.0f, gpus), b(n, 2.0f, gpus), c(n, 1.0f, gpus);

  // 1. One Strata call: out[i] = f(a[i], b[i], c[i]), here in place into a.
  strata::transform(strata::zip(a, b, c), a, [s] __device__(float x, float y, float z) { return x + y + s * z; });

  // 2. Your kernel on every segment, ordered with Strata's work on the same places.
  strata::for_each_segment(strata::zip(a, b, c), [s](cudaStream_t stream, strata::segment<float> sa,
                                                     strata::segment<float> sb, strata::segment<float> sc) {
    nstream_kernel<<<264, 256, 0, stream>>>(sa.data, sb.data, sc.data, s, sa.count);
  });

  const double total = strata::reduce(a, 0.0);  // every a[i] is now 2 * (2 + 3) = 10
  std::printf("nstream over %zu place(s): sum(a) = %.0f (expected %.0f)\n", gpus.size(), total, 10.0 * n);
  return total == 10.0 * n ? 0 : 1;
}
