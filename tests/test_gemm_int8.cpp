// The int8 GEMM of dynamic quantization on both paths (the AVX512-VNNI kernel where this CPU has
// it, and the portable loop): exact int32 sums against the scalar loop, the quantizers' round
// trips, the dequantizing epilogue against a double-precision product of the dequantized
// operands, and a model run at INT8 against fp32.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "autograd/engine.hpp"
#include "autograd/kernels/gemm.hpp"
#include "autograd/kernels/quantize.hpp"
#include "autograd/kernels/vec.hpp"
#include "autograd/parallel.hpp"
#include "autograd/precision.hpp"
#include "models/bert/bert.hpp"
#include "nn/packed_weights.hpp"
#include "tests/epilogue_after.hpp"
#include "tests/random_values.hpp"
#include "tests/thread_count.hpp"
#include "util/random.hpp"

using namespace xg;

namespace {

std::vector<gemm::Int8Kernel> kernels_here() {
  if (gemm::int8_vnni_available()) return {gemm::Int8Kernel::Vnni, gemm::Int8Kernel::Fallback};
  return {gemm::Int8Kernel::Fallback};
}

// Restores the thread count and the int8 path a test changed.
struct Restore {
  RestoreThreads threads;
  gemm::Int8Kernel kernel = gemm::int8_kernel();
  ~Restore() { gemm::set_int8_kernel(kernel); }
};

struct GemmSize {
  size_t M, N, K;
};
// Tails of every kind: rows past a 12-row panel, columns past a 32-column panel, K not a multiple
// of 4; and sizes that take each threaded split: columns (few rows), rows (many rows: each thread
// quantizes its own), and one thread (small products).
const GemmSize kShapes[] = {{1, 1, 1},     {5, 7, 3},     {12, 32, 4},  {13, 33, 9},   {25, 65, 130},
                            {130, 70, 771}, {3, 300, 64}, {200, 2, 40}, {301, 70, 130}, {397, 33, 771}};

}  // namespace

TEST_CASE("igemm_u8s8 sums exactly as the scalar loop, on every path and thread count", "[gemm][int8]") {
  Restore restore;
  for (const gemm::Int8Kernel kernel : kernels_here())
    for (const int threads : {1, 2, 3})
      for (const GemmSize& s : kShapes) {
        gemm::set_int8_kernel(kernel);
        set_num_threads(threads);
        const size_t lda = s.K + 3, ldb = s.K + 1, ldc = s.N + 2;
        Generator g(s.M * 7 + s.N * 3 + s.K);
        std::vector<uint8_t> A(s.M * lda);
        std::vector<int8_t> B(s.N * ldb);
        for (auto& a : A) a = uint8_t(g.below(256));  // the whole range, 255 included
        for (auto& b : B) b = int8_t(int(g.below(256)) - 128);  // -128 too: the kernel takes any int8
        std::vector<int32_t> C(s.M * ldc, -7), R(s.M * ldc, -7);
        gemm::igemm_u8s8(s.M, s.N, s.K, A.data(), lda, B.data(), ldb, C.data(), ldc);
        gemm::igemm_u8s8_reference(s.M, s.N, s.K, A.data(), lda, B.data(), ldb, R.data(), ldc);
        INFO("M=" << s.M << " N=" << s.N << " K=" << s.K << " threads=" << threads
                  << " vnni=" << (kernel == gemm::Int8Kernel::Vnni));
        CHECK(C == R);  // padding columns of C (ldc > N) untouched: -7 on both sides
      }
}

