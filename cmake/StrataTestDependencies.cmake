# GoogleTest and Google Benchmark for Strata's own tests and benchmarks (never for its users):
# the installed packages when found; otherwise pinned releases fetched with FetchContent
# (STRATA_FETCH_DEPENDENCIES, on by default); otherwise that part is left out with a message
# naming the package to install.
include(FetchContent)

set(STRATA_GTEST_TAG v1.15.2 CACHE STRING "GoogleTest release fetched when none is installed")
set(STRATA_BENCHMARK_TAG v1.9.1 CACHE STRING "Google Benchmark release fetched when none is installed")

# strata_find_or_fetch(PACKAGE TARGET DEB_NAME PART REPO TAG [VAR VALUE]...): makes TARGET available
# from find_package(PACKAGE) or from REPO at TAG (the VAR VALUE pairs configure the fetched
# project), and sets STRATA_HAVE_<PACKAGE> to whether it is.
macro(strata_find_or_fetch package target deb part repo tag)
  find_package(${package} QUIET)
  if(TARGET ${target})
    set(STRATA_HAVE_${package} ON)
  elseif(STRATA_FETCH_DEPENDENCIES)
    message(STATUS "Strata: ${package} is not installed; fetching ${tag} (FetchContent). "
                   "Install it (e.g. ${deb}) or turn the ${part} off to skip this.")
    set(_strata_fetch_args ${ARGN})
    while(_strata_fetch_args)
      list(POP_FRONT _strata_fetch_args _strata_var _strata_value)
      set(${_strata_var} ${_strata_value})
    endwhile()
    FetchContent_Declare(strata_dep_${package} GIT_REPOSITORY ${repo} GIT_TAG ${tag} GIT_SHALLOW TRUE)
    FetchContent_MakeAvailable(strata_dep_${package})
    set(STRATA_HAVE_${package} ON)
  else()
    message(WARNING "Strata: ${package} is not installed and STRATA_FETCH_DEPENDENCIES is OFF: the ${part} "
                    "are not built. Install it (e.g. ${deb}) or turn STRATA_FETCH_DEPENDENCIES on.")
    set(STRATA_HAVE_${package} OFF)
  endif()
endmacro()

# strata_find_gtest(): GTest::gtest and GTest::gtest_main; sets STRATA_HAVE_GTest.
macro(strata_find_gtest)
  strata_find_or_fetch(GTest GTest::gtest_main libgtest-dev "tests (STRATA_BUILD_TESTS)"
                       https://github.com/google/googletest.git ${STRATA_GTEST_TAG}
                       INSTALL_GTEST OFF BUILD_GMOCK OFF)
endmacro()

# strata_find_benchmark(): benchmark::benchmark; sets STRATA_HAVE_benchmark.
macro(strata_find_benchmark)
  strata_find_or_fetch(benchmark benchmark::benchmark libbenchmark-dev "benchmarks (STRATA_BUILD_BENCHMARKS)"
                       https://github.com/google/benchmark.git ${STRATA_BENCHMARK_TAG}
                       BENCHMARK_ENABLE_TESTING OFF BENCHMARK_ENABLE_GTEST_TESTS OFF BENCHMARK_ENABLE_INSTALL OFF
                       BENCHMARK_ENABLE_WERROR OFF)
endmacro()
