// sgemm_bf16 on both paths (the AVX512-BF16 kernel where this CPU has it, and the forced
// fallback): against a double-precision product of the bf16-rounded inputs, against fp32 sgemm
// within the bf16 rounding bound, and with B given as bf16 bits.
#include <catch2/catch.hpp>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <tuple>

#include "autograd/dtype.hpp"
#include "autograd/engine.hpp"
#include "autograd/kernels/gemm.hpp"
#include "autograd/kernels/vec.hpp"
#include "autograd/ops.hpp"
#include "autograd/parallel.hpp"
#include "autograd/precision.hpp"
#include "tests/epilogue_after.hpp"
#include "tests/random_values.hpp"
#include "tests/thread_count.hpp"
#include "util/random.hpp"

using namespace xg;

namespace {

std::vector<float> rounded(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = bf16_to_float(float_to_bf16(v[i]));
  return out;
}

std::vector<float> absolute(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = std::fabs(v[i]);
  return out;
}

std::vector<gemm::Bf16Kernel> kernels_here() {
  if (gemm::bf16_native_available()) return {gemm::Bf16Kernel::Native, gemm::Bf16Kernel::Fallback};
  return {gemm::Bf16Kernel::Fallback};
}

// Restores the thread count and the bf16 path a test changed.
struct Restore {
  RestoreThreads threads;
  gemm::Bf16Kernel kernel = gemm::bf16_kernel();
  ~Restore() { gemm::set_bf16_kernel(kernel); }
};

struct Case {
  size_t M, N, K;
  bool ta, tb;
  float alpha, beta;
  size_t pad;
};

// One product on the current path, checked against the double reference of the rounded inputs
// (tolerance 1e-5 of sum |a||b| per entry, plus the beta term's rounding).
void check_bf16(const Case& c) {
  const size_t lda = (c.ta ? c.M : c.K) + c.pad, ldb = (c.tb ? c.K : c.N) + c.pad, ldc = c.N + c.pad;
  const auto A = random_vec((c.ta ? c.K : c.M) * lda, 11), B = random_vec((c.tb ? c.N : c.K) * ldb, 12);
  auto C = random_vec(c.M * ldc, 13);
  if (c.beta == 0.f) std::fill(C.begin(), C.end(), NAN);  // beta == 0 must ignore old C
  auto R = C, S = C;
  const auto Ar = rounded(A), Br = rounded(B);
  gemm::sgemm_bf16(c.ta, c.tb, c.M, c.N, c.K, c.alpha, A.data(), lda, B.data(), ldb, c.beta,
                   C.data(), ldc);
  gemm::sgemm_reference(c.ta, c.tb, c.M, c.N, c.K, c.alpha, Ar.data(), lda, Br.data(), ldb, c.beta,
                        R.data(), ldc);
  gemm::sgemm_reference(c.ta, c.tb, c.M, c.N, c.K, std::fabs(c.alpha), absolute(Ar).data(), lda,
                        absolute(Br).data(), ldb, 0.f, S.data(), ldc);
  for (size_t i = 0; i < c.M; ++i)
    for (size_t j = 0; j < c.N; ++j) {
      INFO("M=" << c.M << " N=" << c.N << " K=" << c.K << " ta=" << c.ta << " tb=" << c.tb
                << " alpha=" << c.alpha << " beta=" << c.beta << " pad=" << c.pad << " threads="
                << num_threads() << " native=" << (gemm::bf16_kernel() == gemm::Bf16Kernel::Native)
                << " at (" << i << "," << j << ")");
      const size_t at = i * ldc + j;
      const double tol = 1e-5 * S[at] + 1e-6 * std::fabs(R[at]) + 1e-7;
      REQUIRE(std::fabs(double(C[at]) - double(R[at])) <= tol);
    }
  for (size_t i = 0; i < c.M; ++i)  // padding columns untouched
    for (size_t j = c.N; j < ldc; ++j)
      if (c.beta != 0.f) REQUIRE(C[i * ldc + j] == R[i * ldc + j]);
}

}  // namespace