TEST_CASE("igemm_u8s8 at the extremes: 255 x -128 over a long K does not saturate", "[gemm][int8]") {
  Restore restore;
  for (const gemm::Int8Kernel kernel : kernels_here()) {
    gemm::set_int8_kernel(kernel);
    const size_t M = 3, N = 40, K = 4099;
    std::vector<uint8_t> A(M * K, 255);
    std::vector<int8_t> B(N * K, -128);
    for (size_t k = 0; k < K; ++k) B[K + k] = 127;  // column 1 positive
    std::vector<int32_t> C(M * N);
    gemm::igemm_u8s8(M, N, K, A.data(), K, B.data(), K, C.data(), N);
    CHECK(C[0] == -255 * 128 * int32_t(K));
    CHECK(C[1] == 255 * 127 * int32_t(K));
  }
  // a depth whose sums could overflow int32 is refused, not wrapped
  CHECK_THROWS_WITH(gemm::igemm_u8s8(1, 1, 65794, nullptr, 65794, nullptr, 65794, nullptr, 1), Catch::Contains("65794"));
  CHECK_THROWS_WITH(gemm::PackedB::int8(false, 65794, 1, nullptr, 1), Catch::Contains("exceeds 65793"));
}

TEST_CASE("quantize_row_u8 round-trips within half a step, keeps zero exact and marks non-finite rows", "[int8]") {
  const auto x = random_vec(1000, 3, -2.f, 5.f);
  std::vector<uint8_t> q(x.size());
  const gemm::RowQuantization rq = gemm::quantize_row_u8(x.data(), x.size(), q.data());
  REQUIRE(rq.scale > 0.f);
  CHECK(rq.scale == Approx(7.f / 255.f).epsilon(0.01));
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("i=" << i << " x=" << x[i] << " q=" << int(q[i]));
    CHECK(std::fabs(rq.scale * float(int(q[i]) - rq.zero_point) - x[i]) <= 0.5f * rq.scale * 1.0001f);
  }
  const float zero = 0.f;
  uint8_t qz = 0;
  std::vector<float> with_zero = x;
  with_zero[17] = 0.f;
  std::vector<uint8_t> q2(x.size());
  const gemm::RowQuantization r2 = gemm::quantize_row_u8(with_zero.data(), with_zero.size(), q2.data());
  CHECK(int(q2[17]) == r2.zero_point);  // zero is exactly representable
  // all zero; one sign only (the range widened to hold zero)
  CHECK(gemm::quantize_row_u8(&zero, 1, &qz).scale == 1.f);
  CHECK(qz == 0);
  const std::vector<float> positive{0.5f, 1.f, 2.f}, negative{-0.5f, -1.f, -2.f};
  std::vector<uint8_t> q3(3);
  CHECK(gemm::quantize_row_u8(positive.data(), 3, q3.data()).zero_point == 0);
  CHECK(q3[2] == 255);
  CHECK(gemm::quantize_row_u8(negative.data(), 3, q3.data()).zero_point == 255);
  CHECK(q3[2] == 0);
  // NaN or infinity: a NaN scale, so the row's outputs come out NaN (fp32 would give NaN, or an
  // infinity for an infinite input; never a finite value here)
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    std::vector<float> row{1.f, bad, -1.f};
    CHECK(std::isnan(gemm::quantize_row_u8(row.data(), 3, q3.data()).scale));
  }
  // a range too narrow for a finite 1 / scale counts as zeros; one wider than a float holds still
  // gets a finite scale
  const std::vector<float> tiny{1e-38f, -1e-38f, 0.f}, huge{3e38f, -3e38f, 1.f};
  const gemm::RowQuantization t = gemm::quantize_row_u8(tiny.data(), 3, q3.data());
  CHECK(t.scale == 1.f);
  CHECK(t.zero_point == 0);
  CHECK(q3 == std::vector<uint8_t>{0, 0, 0});
  const gemm::RowQuantization h = gemm::quantize_row_u8(huge.data(), 3, q3.data());
  REQUIRE(std::isfinite(h.scale));
  for (size_t i = 0; i < 3; ++i) CHECK(std::fabs(h.scale * float(int(q3[i]) - h.zero_point) - huge[i]) <= 0.5001f * h.scale);
  std::vector<int8_t> qt(3, 5);
  CHECK(gemm::quantize_channel_s8(tiny.data(), 3, 1, qt.data()) == 1.f);
  CHECK(qt == std::vector<int8_t>{0, 0, 0});
}

