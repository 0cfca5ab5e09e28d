# Install rules and the exported package: headers, Strata::strata, StrataConfig.cmake and
# StrataConfigVersion.cmake.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(STRATA_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/Strata" CACHE STRING
    "Where StrataConfig.cmake is installed, relative to the prefix")

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/strata" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(TARGETS strata EXPORT StrataTargets)
install(EXPORT StrataTargets NAMESPACE Strata:: DESTINATION "${STRATA_INSTALL_CMAKEDIR}")

configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/StrataConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/StrataConfig.cmake" INSTALL_DESTINATION "${STRATA_INSTALL_CMAKEDIR}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/StrataConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion ARCH_INDEPENDENT)
install(FILES "${PROJECT_BINARY_DIR}/StrataConfig.cmake" "${PROJECT_BINARY_DIR}/StrataConfigVersion.cmake"
  "${PROJECT_SOURCE_DIR}/cmake/StrataRequirements.cmake" DESTINATION "${STRATA_INSTALL_CMAKEDIR}")

# The NCCL component: its own export set, loaded only when a consumer asks for COMPONENTS nccl, and
# the find module that locates NCCL for it.
if(TARGET strata_nccl)
  install(TARGETS strata_nccl EXPORT StrataNcclTargets)
  install(EXPORT StrataNcclTargets NAMESPACE Strata:: DESTINATION "${STRATA_INSTALL_CMAKEDIR}")
  install(FILES "${PROJECT_SOURCE_DIR}/cmake/FindNCCL.cmake" DESTINATION "${STRATA_INSTALL_CMAKEDIR}")
endif()