TEST_CASE("sgemm_bf16 matches a double product of the rounded inputs on odd shapes", "[gemm][bf16]") {
  Restore restore;
  const std::vector<std::tuple<size_t, size_t, size_t>> shapes = {
      {1, 1, 1},    {1, 7, 31},  {7, 1, 33},   {31, 33, 7},  {33, 65, 130},
      {65, 31, 257}, {130, 7, 65}, {257, 33, 1}, {15, 130, 33}, {3, 257, 2}};
  for (auto kernel : kernels_here()) {
    gemm::set_bf16_kernel(kernel);
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      for (const auto& shape : shapes)
        for (bool ta : {false, true})
          for (bool tb : {false, true})
            check_bf16({std::get<0>(shape), std::get<1>(shape), std::get<2>(shape), ta, tb, 1.f, 0.f, 0});
    }
  }
}

TEST_CASE("sgemm_bf16 alpha, beta and padded leading dimensions", "[gemm][bf16]") {
  Restore restore;
  for (auto kernel : kernels_here()) {
    gemm::set_bf16_kernel(kernel);
    for (float beta : {0.f, 1.f, -0.5f})
      for (bool ta : {false, true})
        for (bool tb : {false, true}) check_bf16({37, 45, 61, ta, tb, 1.5f, beta, 3});
    check_bf16({20, 33, 9, false, false, -2.f, 0.25f, 1});
  }
}

TEST_CASE("sgemm_bf16 across cache-block boundaries, threaded", "[gemm][bf16]") {
  Restore restore;
  set_num_threads(2);
  for (auto kernel : kernels_here()) {
    gemm::set_bf16_kernel(kernel);
    check_bf16({115, 1030, 1539, false, true, 1.f, 0.f, 0});  // crosses MC, NC and (odd) KC
    check_bf16({120, 70, 801, true, false, 1.f, 1.f, 2});
    check_bf16({40, 9000, 300, false, true, 1.f, 0.f, 0});  // few rows: column ranges per thread
    check_bf16({150, 257, 1600, true, false, 1.f, 0.5f, 0});
  }
}

TEST_CASE("sgemm_bf16 with few rows gives one thread's bits on two", "[gemm][bf16]") {
  Restore restore;
  const size_t M = 40, N = 9000, K = 300;
  const auto A = random_vec(M * K, 31), B = random_vec(N * K, 32);
  for (auto kernel : kernels_here()) {
    gemm::set_bf16_kernel(kernel);
    std::vector<float> by_thread[2];
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      by_thread[threads - 1].assign(M * N, 1.f);
      gemm::sgemm_bf16(false, true, M, N, K, 1.f, A.data(), K, B.data(), K, 0.5f, by_thread[threads - 1].data(), N);
    }
    INFO("native=" << (kernel == gemm::Bf16Kernel::Native));
    REQUIRE(by_thread[0] == by_thread[1]);
  }
}

// Both paths round A's and B's panels as they are packed (SIMD lanes, and a scalar tail where a
// panel's size is not a whole number of vectors): every value as float_to_bf16 rounds it, except
// that the native kernel flushes subnormal inputs to zero (vcvtne2ps2bf16, vdpbf16ps). Each
// operand layout goes through its own packer: A and B, k or rows contiguous.
TEST_CASE("sgemm_bf16 rounds as float_to_bf16: ties to even, NaN, infinities, subnormals", "[gemm][bf16]") {
  Restore restore;
  set_num_threads(1);
  auto from_bits = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  const std::vector<float> special = {
      from_bits(0x3f808000u), from_bits(0x3f818000u),  // ties: to the even 0x3f80, and up to 0x3f82
      from_bits(0x3f80ffffu), from_bits(0xbf808001u),  // just under and just over a tie
      from_bits(0x7f7fffffu), from_bits(0xff7fffffu),  // the largest floats round to infinities
      1e-40f, -3e-39f,                                 // subnormals
      INFINITY, -INFINITY, from_bits(0x7fc00001u), from_bits(0xff800001u),  // a NaN; a signalling one
      3.14159265f, -2.5e-3f, 65504.f, 1e30f, from_bits(0x00800000u)};
  const size_t n = special.size();
  const std::vector<float> one = {1.f};
  for (auto kernel : kernels_here()) {
    gemm::set_bf16_kernel(kernel);
    const bool native = kernel == gemm::Bf16Kernel::Native;
    for (bool b_side : {true, false})
      for (bool trans : {false, true}) {
        // b_side: C (1 x n) = 1 * op(B), B's n specials; else C (n x 1) = op(A) * 1, A's n specials.
        // A 1 x n or n x 1 operand's leading dimension is n or 1.
        const size_t M = b_side ? 1 : n, N = b_side ? n : 1;
        const size_t lda = b_side ? 1 : (trans ? n : 1), ldb = b_side ? (trans ? 1 : n) : 1;
        std::vector<float> C(n, 7.f);
        gemm::sgemm_bf16(!b_side && trans, b_side && trans, M, N, 1, 1.f, b_side ? one.data() : special.data(), lda,
                         b_side ? special.data() : one.data(), ldb, 0.f, C.data(), N);
        for (size_t i = 0; i < n; ++i) {
          const bool subnormal = std::fpclassify(special[i]) == FP_SUBNORMAL;
          const float want = native && subnormal ? 0.f : bf16_to_float(float_to_bf16(special[i]));
          INFO("native " << native << ", B side " << b_side << ", transposed " << trans << ", value " << i << " = "
                         << special[i]);
          if (std::isnan(want)) CHECK(std::isnan(C[i]));
          else CHECK(C[i] == want);
        }
      }
  }
}

