// Must not compile: a gather map of floating-point "indices".
// tests/CMakeLists.txt expects Strata's static_assert message as the error.
#include <strata/strata.cuh>

void f(const strata::distributed_vector<float>& map, const strata::distributed_vector<int>& src,
       strata::distributed_vector<int>& dst) {
  strata::gather(map, src, dst);
}
