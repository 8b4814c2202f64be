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
set(FORGIA_PC_PRIVATE "hwloc libcjson openblas")
set(FORGIA_PC_LIBS_PRIVATE "${OpenMP_C_FLAGS} -lpthread -lm")
if(FORGIA_HAVE_CUDA)
  string(APPEND FORGIA_PC_LIBS_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcublas -lcudart -lstdc++")
endif()
configure_file(cmake/forgia.pc.in ${PROJECT_BINARY_DIR}/forgia.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/forgia.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