TEST_CASE("sgemm_bf16 with K == 0 scales C by beta", "[gemm][bf16]") {
  Restore restore;
  for (auto kernel : kernels_here()) {
    gemm::set_bf16_kernel(kernel);
    std::vector<float> C = {1, 2, 3, 4};
    gemm::sgemm_bf16(false, false, 2, 2, 0, 1.f, nullptr, 1, static_cast<const float*>(nullptr), 2,
                     0.5f, C.data(), 2);
    CHECK(C == std::vector<float>{0.5f, 1, 1.5f, 2});
  }
}

TEST_CASE("sgemm_bf16 with bf16 B equals the float-B call bit for bit", "[gemm][bf16]") {
  Restore restore;
  for (auto kernel : kernels_here()) {
    gemm::set_bf16_kernel(kernel);
    const std::array<size_t, 3> shapes[] = {{29, 70, 97}, {130, 1124, 801}};  // the second past NC and KC
    for (int threads : {1, 2})
      for (const auto& [M, N, K] : shapes)
        for (bool ta : {false, true})
          for (bool tb : {false, true}) {
            set_num_threads(threads);
            const size_t pad = 2;
            const size_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad;
            const auto A = random_vec((ta ? K : M) * lda, 21), B = random_vec((tb ? N : K) * ldb, 22);
            std::vector<uint16_t> B16(B.size());
            for (size_t i = 0; i < B.size(); ++i) B16[i] = float_to_bf16(B[i]);
            std::vector<float> C(M * N), C16(M * N);
            gemm::sgemm_bf16(ta, tb, M, N, K, 1.f, A.data(), lda, B.data(), ldb, 0.f, C.data(), N);
            gemm::sgemm_bf16(ta, tb, M, N, K, 1.f, A.data(), lda, B16.data(), ldb, 0.f, C16.data(), N);
            INFO("M=" << M << " ta=" << ta << " tb=" << tb << " threads=" << threads);
            REQUIRE(C == C16);
          }
  }
}

TEST_CASE("sgemm_packed on a bf16 PackedB equals sgemm_bf16 bit for bit", "[gemm][bf16]") {
  Restore restore;
  for (auto kernel : kernels_here()) {
    gemm::set_bf16_kernel(kernel);
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      for (size_t M : {130, 240})  // column groups, and row blocks
        for (bool ta : {false, true})
          for (bool tb : {false, true}) {
            const size_t N = 1124, K = 801, pad = 2;  // N past NC, K past KC (odd)
            const size_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad;
            const auto A = random_vec((ta ? K : M) * lda, 41), B = random_vec((tb ? N : K) * ldb, 42);
            const gemm::PackedB packed = gemm::PackedB::bf16(tb, K, N, B.data(), ldb);
            CHECK(packed.is_bf16());
            std::vector<float> C(M * N, 1.f), R(M * N, 1.f);
            gemm::sgemm_packed(ta, M, 1.f, A.data(), lda, packed, 0.5f, C.data(), N);
            gemm::sgemm_bf16(ta, tb, M, N, K, 1.f, A.data(), lda, B.data(), ldb, 0.5f, R.data(), N);
            INFO("M=" << M << " ta=" << ta << " tb=" << tb << " threads=" << threads
                       << " native=" << (kernel == gemm::Bf16Kernel::Native));
            REQUIRE(C == R);
          }
    }
  }
}

