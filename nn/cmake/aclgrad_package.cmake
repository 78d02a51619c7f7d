# Installation and packaging of the framework (included by the top-level CMakeLists.txt after the
# layers). `cmake --install build --prefix P` gives:
#   P/lib/libaclgrad_{tensor,autograd,ops,nn}.so (static with -DBUILD_SHARED_LIBS=OFF) + libaclnn
#   P/include/aclgrad/{aclgrad.h, tensor/, autograd/, ops/, nn/}   the user API
#   P/lib/cmake/aclgrad/   find_package(aclgrad CONFIG): aclgrad::aclgrad (everything) and the
#                          layers aclgrad::tensor, ::autograd, ::ops, ::nn
#   P/lib/pkgconfig/aclgrad.pc, aclnn.pc
# and `cpack -G DEB` (in the build dir) the Debian packages libaclnn0, libaclnn-dev, libaclgrad0
# and libaclgrad-dev. Components: aclnn_runtime, aclnn_dev (aclnn/CMakeLists.txt), aclgrad_runtime,
# aclgrad_dev (here).
include(CMakePackageConfigHelpers)

# aclgrad::aclgrad: the whole framework in one target.
add_library(aclgrad INTERFACE)
target_link_libraries(aclgrad INTERFACE aclgrad_nn)
add_library(aclgrad::aclgrad ALIAS aclgrad)

set(ACLGRAD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/aclgrad)
# Installed libraries find each other (and libaclnn.so.0) in their own directory: the dynamic
# loader searches a NEEDED entry only with the RUNPATH of the object that has it, so a consumer's
# RUNPATH does not reach its libraries' dependencies. $ORIGIN keeps any prefix relocatable.
set_target_properties(aclgrad_tensor aclgrad_autograd aclgrad_ops aclgrad_nn aclgrad_distributed
  PROPERTIES INSTALL_RPATH "$ORIGIN")
install(TARGETS aclgrad_tensor aclgrad_autograd aclgrad_ops aclgrad_nn aclgrad aclgrad_openblas
  EXPORT aclgradTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT aclgrad_runtime
          NAMELINK_COMPONENT aclgrad_dev
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT aclgrad_dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT aclgrad_runtime)
foreach(layer tensor autograd ops nn)
  string(TOUPPER ${layer} LAYER)
  install(FILES ${ACLGRAD_${LAYER}_PUBLIC_HEADERS}
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/aclgrad/${layer} COMPONENT aclgrad_dev)
endforeach()
# Distributed training (aclgrad::distributed; MPI inside when built with it): not part of
# aclgrad::aclgrad, so consumers that do not ask for it do not link MPI.
install(TARGETS aclgrad_distributed EXPORT aclgradTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT aclgrad_runtime
          NAMELINK_COMPONENT aclgrad_dev
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT aclgrad_dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT aclgrad_runtime)
install(FILES ${ACLGRAD_DISTRIBUTED_PUBLIC_HEADERS}
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/aclgrad/nn/distributed COMPONENT aclgrad_dev)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/aclgrad.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/aclgrad
  COMPONENT aclgrad_dev)
install(EXPORT aclgradTargets NAMESPACE aclgrad:: DESTINATION ${ACLGRAD_CMAKE_DIR}
  COMPONENT aclgrad_dev)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/aclgradConfig.cmake.in
  ${PROJECT_BINARY_DIR}/aclgradConfig.cmake INSTALL_DESTINATION ${ACLGRAD_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/aclgradConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/aclgradConfig.cmake ${PROJECT_BINARY_DIR}/aclgradConfigVersion.cmake
  DESTINATION ${ACLGRAD_CMAKE_DIR} COMPONENT aclgrad_dev)

# pkg-config: the layers' libraries in link order, and what a static build drags in.
if(BUILD_SHARED_LIBS)
  set(ACLGRAD_PC_PRIVATE_LIBS "")
else()
  set(ACLGRAD_PC_PRIVATE_LIBS "-ltbb -lz -lopenblas -lpthread")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/aclgrad.pc.in ${PROJECT_BINARY_DIR}/aclgrad.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/aclgrad.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT aclgrad_dev)

# Debian packages (cpack -G DEB). Dependencies are Debian's package names.
set(CPACK_PACKAGE_NAME aclgrad)
set(CPACK_PACKAGE_VENDOR "aclgrad")
set(CPACK_PACKAGE_CONTACT "aclgrad developers <aclgrad@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "C++20 deep learning on the CPU with a CPU implementation of CANN aclnn")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL aclnn_runtime aclnn_dev aclgrad_runtime aclgrad_dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(ACLGRAD_DEB_VERSION "${PROJECT_VERSION}")
set(CPACK_DEBIAN_ACLNN_RUNTIME_PACKAGE_NAME libaclnn0)
set(CPACK_DEBIAN_ACLNN_RUNTIME_PACKAGE_DEPENDS "libopenblas0 | libopenblas0-pthread, libtbb12")
set(CPACK_DEBIAN_ACLNN_DEV_PACKAGE_NAME libaclnn-dev)
set(CPACK_DEBIAN_ACLNN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_ACLNN_DEV_PACKAGE_DEPENDS "libaclnn0 (= ${ACLGRAD_DEB_VERSION})")
set(CPACK_DEBIAN_ACLGRAD_RUNTIME_PACKAGE_NAME libaclgrad0)
set(CPACK_DEBIAN_ACLGRAD_RUNTIME_PACKAGE_DEPENDS
    "libaclnn0 (= ${ACLGRAD_DEB_VERSION}), libopenblas0 | libopenblas0-pthread, libtbb12, zlib1g")
if(ACLGRAD_HAVE_MPI)
  string(APPEND CPACK_DEBIAN_ACLGRAD_RUNTIME_PACKAGE_DEPENDS ", libopenmpi3")
endif()
set(CPACK_DEBIAN_ACLGRAD_DEV_PACKAGE_NAME libaclgrad-dev)
set(CPACK_DEBIAN_ACLGRAD_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_ACLGRAD_DEV_PACKAGE_DEPENDS
    "libaclgrad0 (= ${ACLGRAD_DEB_VERSION}), libaclnn-dev (= ${ACLGRAD_DEB_VERSION}), libopenblas-dev, libtbb-dev, zlib1g-dev")
include(CPack)
