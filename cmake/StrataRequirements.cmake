# What Strata asks of the CUDA toolkit, checked the same way by Strata's own build and by its
# installed package (StrataConfig.cmake): CUDA 12.9 or newer, whose CCCL is 2.8 or newer (Strata
# calls CUB's dispatch layer as it is since CUB 2.8). Also the one place that says what a target
# using Strata needs on its compile line.
include_guard(GLOBAL)

set(STRATA_MIN_CUDA_VERSION 12.9)
set(STRATA_MIN_CCCL_VERSION 2.8)

# strata_requirements_error(OUT): sets OUT to a message naming what is too old, or to "" when the
# CUDA toolkit and CCCL found (find_package(CUDAToolkit) and find_package(CCCL) ran before) suffice.
function(strata_requirements_error out)
  set(msg "")
  if(CUDAToolkit_VERSION VERSION_LESS STRATA_MIN_CUDA_VERSION)
    set(msg "Strata needs CUDA ${STRATA_MIN_CUDA_VERSION} or newer (for CUB ${STRATA_MIN_CCCL_VERSION}); found CUDA ${CUDAToolkit_VERSION} in ${CUDAToolkit_BIN_DIR}. Install a newer CUDA toolkit or point CUDAToolkit_ROOT at one.")
  elseif(DEFINED CCCL_VERSION AND CCCL_VERSION VERSION_LESS STRATA_MIN_CCCL_VERSION)
    set(msg "Strata needs CCCL (CUB/Thrust) ${STRATA_MIN_CCCL_VERSION} or newer; found CCCL ${CCCL_VERSION} in ${CCCL_DIR}.")
  endif()
  set(${out} "${msg}" PARENT_SCOPE)
endfunction()

# strata_check_cuda_architectures(): a consumer that builds only for pre-Ampere architectures
# (CMake's default with CUDA 13 is sm_75) runs PTX JIT-compiled at start on newer GPUs, without
# their tuning; say so once, with the fix.
function(strata_check_cuda_architectures)
  get_property(warned GLOBAL PROPERTY STRATA_ARCH_NOTICE)
  if(warned OR NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    return()
  endif()
  if(CMAKE_CUDA_ARCHITECTURES MATCHES "^(native|all|all-major)$" OR CMAKE_CUDA_ARCHITECTURES STREQUAL "OFF")
    return()
  endif()
  foreach(a IN LISTS CMAKE_CUDA_ARCHITECTURES)
    string(REGEX MATCH "^[0-9]+" num "${a}")
    if(num AND num GREATER_EQUAL 80)
      return()
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY STRATA_ARCH_NOTICE TRUE)
  message(WARNING "Strata: CMAKE_CUDA_ARCHITECTURES is '${CMAKE_CUDA_ARCHITECTURES}' (CMake's default unless you set it): "
                  "on Ampere, Hopper or newer GPUs the code then runs as JIT-compiled PTX without their tuning. "
                  "Set -DCMAKE_CUDA_ARCHITECTURES=native, or your GPUs' compute capabilities (e.g. 90 for H100/H200); "
                  "see Strata's docs/getting-started.md.")
endfunction()
