# cmake -P script: install, configure + build the consumer, run it (its output is checked by ctest).
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGV}\n${out}\n${err}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
# SANITIZE (the build's ACLGRAD_SANITIZE): a sanitized library needs a sanitized consumer.
set(extra "")
if(SANITIZE)
  set(extra "-fsanitize=${SANITIZE}")
endif()
run(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${WORK_DIR}/build
  -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DDEMO_SOURCE=${DEMO_SOURCE} "-DCMAKE_CXX_FLAGS=${extra}")
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
# No library path from the environment: the consumer's own RUNPATH must find libaclnn.
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${WORK_DIR}/build/consumer
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "consumer exited with ${rc}")
endif()
