// ProcessGroup without MPI (CMake found no MPI): the feature is off and says so.
#include "nn/distributed/process_group.h"

namespace aclgrad::distributed {

bool is_available() {
  return false;
}

std::shared_ptr<ProcessGroup> ProcessGroup::init(const ProcessGroupOptions&) {
  throw DistributedError(
      "distributed training is not available: aclgrad was built without MPI (install the "
      "Debian packages libopenmpi-dev and openmpi-bin, e.g. with scripts/setup.sh, then "
      "configure and build again)");
}

}  // namespace aclgrad::distributed
