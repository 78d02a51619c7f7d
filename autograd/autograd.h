// Everything a user of autograd needs: Tensor's autograd methods (tensor/tensor.h), grad mode
// guards, backward/grad, the graph types, leaf hooks and gradcheck.
#pragma once

#include "../autograd/autocast_mode.h"
#include "../autograd/engine.h"
#include "../autograd/error.h"
#include "../autograd/grad_mode.h"
#include "../autograd/gradcheck.h"
#include "../autograd/hooks.h"
#include "../autograd/node.h"
