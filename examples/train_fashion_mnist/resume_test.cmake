# ctest: training 2 epochs straight and 1 epoch + --resume to 2 must give bit-identical
# checkpoints (weights, BatchNorm buffers, optimizer state). Run with
#   cmake -DEXE=<train_fashion_mnist> -DDIR=<scratch dir> -P resume_test.cmake
# With -DLAUNCH="mpirun|<flags>|-np|2" the training runs are distributed (--distributed).
# With -DTWICE=ON it instead trains twice from the same seed and compares those checkpoints.
# With -DEXTRA="--precision|fp16" every training run gets those flags too.
set(common --limit-train 256 --limit-test 100 --epochs 2 --batch-size 32 --quiet)
string(REPLACE "|" ";" extra "${EXTRA}")
list(APPEND common ${extra})
string(REPLACE "|" ";" launch "${LAUNCH}")
if(launch)
  list(APPEND common --distributed)
endif()
file(REMOVE_RECURSE ${DIR})

function(run)
  execute_process(COMMAND ${launch} ${EXE} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  message("$ train_fashion_mnist ${ARGN}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "exit code ${rc}")
  endif()
endfunction()

run(${common} --out ${DIR}/straight)
if(TWICE)  # the same seed twice, straight: the same weights, bit for bit
  run(${common} --out ${DIR}/again)
  set(launch "")
  run(--compare ${DIR}/straight/checkpoint.safetensors ${DIR}/again/checkpoint.safetensors)
  return()
endif()
run(${common} --out ${DIR}/resumed --stop-after 1)
run(${common} --out ${DIR}/resumed --resume ${DIR}/resumed/checkpoint.safetensors)
set(launch "")
run(--compare ${DIR}/straight/checkpoint.safetensors ${DIR}/resumed/checkpoint.safetensors)
