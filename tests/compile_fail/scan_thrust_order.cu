// Must not compile: Thrust's argument order (init before op) handed to strata::inclusive_scan.
// tests/CMakeLists.txt expects Strata's static_assert message as the error.
#include <strata/strata.cuh>

void f(const strata::distributed_vector<double>& x, strata::distributed_vector<double>& y) {
  strata::inclusive_scan(x, y, 0.0, cuda::std::plus<>{});
}
