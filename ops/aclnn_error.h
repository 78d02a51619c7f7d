// AclnnError: a failed libaclnn call (the convolutions' backend) as an aclgrad exception.
#pragma once

#include <cstdint>
#include <source_location>
#include <string>

#include "../tensor/error.h"

namespace aclgrad {

/// A libaclnn call returned a non-zero status. what() is
/// "<api> failed with status <code>: <aclGetRecentErrMsg()>".
class AclnnError : public Error {
 public:
  AclnnError(std::string api, int32_t status, const std::string& aclnn_message,
             std::source_location where = std::source_location::current());
  /// The aclnn function that failed, e.g. "aclnnConvolutionBackwardGetWorkspaceSize".
  const std::string& api() const noexcept { return api_; }
  /// Its aclnnStatus (161001 null argument, 161002 invalid argument, 561xxx internal).
  int32_t status() const noexcept { return status_; }

 private:
  std::string api_;
  int32_t status_;
};

}  // namespace aclgrad
