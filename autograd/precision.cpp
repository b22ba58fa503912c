#include "autograd/precision.hpp"

#include <atomic>
#include <stdexcept>

#include "autograd/engine.hpp"

namespace xg {

namespace {
std::atomic<MatmulPrecision> g_precision{MatmulPrecision::FP32};
thread_local int t_grad_precision_scopes = 0;  // open GradPrecisionGuards on this thread
}

void set_matmul_precision(MatmulPrecision p) { g_precision.store(p); }
MatmulPrecision matmul_precision() { return g_precision.load(); }

MatmulPrecision matmul_precision_from_name(const std::string& name) {
  if (name == "fp32") return MatmulPrecision::FP32;
  if (name == "bf16") return MatmulPrecision::BF16;
  if (name == "int8") return MatmulPrecision::INT8;
  throw std::invalid_argument("[precision] unknown matmul precision '" + name + "' (fp32, bf16, int8)");
}

const char* matmul_precision_name(MatmulPrecision p) {
  switch (p) {
    case MatmulPrecision::BF16: return "bf16";
    case MatmulPrecision::INT8: return "int8";
    default: return "fp32";
  }
}

bool bf16_forward_now() {
  return matmul_precision() == MatmulPrecision::BF16 && !grad_enabled() && t_grad_precision_scopes == 0;
}
GradPrecisionGuard::GradPrecisionGuard() { ++t_grad_precision_scopes; }
GradPrecisionGuard::~GradPrecisionGuard() { --t_grad_precision_scopes; }
bool bf16_linear_now() { return matmul_precision() == MatmulPrecision::BF16; }

MatmulPrecisionGuard::MatmulPrecisionGuard(MatmulPrecision p) : previous_(matmul_precision()) {
  set_matmul_precision(p);
}
MatmulPrecisionGuard::~MatmulPrecisionGuard() { set_matmul_precision(previous_); }

}  // namespace xg
