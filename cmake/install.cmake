include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set_target_properties(forgia PROPERTIES INSTALL_RPATH "$ORIGIN")
install(TARGETS forgia EXPORT forgiaTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/forgia DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT forgiaTargets NAMESPACE forgia:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/forgia)
configure_package_config_file(cmake/forgiaConfig.cmake.in
  ${PROJECT_BINARY_DIR}/forgiaConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/forgia)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/forgiaConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/forgiaConfig.cmake ${PROJECT_BINARY_DIR}/forgiaConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/forgia)

# forgia.pc: a static libforgia needs its dependencies on the link line too.
set(FORGIA_PC_PRIVATE "hwloc libcjson libpcre2-8 libutf8proc")
set(FORGIA_PC_LIBS_PRIVATE "${OpenMP_C_FLAGS} -lpthread -lm")
# MPI and NCCL (cmake/comm.cmake), when the communicator backends are built.
string(APPEND FORGIA_PC_LIBS_PRIVATE "${FORGIA_COMM_PC_LIBS}")
if(FORGIA_HAVE_CUDA)
  get_filename_component(cudart_dir "${CUDA_cudart_LIBRARY}" DIRECTORY)
  string(APPEND FORGIA_PC_LIBS_PRIVATE " -L${cudart_dir} -Wl,-rpath,${cudart_dir} -lcudart -lstdc++")
endif()
# A static libforgia carries its dependencies to every link line; a shared one hides them.
if(BUILD_SHARED_LIBS)
  set(FORGIA_PC_REQUIRES "Requires.private: ${FORGIA_PC_PRIVATE}")
  set(FORGIA_PC_LIBS "-L\${libdir} -lforgia")
  set(FORGIA_PC_LIBS_PRIVATE_LINE "Libs.private: ${FORGIA_PC_LIBS_PRIVATE}")
else()
  set(FORGIA_PC_REQUIRES "Requires: ${FORGIA_PC_PRIVATE}")
  set(FORGIA_PC_LIBS "-L\${libdir} -lforgia ${FORGIA_PC_LIBS_PRIVATE}")
  set(FORGIA_PC_LIBS_PRIVATE_LINE "")
endif()
configure_file(cmake/forgia.pc.in ${PROJECT_BINARY_DIR}/forgia.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/forgia.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
