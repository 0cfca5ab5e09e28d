# GoogleTest and Google Benchmark for Strata's own tests and benchmarks (never for its users):
# the installed packages when found; otherwise pinned releases fetched with FetchContent
# (STRATA_FETCH_DEPENDENCIES, on by default) when their release archives can be downloaded;
# otherwise that part is left out with a message naming the package to install.
include(FetchContent)

set(STRATA_GTEST_TAG v1.15.2 CACHE STRING "GoogleTest release fetched when none is installed")
set(STRATA_BENCHMARK_TAG v1.9.1 CACHE STRING "Google Benchmark release fetched when none is installed")

# strata_find_or_fetch(PACKAGE TARGET DEB_NAME PART ARCHIVE_URL TAG [VAR VALUE]...): makes TARGET
# available from find_package(PACKAGE) or from the release archive at ARCHIVE_URL (the VAR VALUE
# pairs configure the fetched project), and sets STRATA_HAVE_<PACKAGE> to whether it is. The
# archive is downloaded first with a status check, so a machine that cannot reach it (offline,
# behind a proxy) leaves the part out with a message instead of failing the configure step: the
# example command of the README needs neither package.
macro(strata_find_or_fetch package target deb part url tag)
  find_package(${package} QUIET)
  set(STRATA_HAVE_${package} OFF)
  if(TARGET ${target})
    set(STRATA_HAVE_${package} ON)
  elseif(STRATA_FETCH_DEPENDENCIES)
    message(STATUS "Strata: ${package} is not installed; fetching ${tag} (${url}). "
                   "Install it (e.g. ${deb}) or turn the ${part} off to skip this.")
    set(_strata_archive "${CMAKE_BINARY_DIR}/_deps/strata-${package}-${tag}.tar.gz")
    if(NOT EXISTS "${_strata_archive}")
      file(DOWNLOAD "${url}" "${_strata_archive}.part" STATUS _strata_status TIMEOUT 120 INACTIVITY_TIMEOUT 30)
      list(GET _strata_status 0 _strata_code)
      if(_strata_code EQUAL 0)
        file(RENAME "${_strata_archive}.part" "${_strata_archive}")
      else()
        file(REMOVE "${_strata_archive}.part")
        list(GET _strata_status 1 _strata_why)
        message(WARNING "Strata: ${package} is not installed and ${url} could not be downloaded (${_strata_why}): "
                        "the ${part} are not built. Install it (e.g. ${deb}).")
      endif()
    endif()
    if(EXISTS "${_strata_archive}")
      set(_strata_fetch_args ${ARGN})
      while(_strata_fetch_args)
        list(POP_FRONT _strata_fetch_args _strata_var _strata_value)
        set(${_strata_var} ${_strata_value})
      endwhile()
      FetchContent_Declare(strata_dep_${package} URL "${_strata_archive}" DOWNLOAD_EXTRACT_TIMESTAMP TRUE)
      FetchContent_MakeAvailable(strata_dep_${package})
      set(STRATA_HAVE_${package} ON)
    endif()
  else()
    message(WARNING "Strata: ${package} is not installed and STRATA_FETCH_DEPENDENCIES is OFF: the ${part} "
                    "are not built. Install it (e.g. ${deb}) or turn STRATA_FETCH_DEPENDENCIES on.")
  endif()
endmacro()

# strata_find_gtest(): GTest::gtest and GTest::gtest_main; sets STRATA_HAVE_GTest.
macro(strata_find_gtest)
  strata_find_or_fetch(GTest GTest::gtest_main libgtest-dev "tests (STRATA_BUILD_TESTS)"
                       https://github.com/google/googletest/archive/refs/tags/${STRATA_GTEST_TAG}.tar.gz
                       ${STRATA_GTEST_TAG}
                       INSTALL_GTEST OFF BUILD_GMOCK OFF)
endmacro()

# strata_find_benchmark(): benchmark::benchmark; sets STRATA_HAVE_benchmark.
macro(strata_find_benchmark)
  strata_find_or_fetch(benchmark benchmark::benchmark libbenchmark-dev "benchmarks (STRATA_BUILD_BENCHMARKS)"
                       https://github.com/google/benchmark/archive/refs/tags/${STRATA_BENCHMARK_TAG}.tar.gz
                       ${STRATA_BENCHMARK_TAG}
                       BENCHMARK_ENABLE_TESTING OFF BENCHMARK_ENABLE_GTEST_TESTS OFF BENCHMARK_ENABLE_INSTALL OFF
                       BENCHMARK_ENABLE_WERROR OFF)
endmacro()
