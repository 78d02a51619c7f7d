# ctest: a README block must be the lines of an example (minimal_loop.cpp: "Training loop in
# 15 lines"; mixed_precision_loop.cpp: "Training in bf16") between "// [loop]" and
# "// [loop end]" (compared without indentation).
#   cmake -DREADME=<README.md> -DSOURCE=<minimal_loop.cpp> -P readme_snippet_test.cmake
file(READ "${SOURCE}" src)
string(REGEX MATCH "// \\[loop\\]\n(.*)\n *// \\[loop end\\]" _ "${src}")
string(REGEX REPLACE "\n +" "\n" loop "\n${CMAKE_MATCH_1}")
file(READ "${README}" readme)
string(REGEX REPLACE "\n +" "\n" readme "${readme}")
string(FIND "${readme}" "```cpp${loop}\n" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md does not show the loop of ${SOURCE}:\n${loop}")
endif()
get_filename_component(name "${SOURCE}" NAME)
message("README snippet matches ${name}")
