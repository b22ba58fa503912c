#pragma once
// Everything a user of the autograd layer needs.
#include "autograd/engine.hpp"
#include "autograd/ops.hpp"
#include "autograd/parallel.hpp"
#include "util/random.hpp"
#include "autograd/tensor.hpp"
