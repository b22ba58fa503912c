#pragma once
// Storage element types and the float conversions between them. bfloat16 rounds to nearest
// even with NaN kept quiet, exactly as PyTorch's c10::BFloat16; float16 is IEEE binary16 with
// round-to-nearest-even, subnormals and infinities (the compiler's _Float16 conversions).
#include <cstddef>
#include <cstdint>
#include <string>

namespace xg {

enum class Dtype : uint8_t { Float32, BFloat16, Float16, Int64 };

size_t dtype_size(Dtype d);
// "float32", "bfloat16", "float16", "int64".
const char* dtype_name(Dtype d);
// Parses the names above (and "fp32", "bf16", "fp16"); throws naming the text otherwise.
Dtype dtype_from_name(const std::string& name);
bool is_floating(Dtype d);

uint16_t float_to_bf16(float f);
float bf16_to_float(uint16_t h);
uint16_t float_to_f16(float f);
float f16_to_float(uint16_t h);

// Element-wise conversion of n values between any two dtypes (int64 <-> float truncates toward
// zero, as a C cast).
void convert(const void* src, Dtype from, void* dst, Dtype to, size_t n);

}  // namespace xg