TEST_CASE("quantize_channel_s8 round-trips within half a step and refuses non-finite weights", "[int8]") {
  const auto w = random_vec(300, 4, -0.3f, 0.2f);
  std::vector<int8_t> q(100);
  const float scale = gemm::quantize_channel_s8(w.data() + 1, 100, 3, q.data());  // every third value
  float amax = 0.f;
  for (size_t i = 0; i < 100; ++i) amax = std::max(amax, std::fabs(w[1 + 3 * i]));
  CHECK(scale == Approx(amax / 127.f));
  bool extreme = false;
  for (size_t i = 0; i < 100; ++i) {
    CHECK(std::fabs(scale * float(q[i]) - w[1 + 3 * i]) <= 0.5f * scale * 1.0001f);
    CHECK(q[i] >= -127);
    extreme = extreme || std::abs(int(q[i])) == 127;
  }
  CHECK(extreme);
  const std::vector<float> zeros(5, 0.f);
  CHECK(gemm::quantize_channel_s8(zeros.data(), 5, 1, q.data()) == 1.f);
  std::vector<float> bad(6, 0.1f);
  bad[4] = std::numeric_limits<float>::infinity();
  // column 1 of a 3 x 2 op(B) (stored K x N) holds the infinity
  CHECK_THROWS_WITH(gemm::PackedB::int8(false, 3, 2, bad.data(), 2),
                    Catch::Contains("output channel 0") && Catch::Contains("inf"));
  CHECK_THROWS_WITH(gemm::PackedB::int8(true, 3, 2, bad.data(), 3), Catch::Contains("output channel 1"));
  CHECK_THROWS_WITH(gemm::quantize_channel_s8(bad.data() + 3, 3, 1, q.data()), Catch::Contains("[quantize_channel_s8]") && Catch::Contains("input 1"));
}

namespace {

// C = act(alpha * dequant(A) dequant(B) + beta * C + bias) in double, from the quantizers' output.
std::vector<float> int8_reference(bool ta, bool tb, size_t M, size_t N, size_t K, float alpha, const std::vector<float>& A,
                                  size_t lda, const std::vector<float>& B, size_t ldb, float beta, std::vector<float> C,
                                  size_t ldc, const std::vector<float>& bias, std::optional<vec::Unary> act) {
  std::vector<float> a(K), b(K), arow(M * K), bcol(N * K);
  std::vector<uint8_t> qa(K);
  std::vector<int8_t> qb(K);
  for (size_t i = 0; i < M; ++i) {
    for (size_t k = 0; k < K; ++k) a[k] = ta ? A[k * lda + i] : A[i * lda + k];
    const gemm::RowQuantization rq = gemm::quantize_row_u8(a.data(), K, qa.data());
    for (size_t k = 0; k < K; ++k) arow[i * K + k] = rq.scale * float(int(qa[k]) - rq.zero_point);
  }
  for (size_t j = 0; j < N; ++j) {
    const float s = gemm::quantize_channel_s8(tb ? B.data() + j * ldb : B.data() + j, K, tb ? 1 : ldb, qb.data());
    for (size_t k = 0; k < K; ++k) bcol[j * K + k] = s * float(qb[k]);
  }
  for (size_t i = 0; i < M; ++i)
    for (size_t j = 0; j < N; ++j) {
      double sum = 0;
      for (size_t k = 0; k < K; ++k) sum += double(arow[i * K + k]) * double(bcol[j * K + k]);
      float& c = C[i * ldc + j];
      c = float(alpha * sum + (beta != 0.f ? double(beta) * c : 0.0));
    }
  epilogue_after(C, M, N, ldc, bias, act);
  return C;
}

}  // namespace

