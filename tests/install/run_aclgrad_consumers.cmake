# cmake -P script, the installed framework as outsiders use it. MODE:
#   prefix  cmake --install the build tree into WORK_DIR/prefix, then build the consumer project
#           with find_package(aclgrad) and with pkg-config + make, and run both;
#   deb     cpack -G DEB in the build tree, dpkg -x the four packages into WORK_DIR/root, then the
#           same two consumers against that root;
#   headers compile every installed public header on its own (-include it in an empty file).
# SANITIZE (the build's ACLGRAD_SANITIZE): a sanitized library needs sanitized consumers.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(extra "")
if(SANITIZE)
  set(extra "-fsanitize=${SANITIZE}")
endif()
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGV}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()

# Every installed shared library of the framework must carry RUNPATH $ORIGIN (readelf -d), so
# its dependencies (libaclnn.so.0) are found next to it wherever the tree was installed.
function(check_runpaths libdir)
  file(GLOB libs ${libdir}/libaclgrad_*.so.*.*)
  find_program(READELF readelf)
  if(NOT libs OR NOT READELF)
    return()  # a static build, or no binutils: the consumer runs below still decide
  endif()
  foreach(lib ${libs})
    execute_process(COMMAND ${READELF} -d ${lib} OUTPUT_VARIABLE dyn)
    if(NOT dyn MATCHES "\\(RUNPATH\\)[^\n]*\\[\\$ORIGIN\\]")
      message(FATAL_ERROR "${lib} has no RUNPATH [$ORIGIN]:\n${dyn}")
    endif()
  endforeach()
endfunction()

# Builds and runs both consumers against an installed tree under `root` (its usr-like prefix).
# They run with no library path (unset, not merely not set here): the RUNPATHs must suffice.
function(consumers prefix)
  file(GLOB_RECURSE pcs ${prefix}/*/aclgrad.pc)
  list(GET pcs 0 pc)
  get_filename_component(pcdir ${pc} DIRECTORY)
  get_filename_component(libdir ${pcdir} DIRECTORY)
  check_runpaths(${libdir})
  set(no_env ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH)
  run(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${WORK_DIR}/cmake-consumer
      -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=${extra}")
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/cmake-consumer)
  run(${no_env} ${WORK_DIR}/cmake-consumer/train_two_steps)
  file(MAKE_DIRECTORY ${WORK_DIR}/make-consumer)
  run(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pcdir} make -s -C ${CONSUMER_SOURCE}
      OUT=${WORK_DIR}/make-consumer "EXTRA_FLAGS=${extra}")
  run(${no_env} ${WORK_DIR}/make-consumer/train_two_steps)
endfunction()

if(MODE STREQUAL "prefix")
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
  consumers(${WORK_DIR}/prefix)
elseif(MODE STREQUAL "deb")
  run(cpack -G DEB -B ${WORK_DIR}/debs --config ${BUILD_DIR}/CPackConfig.cmake)
  file(GLOB debs ${WORK_DIR}/debs/*.deb)
  list(LENGTH debs n)
  if(NOT n EQUAL 4)
    message(FATAL_ERROR "expected 4 .deb packages, got ${n}: ${debs}")
  endif()
  foreach(deb ${debs})
    run(dpkg-deb --field ${deb} Package Depends)
    run(dpkg -x ${deb} ${WORK_DIR}/root)
  endforeach()
  consumers(${WORK_DIR}/root/usr)
elseif(MODE STREQUAL "headers")
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix --component aclgrad_dev)
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix --component aclnn_dev)
  file(GLOB_RECURSE headers RELATIVE ${WORK_DIR}/prefix/include ${WORK_DIR}/prefix/include/aclgrad/*.h)
  list(LENGTH headers n)
  file(WRITE ${WORK_DIR}/empty.cpp "")
  foreach(h ${headers})
    run(${CXX} -std=c++20 -fsyntax-only -I${WORK_DIR}/prefix/include -include ${h}
        ${WORK_DIR}/empty.cpp)
  endforeach()
  message(STATUS "${n} public headers compile on their own")
else()
  message(FATAL_ERROR "MODE must be prefix, deb or headers")
endif()
