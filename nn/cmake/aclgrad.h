// aclgrad: the whole user API in one header, installed as <aclgrad/aclgrad.h>:
//   tensors, creation and random numbers      aclgrad/tensor/
//   autograd (backward, grad, gradcheck, custom ops)   aclgrad/autograd/
//   differentiable ops (conv, linear, pooling, losses, ...)   aclgrad/ops/
//   modules, optimizers, schedulers, data, checkpoints      aclgrad/nn/
// libaclnn's C API (acl/acl.h, aclnnop/...) is not part of it: include those headers directly.
#pragma once

#include "tensor/creation.h"
#include "tensor/random.h"
#include "tensor/tensor.h"

#include "autograd/autograd.h"
#include "autograd/function.h"

#include "ops/ops.h"

#include "nn/data.h"
#include "nn/idx.h"
#include "nn/lr_scheduler.h"
#include "nn/nn.h"
#include "nn/optim.h"
#include "nn/transforms.h"
#include "nn/clip.h"
#include "nn/grad_scaler.h"
