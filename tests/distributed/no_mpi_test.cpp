// A build without MPI (process_group_none.cpp, linked here in every build): distributed training
// is reported as unavailable, with what to install.
#include <gtest/gtest.h>

#include <string>

#include "nn/distributed/process_group.h"

namespace aclgrad::distributed {
namespace {

TEST(WithoutMpi, InitSaysDistributedTrainingIsNotAvailableAndWhatToInstall) {
  EXPECT_FALSE(is_available());
  try {
    ProcessGroup::init();
    FAIL() << "no error";
  } catch (const DistributedError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("aclgrad was built without MPI"), std::string::npos) << what;
    EXPECT_NE(what.find("libopenmpi-dev"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace aclgrad::distributed
