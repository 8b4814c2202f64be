# Communicator backends (forgia/comm.h), included once forgia_objects exists and before the
# library's dependencies are linked. MPI (Debian: libopenmpi-dev, openmpi-bin) and NCCL
# (CUDA toolkit) are optional: without them device/comm_mpi.c and device/comm_nccl.c are not
# compiled and fg_comm_open(FG_COMM_MPI) / fg_comm_open_nccl say FG_ERR_UNSUPPORTED.
#
# libforgia links the libraries by path (MPI_C_LIBRARIES, NCCL_LIBRARY) rather than through
# imported targets, so the exported forgia target needs no find_package(MPI) in consumers.
set(FORGIA_MPI AUTO CACHE STRING "Build the MPI communicator: AUTO (when find_package(MPI) finds C MPI), ON or OFF")
set_property(CACHE FORGIA_MPI PROPERTY STRINGS AUTO ON OFF)
set(FORGIA_NCCL AUTO CACHE STRING "Build the NCCL communicator: AUTO (when CUDA, MPI, nccl.h and libnccl are found), ON or OFF")
set_property(CACHE FORGIA_NCCL PROPERTY STRINGS AUTO ON OFF)

set(FORGIA_HAVE_MPI OFF)
if(NOT FORGIA_MPI STREQUAL "OFF")
  find_package(MPI QUIET COMPONENTS C)
  if(MPI_C_FOUND)
    set(FORGIA_HAVE_MPI ON)
  elseif(FORGIA_MPI STREQUAL "ON")
    message(FATAL_ERROR "forgia: FORGIA_MPI=ON but no C MPI was found; install the Debian packages libopenmpi-dev openmpi-bin")
  endif()
endif()

set(FORGIA_HAVE_NCCL OFF)
if(NOT FORGIA_NCCL STREQUAL "OFF" AND FORGIA_HAVE_CUDA AND FORGIA_HAVE_MPI)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ENV NCCL_HOME PATH_SUFFIXES lib lib64)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(FORGIA_HAVE_NCCL ON)
  endif()
endif()
if(FORGIA_NCCL STREQUAL "ON" AND NOT FORGIA_HAVE_NCCL)
  message(FATAL_ERROR "forgia: FORGIA_NCCL=ON needs the CUDA backend, MPI and NCCL (nccl.h, libnccl); "
                      "found CUDA=${FORGIA_HAVE_CUDA} MPI=${FORGIA_HAVE_MPI} nccl.h=${NCCL_INCLUDE_DIR} libnccl=${NCCL_LIBRARY}")
endif()

if(FORGIA_HAVE_MPI)
  target_compile_definitions(forgia_objects PRIVATE FORGIA_HAVE_MPI=1)
  target_include_directories(forgia_objects PRIVATE ${MPI_C_INCLUDE_DIRS})
  target_compile_options(forgia_objects PRIVATE ${MPI_C_COMPILE_OPTIONS})
  list(APPEND FORGIA_PRIVATE_DEPS ${MPI_C_LIBRARIES})
else()
  set_source_files_properties(${PROJECT_SOURCE_DIR}/device/comm_mpi.c PROPERTIES HEADER_FILE_ONLY ON)
endif()
if(FORGIA_HAVE_NCCL)
  target_compile_definitions(forgia_objects PRIVATE FORGIA_HAVE_NCCL=1)
  target_include_directories(forgia_objects PRIVATE ${NCCL_INCLUDE_DIR})
  list(APPEND FORGIA_PRIVATE_DEPS ${NCCL_LIBRARY})
else()
  set_source_files_properties(${PROJECT_SOURCE_DIR}/device/comm_nccl.c PROPERTIES HEADER_FILE_ONLY ON)
endif()
# For forgia.pc (cmake/install.cmake appends it to the private libraries): a static
# libforgia's consumers link these libraries too.
set(FORGIA_COMM_PC_LIBS "")
set(forgia_comm_libs "")
if(FORGIA_HAVE_MPI)
  list(APPEND forgia_comm_libs ${MPI_C_LIBRARIES})
endif()
if(FORGIA_HAVE_NCCL)
  list(APPEND forgia_comm_libs ${NCCL_LIBRARY})
endif()
foreach(lib ${forgia_comm_libs})
  get_filename_component(dir "${lib}" DIRECTORY)
  get_filename_component(name "${lib}" NAME_WE)
  string(REGEX REPLACE "^lib" "" name "${name}")
  string(APPEND FORGIA_COMM_PC_LIBS " -L${dir} -Wl,-rpath,${dir} -l${name}")
endforeach()
message(STATUS "forgia: MPI communicator ${FORGIA_HAVE_MPI}, NCCL communicator ${FORGIA_HAVE_NCCL}")
