// The nn layer in one include: modules, layers, init and checkpoints.
#pragma once

#include "../nn/activation.h"
#include "../nn/batchnorm.h"
#include "../nn/checkpoint.h"
#include "../nn/conv.h"
#include "../nn/embedding.h"
#include "../nn/init.h"
#include "../nn/linear.h"
#include "../nn/module.h"
#include "../nn/pooling.h"
#include "../nn/sequential.h"
