// Must not compile: an element type that cannot be copied between devices bytewise.
// tests/CMakeLists.txt expects Strata's static_assert message as the error.
#include <strata/strata.cuh>

#include <string>

void f(const strata::device_set& set) { strata::distributed_vector<std::string> names(10, set); }