TEST_CASE("sgemm_bf16 with a bias and an activation gives the bits of the passes after the call", "[gemm][bf16]") {
  Restore restore;
  for (auto kernel : kernels_here()) {
    gemm::set_bf16_kernel(kernel);
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      // partial tiles (4- and 8-row kernels at M = 18 and 22); past NC and KC (the bias once,
      // after both blocks); few rows; shared B blocks (226, 240 rows); K == 0. alpha != 1, so a
      // multiply fused into the bias add would show. The runs with beta != 0 add a GELU after the
      // bias (once, after the last K block), as a feed-forward's first linear does.
      for (auto [M, N, K] : std::vector<std::tuple<size_t, size_t, size_t>>{
               {29, 70, 97}, {18, 70, 97}, {22, 70, 97}, {130, 1124, 801}, {40, 9000, 300},
               {226, 33, 800}, {240, 1124, 70}, {3, 5, 0}})
        for (bool ta : {false, true})
          for (bool tb : {false, true})
            for (float beta : {0.f, 0.5f}) {
              const size_t lda = ta ? M : K, ldb = tb ? K : N, ldc = N + 3;
              const auto A = random_vec((ta ? K : M) * lda + 1, 51), B = random_vec((tb ? N : K) * ldb + 1, 52);
              const auto bias = random_vec(N, 53);
              const auto activation = beta != 0.f ? std::optional{vec::Unary::Gelu} : std::nullopt;
              const gemm::Epilogue epilogue{bias.data(), activation};
              auto C = random_vec(M * ldc, 54), R = C, P = C;
              gemm::sgemm_bf16(ta, tb, M, N, K, 1.5f, A.data(), lda, B.data(), ldb, beta, C.data(), ldc, epilogue);
              gemm::sgemm_bf16(ta, tb, M, N, K, 1.5f, A.data(), lda, B.data(), ldb, beta, R.data(), ldc);
              epilogue_after(R, M, N, ldc, bias, activation);
              const gemm::PackedB packed = gemm::PackedB::bf16(tb, K, N, B.data(), ldb);
              gemm::sgemm_packed(ta, M, 1.5f, A.data(), lda, packed, beta, P.data(), ldc, epilogue);
              INFO("M=" << M << " N=" << N << " K=" << K << " ta=" << ta << " tb=" << tb << " beta=" << beta
                        << " threads=" << threads << " native=" << (kernel == gemm::Bf16Kernel::Native));
              REQUIRE(C == R);
              REQUIRE(P == R);
            }
    }
  }
}

// bf16 keeps 8 significant bits: each input is within 2^-9 relative of its fp32 value, so each
// product within 2^-8 (+2^-18), and |bf16 result - fp32 result| <= 2^-8 * sum |a||b| (plus the
// fp32 summation error). The rounding must show: the results differ somewhere.
TEST_CASE("sgemm_bf16 is within the bf16 rounding bound of fp32 sgemm", "[gemm][bf16]") {
  Restore restore;
  const size_t M = 64, N = 96, K = 768;
  const auto A = random_vec(M * K, 31), B = random_vec(K * N, 32);
  std::vector<float> C32(M * N), S(M * N);
  gemm::sgemm(false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, C32.data(), N);
  gemm::sgemm_reference(false, false, M, N, K, 1.f, absolute(A).data(), K, absolute(B).data(), N,
                        0.f, S.data(), N);
  for (auto kernel : kernels_here()) {
    gemm::set_bf16_kernel(kernel);
    std::vector<float> C16(M * N);
    gemm::sgemm_bf16(false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, C16.data(), N);
    double max_diff = 0;
    for (size_t i = 0; i < M * N; ++i) {
      const double diff = std::fabs(double(C16[i]) - double(C32[i]));
      REQUIRE(diff <= std::ldexp(1.0, -8) * 1.01 * S[i] + 1e-5);
      max_diff = std::max(max_diff, diff);
    }
    CHECK(max_diff > 0);
  }
}

