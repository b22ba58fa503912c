#pragma once
// Everything the nn layer offers.
#include "nn/arena.hpp"
#include "nn/grad_buckets.hpp"
#include "nn/init.hpp"
#include "nn/layers.hpp"
#include "nn/module.hpp"
#include "nn/packed_weights.hpp"
#include "nn/safetensors.hpp"
#include "nn/transformer.hpp"
