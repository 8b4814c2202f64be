# docs/design.md, Numerics contract, rule 2: no contraction anywhere, so CPU and CUDA round alike.
# The same flags are usage requirements of forgia::forgia (CMakeLists.txt) and in forgia.pc's
# Cflags, so that consumers compiling the elem/ headers get the library's bits too. nvcc
# gets --fmad=false for device code and -ffp-contract=off for the host compiler.
set(FORGIA_NUMERICS_FLAGS
  $<$<COMPILE_LANGUAGE:C,CXX>:-ffp-contract=off>
  $<$<COMPILE_LANG_AND_ID:CUDA,NVIDIA>:--fmad=false>
  $<$<COMPILE_LANG_AND_ID:CUDA,NVIDIA>:-Xcompiler=-ffp-contract=off>
  $<$<COMPILE_LANG_AND_ID:CUDA,Clang>:-ffp-contract=off>)
# -fno-math-errno: sqrtf stays correctly rounded, but without the errno path the compiler
# can use vector square roots (the op layer's AdamW loop does not vectorise otherwise).
add_compile_options(
  ${FORGIA_NUMERICS_FLAGS}
  $<$<COMPILE_LANGUAGE:C,CXX>:-fno-math-errno>
  $<$<COMPILE_LANGUAGE:C,CXX>:-Wall>
  $<$<COMPILE_LANGUAGE:C,CXX>:-Wextra>
  $<$<COMPILE_LANGUAGE:C>:-Wstrict-prototypes>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall>)
# Hot loops (conversions, codecs) only vectorise at -O3 with GCC; without fast-math the
# vectorised code rounds exactly as the scalar code, so the bits do not change.
foreach(lang C CXX)
  string(REPLACE "-O2" "-O3" CMAKE_${lang}_FLAGS_RELWITHDEBINFO "${CMAKE_${lang}_FLAGS_RELWITHDEBINFO}")
endforeach()
if(FORGIA_WERROR)
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-Werror> $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
endif()
if(FORGIA_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=${FORGIA_SANITIZE}>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-sanitize-recover=all>)
  add_link_options(-fsanitize=${FORGIA_SANITIZE})
endif()