TEST_CASE("sgemm_packed on an int8 PackedB is the product of the dequantized operands", "[gemm][int8]") {
  Restore restore;
  for (const gemm::Int8Kernel kernel : kernels_here())
    for (const int threads : {1, 2})
      for (const GemmSize& s : kShapes)
        for (const bool ta : {false, true})
          for (const bool tb : {false, true})
            for (const float beta : {0.f, 0.5f}) {
              gemm::set_int8_kernel(kernel);
              set_num_threads(threads);
              const size_t lda = (ta ? s.M : s.K) + 1, ldb = (tb ? s.K : s.N) + 2, ldc = s.N + 1;
              const auto A = random_vec((ta ? s.K : s.M) * lda, 21, -1.f, 2.f), B = random_vec((tb ? s.N : s.K) * ldb, 22);
              const auto bias = random_vec(s.N, 23);
              auto C = random_vec(s.M * ldc, 24);
              if (beta == 0.f) std::fill(C.begin(), C.end(), NAN);  // beta == 0 ignores old C
              const std::optional<vec::Unary> act = beta == 0.f ? std::optional(vec::Unary::Gelu) : std::nullopt;
              const auto R = int8_reference(ta, tb, s.M, s.N, s.K, 1.5f, A, lda, B, ldb, beta, C, ldc, bias, act);
              const gemm::PackedB packed = gemm::PackedB::int8(tb, s.K, s.N, B.data(), ldb);
              CHECK(packed.is_int8());
              gemm::sgemm_packed(ta, s.M, 1.5f, A.data(), lda, packed, beta, C.data(), ldc, {bias.data(), act});
              double worst = 0;
              for (size_t i = 0; i < s.M; ++i)
                for (size_t j = 0; j < s.N; ++j)
                  worst = std::max(worst, std::fabs(double(C[i * ldc + j]) - R[i * ldc + j]) / (1.0 + std::fabs(R[i * ldc + j])));
              INFO("M=" << s.M << " N=" << s.N << " K=" << s.K << " ta=" << ta << " tb=" << tb << " beta=" << beta
                        << " threads=" << threads << " vnni=" << (kernel == gemm::Int8Kernel::Vnni));
              CHECK(worst < 2e-5);  // float rounding of the dequantization alone
            }
}

TEST_CASE("the int8 GEMM approximates fp32 as dynamic quantization does", "[gemm][int8]") {
  const size_t M = 64, N = 96, K = 768;
  const auto A = random_vec(M * K, 31, -1.f, 1.f), B = random_vec(N * K, 32, -0.05f, 0.05f);
  std::vector<float> C(M * N), F(M * N);
  gemm::sgemm(false, true, M, N, K, 1.f, A.data(), K, B.data(), K, 0.f, F.data(), N);
  gemm::sgemm_packed(false, M, 1.f, A.data(), K, gemm::PackedB::int8(true, K, N, B.data(), K), 0.f, C.data(), N);
  double dot = 0, cc = 0, ff = 0, worst = 0, scale = 0;
  for (size_t i = 0; i < M * N; ++i) {
    dot += double(C[i]) * F[i];
    cc += double(C[i]) * C[i];
    ff += double(F[i]) * F[i];
    worst = std::max(worst, std::fabs(double(C[i]) - F[i]));
    scale = std::max(scale, std::fabs(double(F[i])));
  }
  CHECK(dot / std::sqrt(cc * ff) > 0.9999);
  CHECK(worst < 0.02 * scale);
}

