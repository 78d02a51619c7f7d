// All differentiable ops (include this, or the family headers).
#pragma once

#include "ops/activation.h"
#include "ops/elementwise.h"
#include "ops/reduction.h"
