cmake_policy(VERSION 3.25)
# Installs the build into WORK_DIR/prefix, then builds and runs the consumer against it,
# once through find_package(forgia CONFIG) and once through pkg-config (forgia.pc).
# Both routes also build `numerics`: forgia's -ffp-contract=off reaches a consumer compiling
# elem/ headers with its own -O2 (PROBE_FLAGS), checked against the library bit for bit.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
# EXTRA_FLAGS: a sanitized libforgia needs the sanitizer runtime in the consumer too.
step(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
     "-DCMAKE_C_FLAGS=${EXTRA_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${EXTRA_FLAGS}" "-DPROBE_FLAGS=${PROBE_FLAGS}")
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step(${WORK_DIR}/build/consumer)
step(${WORK_DIR}/build/numerics)
# pkg-config route: compile with the flags forgia.pc gives.
file(GLOB pcdir ${WORK_DIR}/prefix/lib*/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "${pcdir}")
foreach(what cflags libs)
  execute_process(COMMAND pkg-config --${what} forgia OUTPUT_VARIABLE ${what} RESULT_VARIABLE rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config --${what} forgia failed")
  endif()
  separate_arguments(${what} UNIX_COMMAND "${${what}}")
endforeach()
if(NOT "-ffp-contract=off" IN_LIST cflags)
  message(FATAL_ERROR "pkg-config --cflags forgia lacks -ffp-contract=off: ${cflags}")
endif()
separate_arguments(extra UNIX_COMMAND "${EXTRA_FLAGS}")
separate_arguments(probe UNIX_COMMAND "${PROBE_FLAGS}")
get_filename_component(libdir "${pcdir}" DIRECTORY)
set(link ${libs} -Wl,-rpath,${libdir})
step(cc ${extra} ${cflags} ${SOURCE_DIR}/consumer.c -o ${WORK_DIR}/consumer_pc ${link})
step(${WORK_DIR}/consumer_pc)
step(cc ${extra} ${probe} ${cflags} -c ${SOURCE_DIR}/numerics_probe.c -o ${WORK_DIR}/probe_pc.o)
step(cc ${extra} ${cflags} ${SOURCE_DIR}/numerics.c ${WORK_DIR}/probe_pc.o -o ${WORK_DIR}/numerics_pc ${link})
step(${WORK_DIR}/numerics_pc)
# Control: the same probe with -ffp-contract=fast after forgia's flags fuses (on a CPU with
# FMA), so the check above would catch forgia.pc without -ffp-contract=off. Skipped where
# PROBE_FLAGS cannot enable FMA instructions (CONTROL=OFF).
if(NOT CONTROL)
  return()
endif()
step(cc ${extra} ${probe} ${cflags} -ffp-contract=fast -c ${SOURCE_DIR}/numerics_probe.c -o ${WORK_DIR}/probe_fast.o)
step(cc ${extra} ${cflags} ${SOURCE_DIR}/numerics.c ${WORK_DIR}/probe_fast.o -o ${WORK_DIR}/numerics_fast ${link})
step(${WORK_DIR}/numerics_fast --contracted)