TEST_CASE("a BERT at INT8 runs its linear layers on int8 weights and stays near fp32", "[fused][int8]") {
  models::BertConfig c = models::BertConfig::preset("tiny");
  models::BertModel model(c);
  Generator g(9);
  model.init_weights(g);
  model.eval();
  models::ModelInputs in;
  const size_t B = 2, T = 24;
  std::vector<int64_t> ids(B * T);
  std::vector<float> mask01(B * T, 1.f);
  for (auto& id : ids) id = int64_t(g.below(c.vocab_size));
  for (size_t t = 17; t < T; ++t) mask01[T + t] = 0.f;
  in.input_ids = Tensor::from_ints(ids, {B, T});
  in.attention_mask = Tensor::from_vector(mask01, {B, T});
  auto hidden = [&](bool fused) {
    nn::ExecutionOptions e = model.execution();
    e.fused_inference = fused;
    model.set_execution(e);
    NoGradGuard no_grad;
    return model.forward(in).last_hidden_state.contiguous();
  };
  const Tensor fp32 = hidden(true);
  MatmulPrecisionGuard int8(MatmulPrecision::INT8);
  CHECK(hidden(true).to_vector() == fp32.to_vector());  // INT8 without int8 weights: every GEMM fp32
  nn::InferenceWeights packed(model, MatmulPrecision::INT8);
  nn::Linear& up0 = *model.encoder->layer->operator[](0).intermediate->dense;
  REQUIRE(nn::packed_weight_for(up0) != nullptr);
  CHECK(nn::packed_weight_for(up0)->is_int8());
  CHECK(nn::packed_qkv_for(*model.encoder->layer->operator[](0).attention->self)->is_int8());
  const Tensor fused = hidden(true), recorded = hidden(false);
  const size_t H = fp32.size(2);
  for (size_t row = 0; row < B * T; ++row) {
    if (mask01[row] == 0.f) continue;
    double dot = 0, aa = 0, bb = 0, fr = 0;
    for (size_t h = 0; h < H; ++h) {
      const double a = fused.data()[row * H + h], b = fp32.data()[row * H + h], r = recorded.data()[row * H + h];
      dot += a * b;
      aa += a * a;
      bb += b * b;
      fr = std::max(fr, std::fabs(a - r));
    }
    INFO("row " << row);
    CHECK(dot / std::sqrt(aa * bb) > 0.995);  // int8 against fp32
    CHECK(fr < 1e-2);  // the fused and recorded paths read the same int8 weights
  }
  MatmulPrecisionGuard fp32_again(MatmulPrecision::FP32);
  CHECK(nn::packed_weight_for(up0) == nullptr);  // packed for int8: not read at fp32
}

TEST_CASE("the AVX-512 row quantizer gives the portable one's bytes, scale and zero point", "[int8]") {
  if (!gemm::int8_vnni_available()) return;  // one quantizer only on this CPU
  Restore restore;
  // x quantized on both paths: the same scale, zero point and bytes; returns the AVX-512 one's scale
  auto both_agree = [](const std::vector<float>& x) {
    std::vector<uint8_t> fast(x.size()), portable(x.size());
    gemm::set_int8_kernel(gemm::Int8Kernel::Vnni);
    const gemm::RowQuantization a = gemm::quantize_row_u8(x.data(), x.size(), fast.data());
    gemm::set_int8_kernel(gemm::Int8Kernel::Fallback);
    const gemm::RowQuantization b = gemm::quantize_row_u8(x.data(), x.size(), portable.data());
    CHECK(a.scale == b.scale);
    CHECK(a.zero_point == b.zero_point);
    CHECK(fast == portable);
    return a.scale;
  };
  for (const size_t n : {1, 3, 15, 16, 17, 64, 100, 771}) {
    for (const uint64_t seed : {1, 2, 3}) {
      auto x = random_vec(n, seed * 100 + n, seed == 2 ? 0.f : -3.f, seed == 3 ? 0.f : 2.f);  // one-signed rows too
      if (seed == 1 && n > 5) x[n / 2] = 1.5f / 255.f;  // halfway cases for the rounding
      INFO("n=" << n << " seed=" << seed);
      both_agree(x);
    }
    for (const float edge : {1e-38f, 3e38f}) {  // ranges too narrow for 1 / scale, and wider than a float holds
      std::vector<float> x = random_vec(n, 5, -1.f, 1.f);
      for (float& v : x) v *= edge;  // (random_vec(-edge, edge) would overflow its width of 6e38)
      INFO("n=" << n << " edge=" << edge);
      CHECK(std::isfinite(both_agree(x)));
    }
    std::vector<float> bad = random_vec(n, 9);
    bad[n - 1] = -std::numeric_limits<float>::infinity();
    std::vector<uint8_t> q(n, 7);
    gemm::set_int8_kernel(gemm::Int8Kernel::Vnni);
    CHECK(std::isnan(gemm::quantize_row_u8(bad.data(), n, q.data()).scale));
    CHECK(q == std::vector<uint8_t>(n, 0));
  }
}
