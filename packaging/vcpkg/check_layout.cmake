# CI stand-in for `vcpkg install strata` (vcpkg itself cannot be installed on these machines):
# checks the install tree the portfile's vcpkg_cmake_install produces, applies the same moves and
# path fixes vcpkg_cmake_config_fixup makes (lib/cmake/Strata -> share/strata, one directory
# level less in the prefix computations), and configures a consumer against the result.
#   cmake -DPREFIX=<install prefix> -DWORK=<scratch> -DCONSUMER=<consumer source>
#         -DGENERATOR=<gen> -DCUDA_ARCHS=<archs> -P check_layout.cmake
foreach(f include/strata/strata.cuh include/strata/version.hpp include/strata/detail/fold.cuh
          include/strata/detail/sort/splitters.cuh include/strata/nccl/link.cuh
          lib/cmake/Strata/StrataConfig.cmake lib/cmake/Strata/StrataConfigVersion.cmake
          lib/cmake/Strata/StrataTargets.cmake)
  if(NOT EXISTS "${PREFIX}/${f}")
    message(FATAL_ERROR "install tree lacks ${f}")
  endif()
endforeach()

# A relocatable package: no absolute path of the source or build tree inside.
file(READ "${PREFIX}/lib/cmake/Strata/StrataTargets.cmake" targets)
get_filename_component(src_root "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
string(FIND "${targets}" "${src_root}" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "StrataTargets.cmake names the source tree ${src_root}")
endif()
if(NOT targets MATCHES "_IMPORT_PREFIX}/include")
  message(FATAL_ERROR "StrataTargets.cmake does not locate the headers relative to the prefix")
endif()

# What vcpkg_cmake_config_fixup does for this package.
set(installed "${WORK}/installed")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${installed}/share")
file(COPY "${PREFIX}/include" DESTINATION "${installed}")
file(COPY "${PREFIX}/lib/cmake/Strata/" DESTINATION "${installed}/share/strata")
file(GLOB cfg "${installed}/share/strata/*.cmake")
foreach(f IN LISTS cfg)
  file(READ "${f}" text)
  # Targets: one get_filename_component(... PATH) step less to climb from share/strata.
  string(REPLACE "get_filename_component(_IMPORT_PREFIX \"\${_IMPORT_PREFIX}\" PATH)\nget_filename_component(_IMPORT_PREFIX \"\${_IMPORT_PREFIX}\" PATH)\n"
                 "get_filename_component(_IMPORT_PREFIX \"\${_IMPORT_PREFIX}\" PATH)\n" text "${text}")
  # Config: PACKAGE_PREFIX_DIR two levels up instead of three.
  string(REPLACE "/../../../" "/../../" text "${text}")
  file(WRITE "${f}" "${text}")
endforeach()
if(NOT EXISTS "${installed}/share/strata/StrataConfig.cmake")
  message(FATAL_ERROR "fixup produced no share/strata/StrataConfig.cmake")
endif()

execute_process(
  COMMAND ${CMAKE_COMMAND} -S "${CONSUMER}" -B "${WORK}/consumer" -G "${GENERATOR}"
          -DSTRATA_CONSUME=find_package "-DSTRATA_PREFIX=${installed}" "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCHS}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "consumer against the vcpkg layout failed to configure:\n${out}\n${err}")
endif()
string(FIND "${out}" "${installed}/share/strata" found_at)
if(found_at EQUAL -1)
  message(FATAL_ERROR "consumer did not take Strata from share/strata:\n${out}")
endif()
message(STATUS "vcpkg layout OK: Strata found in ${installed}/share/strata")
