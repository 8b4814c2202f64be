# The adversarial suite (tests/adversarial/): hostile and careless inputs against the CLI,
# each case with its exit code, message class, peak-RSS bound and hang guard. Label slow;
# stdlib Python only. Under FORGIA_SANITIZE the runner skips RSS bounds and stretches its
# hang guards (see run.py).
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_FOUND)
  message(STATUS "python3 not found: slow.adversarial not registered")
  return()
endif()

# The fault injector preloaded into the CLI for "changed while running" and signal cases.
# Not instrumented: it is preloaded into sanitized and plain builds alike.
add_library(adv_shim MODULE ${CMAKE_CURRENT_SOURCE_DIR}/adversarial/shim.c)
target_compile_options(adv_shim PRIVATE -fno-sanitize=all)
target_link_options(adv_shim PRIVATE -fno-sanitize=all)
target_link_libraries(adv_shim PRIVATE ${CMAKE_DL_LIBS})

# The launcher that measures each command's own peak RSS (see spawn.c).
add_executable(adv_spawn ${CMAKE_CURRENT_SOURCE_DIR}/adversarial/spawn.c)
target_compile_options(adv_spawn PRIVATE -fno-sanitize=all)
target_link_options(adv_spawn PRIVATE -fno-sanitize=all)

set(adv_args --cli $<TARGET_FILE:forgia_cli> --shim $<TARGET_FILE:adv_shim> --spawn $<TARGET_FILE:adv_spawn>
  --work ${CMAKE_CURRENT_BINARY_DIR})
if(FORGIA_SANITIZE)
  list(APPEND adv_args --sanitized)
endif()
add_test(NAME slow.adversarial COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/adversarial/run.py ${adv_args})
set_tests_properties(slow.adversarial PROPERTIES LABELS slow TIMEOUT 900)
