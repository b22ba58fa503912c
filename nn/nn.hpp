#pragma once
// Everything the nn layer offers.
#include "nn/init.hpp"
#include "nn/layers.hpp"
#include "nn/module.hpp"
#include "nn/safetensors.hpp"
#include "nn/transformer.hpp"