TEST_CASE("the bf16 path switch refuses the native kernel where the CPU lacks it", "[gemm][bf16]") {
  Restore restore;
  gemm::set_bf16_kernel(gemm::Bf16Kernel::Fallback);
  CHECK(gemm::bf16_kernel() == gemm::Bf16Kernel::Fallback);
  if (gemm::bf16_native_available()) {
    gemm::set_bf16_kernel(gemm::Bf16Kernel::Native);
    CHECK(gemm::bf16_kernel() == gemm::Bf16Kernel::Native);
  } else {
    CHECK_THROWS_AS(gemm::set_bf16_kernel(gemm::Bf16Kernel::Native), std::invalid_argument);
  }
}

namespace {
std::vector<float> values(const Tensor& t) {
  const Tensor c = t.contiguous();
  return std::vector<float>(c.data(), c.data() + c.numel());
}

// C = op(A) op(B) for row-major A (M x K, or K x M when ta) and B (K x N), in double; also the
// sum of |products| per element, which bounds the effect of rounding the operands.
struct Product {
  std::vector<double> value, magnitude;
};
Product product(bool ta, size_t M, size_t N, size_t K, const std::vector<float>& A, const std::vector<float>& B) {
  Product p{std::vector<double>(M * N), std::vector<double>(M * N)};
  for (size_t i = 0; i < M; ++i)
    for (size_t j = 0; j < N; ++j)
      for (size_t k = 0; k < K; ++k) {
        const double t = double(ta ? A[k * M + i] : A[i * K + k]) * double(B[k * N + j]);
        p.value[i * N + j] += t;
        p.magnitude[i * N + j] += std::fabs(t);
      }
  return p;
}
std::vector<float> transposed(const std::vector<float>& v, size_t rows, size_t cols) {
  std::vector<float> out(v.size());
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) out[c * rows + r] = v[r * cols + c];
  return out;
}
// |got - want| within rel x the products' magnitude (plus a floor) everywhere; the worst ratio.
double worst_ratio(const std::vector<float>& got, const std::vector<double>& want, const std::vector<double>& magnitude) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(double(got[i]) - want[i]) / (magnitude[i] + 1e-30));
  return worst;
}

// linear(x, w, b) with gradients on, its output and the gradients of x and w for the upstream
// gradient g (backward of sum(out * g)).
struct LinearResult {
  std::vector<float> out, gx, gw;
};
LinearResult run_linear(const std::vector<float>& xv, const std::vector<float>& wv, const std::vector<float>& gv, size_t M,
                        size_t N, size_t K) {
  Tensor x = Tensor::from_vector(xv, {M, K}), w = Tensor::from_vector(wv, {N, K});
  x.requires_grad_(true);
  w.requires_grad_(true);
  const Tensor out = linear(x, w, Tensor());
  out.backward(Tensor::from_vector(gv, {M, N}));
  return {values(out), values(x.grad()), values(w.grad())};
}
}  // namespace

