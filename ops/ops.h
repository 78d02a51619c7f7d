// All differentiable ops (include this, or the family headers).
#pragma once

#include "../ops/activation.h"
#include "../ops/autocast.h"
#include "../ops/batch_norm.h"
#include "../ops/cast.h"
#include "../ops/conv.h"
#include "../ops/dropout.h"
#include "../ops/elementwise.h"
#include "../ops/embedding.h"
#include "../ops/linear.h"
#include "../ops/loss.h"
#include "../ops/pool.h"
#include "../ops/reduction.h"
#include "../ops/shape.h"
#include "../ops/softmax.h"
