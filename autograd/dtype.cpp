#include "autograd/dtype.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

namespace xg {

size_t dtype_size(Dtype d) {
  switch (d) {
    case Dtype::Float32: return 4;
    case Dtype::BFloat16:
    case Dtype::Float16: return 2;
    case Dtype::Int64: return 8;
  }
  return 0;
}

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::Float32: return "float32";
    case Dtype::BFloat16: return "bfloat16";
    case Dtype::Float16: return "float16";
    case Dtype::Int64: return "int64";
  }
  return "?";
}

Dtype dtype_from_name(const std::string& name) {
  if (name == "float32" || name == "fp32") return Dtype::Float32;
  if (name == "bfloat16" || name == "bf16") return Dtype::BFloat16;
  if (name == "float16" || name == "fp16") return Dtype::Float16;
  if (name == "int64") return Dtype::Int64;
  throw std::invalid_argument(
      fmt::format("[dtype] unknown dtype '{}' (float32, bfloat16, float16, int64)", name));
}

bool is_floating(Dtype d) { return d != Dtype::Int64; }

uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // NaN stays a quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
  return uint16_t(u >> 16);
}

float bf16_to_float(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// IEEE binary16 in plain integer code: GCC's _Float16 is not in clang 14 on x86-64 (the fuzzing
// and sanitizer build), and F16C instructions are not in portable x86-64.
uint16_t float_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // NaN stays a quiet NaN
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // 65520 and above round to inf
  if (abs >= 0x38800000u) {  // normal: rebias the exponent (127 -> 15), round to nearest, ties to even
    const uint32_t v = abs - 0x38000000u;
    return uint16_t(sign | ((v + 0xfffu + ((v >> 13) & 1u)) >> 13));
  }
  if (abs < 0x33000000u) return sign;  // below 2^-25: rounds to zero
  // Subnormal: the value in units of 2^-24 is mantissa * 2^(exponent - 126).
  const uint32_t mant = (abs & 0x7fffffu) | 0x800000u, shift = 126u - (abs >> 23);
  uint32_t r = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (r & 1u))) ++r;
  return uint16_t(sign | r);
}

float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu, bits;
  if (exp == 31) {
    bits = sign | 0x7f800000u | mant << 13;  // inf, NaN
  } else if (exp != 0) {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while (!(mant & 0x400u));
    bits = sign | uint32_t(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

namespace {
template <class Load>
void store_all(Load load, void* dst, Dtype to, size_t n) {
  switch (to) {
    case Dtype::Float32:
      for (size_t i = 0; i < n; ++i) static_cast<float*>(dst)[i] = float(load(i));
      break;
    case Dtype::BFloat16:
      for (size_t i = 0; i < n; ++i) static_cast<uint16_t*>(dst)[i] = float_to_bf16(float(load(i)));
      break;
    case Dtype::Float16:
      for (size_t i = 0; i < n; ++i) static_cast<uint16_t*>(dst)[i] = float_to_f16(float(load(i)));
      break;
    case Dtype::Int64:
      for (size_t i = 0; i < n; ++i) static_cast<int64_t*>(dst)[i] = int64_t(load(i));
      break;
  }
}
}  // namespace

void convert(const void* src, Dtype from, void* dst, Dtype to, size_t n) {
  if (from == to) {
    std::memcpy(dst, src, n * dtype_size(from));
    return;
  }
  switch (from) {
    case Dtype::Float32: {
      const float* s = static_cast<const float*>(src);
      return store_all([s](size_t i) { return s[i]; }, dst, to, n);
    }
    case Dtype::BFloat16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      return store_all([s](size_t i) { return bf16_to_float(s[i]); }, dst, to, n);
    }
    case Dtype::Float16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      return store_all([s](size_t i) { return f16_to_float(s[i]); }, dst, to, n);
    }
    case Dtype::Int64: {
      const int64_t* s = static_cast<const int64_t*>(src);
      return store_all([s](size_t i) { return double(s[i]); }, dst, to, n);
    }
  }
}

}  // namespace xg
