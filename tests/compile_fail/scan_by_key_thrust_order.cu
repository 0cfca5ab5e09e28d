// Must not compile: an initial value where the keyed scan's operator goes (inclusive_scan_by_key
// takes none; Thrust's exclusive form puts init before the predicate and op).
// tests/CMakeLists.txt expects Strata's static_assert message as the error.
#include <strata/strata.cuh>

void f(const strata::distributed_vector<int>& keys, const strata::distributed_vector<double>& values,
       strata::distributed_vector<double>& out) {
  strata::inclusive_scan_by_key(keys, values, out, 0.0);
}
