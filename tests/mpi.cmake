# MPI runs (tests/mpi/es_mpi_check.cpp): the communicator's collectives and distributed ES
# memcmp-equal to one process, under the launcher with 2 ranks and 3 (an uneven share).
# Built when the MPI communicator is (cmake/comm.cmake) and a launcher was found.
if(FORGIA_HAVE_MPI AND MPIEXEC_EXECUTABLE)
  add_executable(mpi_es_check ${CMAKE_CURRENT_SOURCE_DIR}/mpi/es_mpi_check.cpp)
  target_include_directories(mpi_es_check PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/mpi)
  target_link_libraries(mpi_es_check PRIVATE forgia)

  # Open MPI reads these from the environment (other launchers ignore them): CI and
  # containers run as root; 3 ranks on 2 cores need oversubscription (and then Open MPI
  # yields when idle); shared memory and loopback only, without the single-copy mechanism
  # (CMA), which containers without ptrace rights refuse; no UCX or verbs probing. Other MPI
  # tests (tests/cli/test_es_mpi_cli.sh) take the same FORGIA_MPI_TEST_ENV.
  set(FORGIA_MPI_TEST_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
      OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_pml=ob1
      OMPI_MCA_osc=^ucx OMPI_MCA_mca_base_component_show_load_errors=0)
  # MPI_Init's allocations live until exit by design: LeakSanitizer would report them.
  if(FORGIA_SANITIZE MATCHES "address")
    list(APPEND FORGIA_MPI_TEST_ENV ASAN_OPTIONS=detect_leaks=0)
  endif()
  foreach(np 2 3)
    add_test(NAME mpi.es_np${np}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${MPIEXEC_PREFLAGS} $<TARGET_FILE:mpi_es_check>
              ${MPIEXEC_POSTFLAGS} ${np})
    set_tests_properties(mpi.es_np${np} PROPERTIES LABELS "cpu;mpi" TIMEOUT 600 ENVIRONMENT "${FORGIA_MPI_TEST_ENV}"
      PASS_REGULAR_EXPRESSION "PASS: ${np} ranks" FAIL_REGULAR_EXPRESSION "FAIL")
  endforeach()

  # forgia es spirals under the launcher: the final accuracy, parameter hash and saved model
  # of one process.
  add_test(NAME cli.es_mpi
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_es_mpi_cli.sh $<TARGET_FILE:forgia_cli>
            ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG})
  set(es_mpi_env ${FORGIA_MPI_TEST_ENV})
  if(FORGIA_SANITIZE)
    # 60 iterations and no accuracy bar: equal bits and clean memory are what a sanitized run checks.
    list(APPEND es_mpi_env "FORGIA_ES_MPI_EXTRA=--iterations 60 --target 0")
  endif()
  set_tests_properties(cli.es_mpi PROPERTIES LABELS "cpu;mpi" TIMEOUT 900 ENVIRONMENT "${es_mpi_env}")

  # forgia finetune under the launcher: one process's bytes for 2 and 3 ranks.
  add_executable(lm_tiny_write ${CMAKE_CURRENT_SOURCE_DIR}/mpi/lm_tiny_write.cpp)
  target_include_directories(lm_tiny_write PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/util)
  target_link_libraries(lm_tiny_write PRIVATE forgia)
  add_test(NAME cli.finetune_mpi
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_finetune_mpi.sh $<TARGET_FILE:forgia_cli>
            $<TARGET_FILE:lm_tiny_write> ${CMAKE_CURRENT_SOURCE_DIR}/data/tok/gpt2 ${MPIEXEC_EXECUTABLE}
            ${MPIEXEC_NUMPROC_FLAG})
  set_tests_properties(cli.finetune_mpi PROPERTIES LABELS "cpu;mpi" TIMEOUT 900 ENVIRONMENT "${FORGIA_MPI_TEST_ENV}"
    PASS_REGULAR_EXPRESSION "PASS: finetune" FAIL_REGULAR_EXPRESSION "FAIL")

  # The NCCL communicator: one GPU per rank (NCCL refuses two ranks on one GPU), so np 2
  # skips (exit 77) on a one-GPU machine.
  if(FORGIA_HAVE_NCCL)
    add_executable(mpi_nccl_check ${CMAKE_CURRENT_SOURCE_DIR}/mpi/nccl_check.cpp)
    target_include_directories(mpi_nccl_check PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/mpi)
    target_link_libraries(mpi_nccl_check PRIVATE forgia)
    foreach(np 1 2)
      add_test(NAME mpi.nccl_np${np}
        COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${MPIEXEC_PREFLAGS} $<TARGET_FILE:mpi_nccl_check>
                ${MPIEXEC_POSTFLAGS} ${np})
      set_tests_properties(mpi.nccl_np${np} PROPERTIES LABELS "cuda;mpi" TIMEOUT 600 ENVIRONMENT "${FORGIA_MPI_TEST_ENV}"
        SKIP_RETURN_CODE 77 FAIL_REGULAR_EXPRESSION "FAIL")
    endforeach()
  endif()
endif()
