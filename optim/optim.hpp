#pragma once
// Everything the optim layer offers.
#include "optim/optimizer.hpp"
#include "optim/schedule.hpp"
