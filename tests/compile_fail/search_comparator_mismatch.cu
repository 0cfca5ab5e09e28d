// Must not compile: a comparator that cannot compare two elements of the sorted range.
// tests/CMakeLists.txt expects Strata's static_assert message as the error.
#include <strata/strata.cuh>

struct by_name {
  __host__ __device__ bool operator()(const char* a, const char* b) const { return a < b; }
};

void f(const strata::distributed_vector<float>& sorted, const strata::distributed_vector<float>& queries,
       strata::distributed_vector<std::uint64_t>& out) {
  strata::lower_bound(sorted, queries, out, by_name{});
}
