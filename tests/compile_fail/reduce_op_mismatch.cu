// Must not compile: an operator that cannot combine two accumulators (the type of init).
// tests/CMakeLists.txt expects Strata's static_assert message as the error.
#include <strata/strata.cuh>

struct pair2 {
  float a, b;
};
struct pair_min {
  __host__ __device__ pair2 operator()(const pair2& x, const pair2& y) const { return x.a < y.a ? x : y; }
};

float f(const strata::distributed_vector<float>& x) { return strata::reduce(x, 0.0f, pair_min{}); }
