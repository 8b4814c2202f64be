# Every dependency is found here; a missing one stops configure with one line naming
# the Debian package that provides it.
find_package(PkgConfig QUIET)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "forgia: pkg-config not found; install the Debian package pkg-config")
endif()

macro(forgia_require_pc var module debpkg)
  pkg_check_modules(${var} QUIET IMPORTED_TARGET GLOBAL ${module})
  if(NOT ${var}_FOUND)
    message(FATAL_ERROR "forgia: ${module} not found; install the Debian package ${debpkg}")
  endif()
endmacro()

forgia_require_pc(HWLOC hwloc libhwloc-dev)
forgia_require_pc(CJSON libcjson libcjson-dev)
# PCRE2 runs the tokenizers' pre-tokenizer regexes (formats/tokenizer_pre.c).
forgia_require_pc(PCRE2 libpcre2-8 libpcre2-dev)
# utf8proc normalizes text to NFC for tokenizers whose file asks for it (Qwen 2).
forgia_require_pc(UTF8PROC libutf8proc libutf8proc-dev)
# CBLAS for the CPU's fast GEMM (cpu/cpu_gemm.c); cuBLAS comes with the CUDA toolkit.
forgia_require_pc(OPENBLAS openblas libopenblas-dev)

find_package(OpenMP QUIET COMPONENTS C CXX)
if(NOT OpenMP_C_FOUND)
  message(FATAL_ERROR "forgia: OpenMP not found; install the Debian package libgomp1 (gcc) or libomp-dev (clang)")
endif()
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)

if(FORGIA_BUILD_TESTS)
  find_package(GTest QUIET)
  if(NOT GTest_FOUND)
    message(FATAL_ERROR "forgia: GoogleTest not found; install the Debian package libgtest-dev")
  endif()
endif()
