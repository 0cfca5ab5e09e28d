# A compile-fail test: compiles SOURCE with COMPILER (include dir INCLUDE) and passes only if the
# compilation fails and its first error is Strata's own message, matching EXPECT.
#   cmake -DCOMPILER=nvcc -DINCLUDE=<dir> -DSOURCE=<file.cu> -DEXPECT=<regex> -DOUT=<obj> -P check_compile_fail.cmake
execute_process(COMMAND "${COMPILER}" -std=c++17 --extended-lambda "-I${INCLUDE}" -c "${SOURCE}" -o "${OUT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(text "${out}\n${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but it must not")
endif()
string(REGEX MATCH "[^\n]*error[^\n]*" first "${text}")
if(NOT first MATCHES "${EXPECT}")
  message(FATAL_ERROR "the first error of ${SOURCE} is not Strata's message (${EXPECT}):\n${first}\n\nfull output:\n${text}")
endif()
message(STATUS "${SOURCE}: first error is Strata's: ${first}")
