// main() of the MPI test executables: one worker thread per rank (ranks share the cores), MPI
// started before the tests, a short timeout so that a test stuck in a collective fails fast.
#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include "nn/distributed/process_group.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tbb::global_control threads(tbb::global_control::max_allowed_parallelism, 1);
  auto group = aclgrad::distributed::ProcessGroup::init({.timeout = std::chrono::seconds(20)});
  (void)group;
  return RUN_ALL_TESTS();
}