// Mixed-precision training: at BF16, linear() runs its forward GEMM and both backward GEMMs on
// bf16-rounded operands with fp32 sums, with gradients on too; matmul() only without gradients.
TEST_CASE("matmul precision bf16: linear forward and both gradients on bf16 operands, matmul only without gradients",
          "[gemm][bf16]") {
  Restore restore;
  const size_t M = 9, K = 40, N = 17;
  const auto xv = random_vec(M * K, 41), wv = random_vec(N * K, 42), gv = random_vec(M * N, 43);
  const auto xr = rounded(xv), wr = rounded(wv), gr = rounded(gv);
  // out = x w^T, gx = g w, gw = g^T x: from the bf16-rounded operands, and from the fp32 ones
  const Product out16 = product(false, M, N, K, xr, transposed(wr, N, K)), out32 = product(false, M, N, K, xv, transposed(wv, N, K));
  const Product gx16 = product(false, M, K, N, gr, wr), gx32 = product(false, M, K, N, gv, wv);
  const Product gw16 = product(true, N, K, M, gr, xr), gw32 = product(true, N, K, M, gv, xv);
  for (const auto kernel : kernels_here()) {
    gemm::set_bf16_kernel(kernel);
    CAPTURE(gemm::bf16_kernel() == gemm::Bf16Kernel::Native);
    MatmulPrecisionGuard bf16(MatmulPrecision::BF16);
    const LinearResult r = run_linear(xv, wv, gv, M, N, K);
    // equal to the rounded operands' product up to fp32 summation
    CHECK(worst_ratio(r.out, out16.value, out16.magnitude) < 1e-5);
    CHECK(worst_ratio(r.gx, gx16.value, gx16.magnitude) < 1e-5);
    CHECK(worst_ratio(r.gw, gw16.value, gw16.magnitude) < 1e-5);
    // close to fp32: rounding each operand to bf16 moves a product by at most 2 x 2^-9 of it
    CHECK(worst_ratio(r.out, out32.value, out32.magnitude) < 2.0 * std::ldexp(1.0, -9) + 1e-5);
    CHECK(worst_ratio(r.gx, gx32.value, gx32.magnitude) < 2.0 * std::ldexp(1.0, -9) + 1e-5);
    CHECK(worst_ratio(r.gw, gw32.value, gw32.magnitude) < 2.0 * std::ldexp(1.0, -9) + 1e-5);
    // and not fp32 (the switch took effect)
    CHECK(worst_ratio(r.out, out32.value, out32.magnitude) > 1e-5);
    CHECK(worst_ratio(r.gw, gw32.value, gw32.magnitude) > 1e-5);
  }
  // FP32: bit-identical to sgemm, as before the switch existed
  std::vector<float> out(M * N), gx(M * K), gw(N * K);
  gemm::sgemm(false, true, M, N, K, 1.f, xv.data(), K, wv.data(), K, 0.f, out.data(), N);
  gemm::sgemm(false, false, M, K, N, 1.f, gv.data(), N, wv.data(), K, 0.f, gx.data(), K);
  gemm::sgemm(true, false, N, K, M, 1.f, gv.data(), N, xv.data(), K, 0.f, gw.data(), K);
  const LinearResult r32 = run_linear(xv, wv, gv, M, N, K);
  CHECK(r32.out == out);
  CHECK(r32.gx == gx);
  CHECK(r32.gw == gw);
  // the backward follows the precision its forward ran at
  {
    Tensor x = Tensor::from_vector(xv, {M, K});
    x.requires_grad_(true);
    Tensor y;
    {
      MatmulPrecisionGuard bf16(MatmulPrecision::BF16);
      y = linear(x, Tensor::from_vector(wv, {N, K}), Tensor());
    }
    y.backward(Tensor::from_vector(gv, {M, N}));
    CHECK(worst_ratio(values(x.grad()), gx16.value, gx16.magnitude) < 1e-5);
  }
  // matmul(): bf16 only without gradients; with them, forward and backward stay fp32
  const Tensor x = Tensor::from_vector(xv, {M, K}), w = Tensor::from_vector(wv, {N, K});
  std::vector<float> want16(M * N);
  gemm::sgemm_bf16(false, true, M, N, K, 1.f, xv.data(), K, wv.data(), K, 0.f, want16.data(), N);
  REQUIRE(out != want16);
  MatmulPrecisionGuard bf16(MatmulPrecision::BF16);
  CHECK(values(linear(x, w, Tensor())) == want16);
  {
    Tensor xg = Tensor::from_vector(xv, {M, K});
    xg.requires_grad_(true);
    const Tensor y = matmul(xg, w, false, true);
    CHECK(values(y) == out);
    y.backward(Tensor::from_vector(gv, {M, N}));
    CHECK(values(xg.grad()) == gx);
  }
  {
    NoGradGuard no_grad;
    CHECK(values(linear(x, w, Tensor())) == want16);
    CHECK(values(matmul(x, w, false, true)) == want16);
    MatmulPrecisionGuard fp32(MatmulPrecision::FP32);
    CHECK(values(linear(x, w, Tensor())) == out);
  }
  CHECK(matmul_precision_from_name("bf16") == MatmulPrecision::BF16);
  CHECK_THROWS_WITH(matmul_precision_from_name("fp8"), Catch::Contains("'fp8'"));
}
