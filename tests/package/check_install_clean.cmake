# Installs a consuming project's build tree into PREFIX and fails if Strata's headers or CMake
# package landed there.
#   cmake -DBUILD=<consumer build dir> -DPREFIX=<empty prefix> -P check_install_clean.cmake
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD}" --prefix "${PREFIX}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install of the consumer failed (${rc})")
endif()
file(GLOB_RECURSE installed RELATIVE "${PREFIX}" "${PREFIX}/*")
foreach(f IN LISTS installed)
  if(f MATCHES "strata|Strata")
    message(FATAL_ERROR "the consumer's install put Strata's files in its prefix: ${f}")
  endif()
endforeach()
message(STATUS "the consumer's install holds no Strata files (${installed})")
