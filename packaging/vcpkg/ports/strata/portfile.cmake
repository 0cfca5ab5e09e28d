# Strata is header-only: configure without tests, benchmarks or examples, install the headers
# and the CMake package, and move the package to share/strata.
# Overlay use from a Strata checkout:
#   vcpkg install strata --overlay-ports=<strata>/packaging/vcpkg/ports
# STRATA_SOURCE_DIR (environment) points at the checkout; by default the port's own tree.
set(VCPKG_BUILD_TYPE release)  # header-only: no debug variant

if(DEFINED ENV{STRATA_SOURCE_DIR})
  set(SOURCE_PATH "$ENV{STRATA_SOURCE_DIR}")
else()
  get_filename_component(SOURCE_PATH "${CMAKE_CURRENT_LIST_DIR}/../../../.." ABSOLUTE)
endif()

vcpkg_find_cuda(OUT_CUDA_TOOLKIT_ROOT cuda_toolkit_root)

# Feature "nccl": also install Strata::nccl (find_package(Strata CONFIG REQUIRED COMPONENTS nccl)).
# (vcpkg_check_features passes -DSTRATA_WITH_NCCL=ON with the feature and OFF without it.)
vcpkg_check_features(OUT_FEATURE_OPTIONS feature_options FEATURES nccl STRATA_WITH_NCCL)

vcpkg_cmake_configure(
  SOURCE_PATH "${SOURCE_PATH}"
  OPTIONS
    -DSTRATA_BUILD_TESTS=OFF
    -DSTRATA_BUILD_BENCHMARKS=OFF
    -DSTRATA_BUILD_EXAMPLES=OFF
    -DSTRATA_BUILD_DOCS=OFF
    "-DCMAKE_CUDA_COMPILER=${cuda_toolkit_root}/bin/nvcc"
    ${feature_options}
)
vcpkg_cmake_install()
vcpkg_cmake_config_fixup(PACKAGE_NAME strata CONFIG_PATH lib/cmake/Strata)

file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/lib" "${CURRENT_PACKAGES_DIR}/debug")
file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
