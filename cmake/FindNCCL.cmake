# FindNCCL: NVIDIA's collective communications library, which ships no CMake package.
#
# Looks, in this order, in NCCL_ROOT (CMake or environment variable) or NCCL_HOME, in the
# nvidia-nccl-cu13 / nvidia-nccl-cu12 Python wheel's folder (site-packages/nvidia/nccl, found
# through Python3 when it is available), in the CUDA toolkit, and in the system's default paths.
#
# Defines: NCCL_FOUND, NCCL_VERSION (major.minor.patch from nccl.h), NCCL_INCLUDE_DIR,
# NCCL_LIBRARY, and the imported target NCCL::nccl.
include(FindPackageHandleStandardArgs)

set(_nccl_hints)
foreach(_root IN ITEMS "${NCCL_ROOT}" "$ENV{NCCL_ROOT}" "$ENV{NCCL_HOME}")
  if(_root)
    list(APPEND _nccl_hints "${_root}")
  endif()
endforeach()

# The pip wheel: ask Python where nvidia/nccl is (quietly: no Python or no wheel is fine).
if(NOT NCCL_NO_PYTHON_WHEEL)
  find_package(Python3 QUIET COMPONENTS Interpreter)
  if(Python3_Interpreter_FOUND)
    execute_process(
      COMMAND "${Python3_EXECUTABLE}" -c
              "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) if nvidia.nccl.__file__ else list(nvidia.nccl.__path__)[0])"
      RESULT_VARIABLE _nccl_py_rc OUTPUT_VARIABLE _nccl_py_dir ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(_nccl_py_rc EQUAL 0 AND IS_DIRECTORY "${_nccl_py_dir}")
      list(APPEND _nccl_hints "${_nccl_py_dir}")
    endif()
  endif()
endif()

if(NOT CUDAToolkit_FOUND)
  find_package(CUDAToolkit QUIET)
endif()
if(CUDAToolkit_FOUND)
  list(APPEND _nccl_hints "${CUDAToolkit_LIBRARY_ROOT}" "${CUDAToolkit_TARGET_DIR}")
endif()

find_path(NCCL_INCLUDE_DIR NAMES nccl.h HINTS ${_nccl_hints} PATH_SUFFIXES include)
# The wheel ships libnccl.so.2 only (no unversioned link), so look for both names.
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_nccl_hints} PATH_SUFFIXES lib lib64)

if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_version_lines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
  foreach(_part IN ITEMS MAJOR MINOR PATCH)
    string(REGEX MATCH "NCCL_${_part} +([0-9]+)" _m "${_nccl_version_lines}")
    set(_nccl_${_part} "${CMAKE_MATCH_1}")
  endforeach()
  set(NCCL_VERSION "${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH}")
endif()

find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR VERSION_VAR NCCL_VERSION)

if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl UNKNOWN IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                                              INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)
