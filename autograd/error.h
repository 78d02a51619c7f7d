// Errors raised by the autograd layer.
#pragma once

#include "../tensor/error.h"

namespace aclgrad {

/// Misuse of the autograd graph: a second backward through freed buffers, a saved tensor modified
/// in place, a node returning a gradient of the wrong shape, grad() of an unused input...
class AutogradError : public Error {
  using Error::Error;
};

}  // namespace aclgrad
