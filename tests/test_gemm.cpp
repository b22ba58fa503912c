// The packed GEMM against the naive triple loop: odd shapes, all transposes, alpha/beta,
// padded leading dimensions, blocks that cross the KC/MC/NC boundaries, 1 and 2 threads.
#include <catch2/catch.hpp>
#include <cmath>
#include <optional>
#include <tuple>
#include <vector>

#include "autograd/kernels/gemm.hpp"
#include "autograd/kernels/vec.hpp"
#include "autograd/parallel.hpp"
#include "tests/epilogue_after.hpp"
#include "tests/random_values.hpp"
#include "tests/thread_count.hpp"
#include "util/random.hpp"

using namespace xg;

namespace {
void check_gemm(size_t M, size_t N, size_t K, bool ta, bool tb, float alpha, float beta, size_t pad) {
  const size_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
  const auto A = random_vec((ta ? K : M) * lda, 1), B = random_vec((tb ? N : K) * ldb, 2);
  auto C = random_vec(M * ldc, 3);
  if (beta == 0.f) std::fill(C.begin(), C.end(), NAN);  // beta == 0 must ignore old C
  auto R = C;
  gemm::sgemm(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
  gemm::sgemm_reference(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, R.data(), ldc);
  const double tol = 1e-5 * std::sqrt(double(K) + 1) + 1e-6;
  for (size_t i = 0; i < M; ++i)
    for (size_t j = 0; j < N; ++j) {
      INFO("M=" << M << " N=" << N << " K=" << K << " ta=" << ta << " tb=" << tb << " alpha="
                << alpha << " beta=" << beta << " at (" << i << "," << j << ")");
      REQUIRE(std::fabs(C[i * ldc + j] - R[i * ldc + j]) <= tol);
    }
  // padding columns untouched
  for (size_t i = 0; i < M; ++i)
    for (size_t j = N; j < ldc; ++j)
      if (beta != 0.f) REQUIRE(C[i * ldc + j] == R[i * ldc + j]);
}
}  // namespace

TEST_CASE("gemm matches the triple loop on odd shapes and every transpose", "[gemm]") {
  RestoreThreads restore;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (auto [M, N, K] : std::vector<std::tuple<size_t, size_t, size_t>>{
             {1, 1, 1}, {1, 33, 7}, {13, 1, 5}, {15, 31, 17}, {29, 47, 300}, {100, 65, 64}, {3, 200, 1}})
      for (bool ta : {false, true})
        for (bool tb : {false, true}) check_gemm(M, N, K, ta, tb, 1.f, 0.f, 0);
  }
}

TEST_CASE("gemm alpha, beta and padded leading dimensions", "[gemm]") {
  for (float beta : {0.f, 1.f, -0.5f})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) check_gemm(37, 45, 61, ta, tb, 1.5f, beta, 3);
}

TEST_CASE("gemm across cache-block boundaries, threaded", "[gemm]") {
  RestoreThreads restore;
  set_num_threads(2);
  check_gemm(350, 2060, 270, false, true, 1.f, 0.f, 0);  // crosses MC, NC and KC
  check_gemm(341, 97, 530, true, false, 1.f, 1.f, 1);
  check_gemm(226, 1100, 40, false, true, 1.f, 0.f, 0);  // 17 row panels: row blocks of unequal size
  check_gemm(128, 1030, 50, false, true, 1.f, 0.f, 0);  // few row panels: column groups past NC
  check_gemm(100, 32, 70, false, true, 1.f, 0.f, 0);    // few row panels, one column panel
}

namespace {
// sgemm and sgemm_packed at 1, 2 and 3 threads, every transpose: each element of C is summed in
// the same order however the work is shared out, so all give one thread's bits.
void check_same_bits_across_threads(size_t M, size_t N, size_t K) {
  RestoreThreads restore;  // also when a REQUIRE below throws
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const size_t lda = ta ? M : K, ldb = tb ? K : N;
      const auto A = random_vec((ta ? K : M) * lda, 21), B = random_vec((tb ? N : K) * ldb, 22);
      const gemm::PackedB packed = gemm::PackedB::fp32(tb, K, N, B.data(), ldb);
      std::vector<float> by_thread[3], packed_by_thread[3];
      for (int threads : {1, 2, 3}) {
        set_num_threads(threads);
        auto& C = by_thread[threads - 1];
        auto& P = packed_by_thread[threads - 1];
        C = random_vec(M * N, 23);
        P = C;
        gemm::sgemm(ta, tb, M, N, K, 1.f, A.data(), lda, B.data(), ldb, 0.5f, C.data(), N);
        gemm::sgemm_packed(ta, M, 1.f, A.data(), lda, packed, 0.5f, P.data(), N);
      }
      INFO("M=" << M << " N=" << N << " K=" << K << " ta=" << ta << " tb=" << tb);
      REQUIRE(by_thread[0] == by_thread[1]);
      REQUIRE(by_thread[0] == by_thread[2]);
      REQUIRE(packed_by_thread[0] == packed_by_thread[1]);
      REQUIRE(packed_by_thread[0] == packed_by_thread[2]);
      REQUIRE(packed_by_thread[0] == by_thread[0]);
    }
}
}  // namespace

// Few rows: each thread takes a range of column panels (of a packed B too, starting inside its
// blocks) and packs its own B; 2 or 3 threads give ranges of unequal size.
TEST_CASE("gemm with few rows: column ranges per thread, the same bits as one thread", "[gemm]") {
  RestoreThreads restore;
  set_num_threads(2);
  check_gemm(40, 9000, 300, false, true, 1.f, 0.f, 0);  // an MLM decoder's shape, scaled down
  // M below 16 row panels on AVX-512 (MR 14) and AVX2 (MR 6); M * N * K above the threading floor
  for (auto [M, N, K] : std::vector<std::tuple<size_t, size_t, size_t>>{{40, 9000, 300}, {60, 257, 1600}, {20, 200, 100}})
    check_same_bits_across_threads(M, N, K);
}

// Short GEMMs read a non-transposed A in place (RowsA) where taller ones, and every transposed A,
// are packed. The same product through a transposed copy of A is packed and summed in the same
// order: the same bits. Across K blocks (K > KC = 768), partial row panels, lda > K, 1-3 threads.
TEST_CASE("gemm reading A in place gives the bits of the packed path", "[gemm]") {
  RestoreThreads restore;
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    for (auto [M, N, K] : std::vector<std::tuple<size_t, size_t, size_t>>{
             {20, 70, 1600}, {7, 300, 2000}, {61, 45, 800}, {1, 9, 1537}})
      for (bool tb : {false, true}) {
        const size_t lda = K + 5, ldb = (tb ? K : N) + 1;
        const auto A = random_vec(M * lda, 61), B = random_vec((tb ? N : K) * ldb, 62);
        std::vector<float> At(K * M);  // A^T, stored K x M
        for (size_t i = 0; i < M; ++i)
          for (size_t k = 0; k < K; ++k) At[k * M + i] = A[i * lda + k];
        auto C = random_vec(M * N, 63), R = C;
        gemm::sgemm(false, tb, M, N, K, 1.5f, A.data(), lda, B.data(), ldb, 0.5f, C.data(), N);
        gemm::sgemm(true, tb, M, N, K, 1.5f, At.data(), M, B.data(), ldb, 0.5f, R.data(), N);
        INFO("M=" << M << " N=" << N << " K=" << K << " tb=" << tb << " threads=" << threads);
        REQUIRE(C == R);
      }
    check_gemm(20, 70, 1600, false, true, 1.5f, 0.5f, 3);  // and against the triple loop
    check_gemm(20, 70, 1600, false, false, 1.f, 0.f, 3);
  }
}

// Many rows: the threads take row blocks, and the last blocks' rows in shrinking pieces down to a
// single row panel, as they free up. With AVX-512's 14-row panels: 352 rows are 26 panels, the
// last of 2 rows (row blocks at 2 and 3 threads); 229 are 17 (row blocks at 2 threads, column
// ranges at 3); 1000 are 72, the last of 6 (many blocks).
TEST_CASE("gemm with many rows: row blocks and a tail of smaller pieces, the same bits as one thread", "[gemm]") {
  for (auto [M, N, K] : std::vector<std::tuple<size_t, size_t, size_t>>{{352, 300, 200}, {229, 70, 90}, {1000, 100, 40}})
    check_same_bits_across_threads(M, N, K);
}

// The bias goes in with the last K block's stores, the activation after them: the full tiles, the
// partial ones, past NC (N = 1030: the activation's scalar tail at each row's end), past KC (once,
// after every block), the few-row column ranges, a packed B, K == 0.
TEST_CASE("gemm with a bias and an activation gives the bits of the passes after the call", "[gemm]") {
  RestoreThreads restore;
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    // M = 18 and 22 end in 4- and 8-row kernels (MR 14)
    for (auto [M, N, K] : std::vector<std::tuple<size_t, size_t, size_t>>{
             {1, 7, 5}, {15, 1030, 1539}, {18, 70, 97}, {22, 70, 97}, {40, 9000, 300}, {226, 33, 800},
             {240, 1124, 70}, {3, 5, 0}})
      for (std::optional<vec::Unary> activation : {std::optional<vec::Unary>{}, std::optional{vec::Unary::Gelu}})
        for (bool ta : {false, true})
          for (bool tb : {false, true})
            for (float beta : {0.f, 0.5f}) {
              const size_t pad = 3, lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
              const auto A = random_vec((ta ? K : M) * lda + 1, 31), B = random_vec((tb ? N : K) * ldb + 1, 32);
              const auto bias = random_vec(N, 33);
              const gemm::Epilogue epilogue{bias.data(), activation};
              auto C = random_vec(M * ldc, 34), R = C, P = C;
              gemm::sgemm(ta, tb, M, N, K, 1.5f, A.data(), lda, B.data(), ldb, beta, C.data(), ldc, epilogue);
              gemm::sgemm(ta, tb, M, N, K, 1.5f, A.data(), lda, B.data(), ldb, beta, R.data(), ldc);
              epilogue_after(R, M, N, ldc, bias, activation);
              const gemm::PackedB packed = gemm::PackedB::fp32(tb, K, N, B.data(), ldb);
              gemm::sgemm_packed(ta, M, 1.5f, A.data(), lda, packed, beta, P.data(), ldc, epilogue);
              INFO("M=" << M << " N=" << N << " K=" << K << " ta=" << ta << " tb=" << tb << " beta=" << beta
                        << " threads=" << threads << " activation=" << (activation ? int(*activation) : -1));
              REQUIRE(C == R);  // the padding columns too: untouched
              REQUIRE(P == R);
            }
  }
}

// Each activation a linear layer takes, on one shape with partial tiles and two K blocks.
TEST_CASE("gemm epilogue: every activation, applied once after the last K block", "[gemm]") {
  const size_t M = 23, N = 45, K = 1000, ldc = N;
  const auto A = random_vec(M * K, 41), B = random_vec(N * K, 42), bias = random_vec(N, 43);
  for (vec::Unary activation : {vec::Unary::Gelu, vec::Unary::GeluTanh, vec::Unary::Relu, vec::Unary::Tanh}) {
    std::vector<float> C(M * N), R(M * N);
    gemm::sgemm(false, true, M, N, K, 1.f, A.data(), K, B.data(), K, 0.f, C.data(), ldc, {bias.data(), activation});
    gemm::sgemm(false, true, M, N, K, 1.f, A.data(), K, B.data(), K, 0.f, R.data(), ldc);
    epilogue_after(R, M, N, ldc, bias, activation);
    INFO("activation " << int(activation));
    REQUIRE(C == R);
  }
}

TEST_CASE("gemm with K == 0 scales C by beta, empty M or N is a no-op", "[gemm]") {
  std::vector<float> C = {1, 2, 3, 4};
  gemm::sgemm(false, false, 2, 2, 0, 1.f, nullptr, 1, nullptr, 2, 0.5f, C.data(), 2);
  CHECK(C == std::vector<float>{0.5f, 1, 1.5f, 2});
  gemm::sgemm(false, false, 0, 2, 3, 1.f, nullptr, 3, nullptr, 2, 0.f, C.data(), 2);
  CHECK(C == std::vector<float>{0.5f, 1, 1.5f, 2});
}

TEST_CASE("batched gemm, including a shared operand (stride 0)", "[gemm]") {
  const size_t batch = 5, M = 9, N = 11, K = 13;
  const auto A = random_vec(batch * M * K, 4), B = random_vec(K * N, 5);
  std::vector<float> C(batch * M * N), R(batch * M * N);
  RestoreThreads restore;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    gemm::sgemm_batched(false, false, batch, M, N, K, 1.f, A.data(), K, M * K, B.data(), N, 0, 0.f,
                        C.data(), N, M * N);
    for (size_t b = 0; b < batch; ++b)
      gemm::sgemm_reference(false, false, M, N, K, 1.f, A.data() + b * M * K, K, B.data(), N, 0.f,
                            R.data() + b * M * N, N);
    for (size_t i = 0; i < C.size(); ++i) REQUIRE(std::fabs(C[i] - R[i]) <= 1e-5);
  }
}

TEST_CASE("sgemm_packed equals sgemm bit for bit", "[gemm]") {
  RestoreThreads restore;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    // K past two KC blocks (odd), N past NC, M from one row to several row blocks
    for (auto [M, N, K] : std::vector<std::tuple<size_t, size_t, size_t>>{
             {1, 7, 5}, {15, 1030, 1539}, {128, 96, 64}, {226, 33, 800}, {240, 1124, 70}})
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          const size_t pad = 3, lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
          const auto A = random_vec((ta ? K : M) * lda, 11), B = random_vec((tb ? N : K) * ldb, 12);
          auto C = random_vec(M * ldc, 13), R = C;
          const gemm::PackedB packed = gemm::PackedB::fp32(tb, K, N, B.data(), ldb);
          CHECK((packed.K() == K && packed.N() == N && !packed.is_bf16()));
          for (float beta : {0.f, 0.5f}) {
            gemm::sgemm_packed(ta, M, 1.5f, A.data(), lda, packed, beta, C.data(), ldc);
            gemm::sgemm(ta, tb, M, N, K, 1.5f, A.data(), lda, B.data(), ldb, beta, R.data(), ldc);
            INFO("M=" << M << " N=" << N << " K=" << K << " ta=" << ta << " tb=" << tb << " threads=" << threads);
            REQUIRE(C == R);
          }
        }
  }
}

TEST_CASE("sgemm_packed with an empty dimension", "[gemm]") {
  const auto B = random_vec(4 * 3, 1);
  std::vector<float> C = {1, 2, 3, 4, 5, 6};
  const gemm::PackedB k0 = gemm::PackedB::fp32(false, 0, 3, nullptr, 3);  // K == 0: C = beta C
  gemm::sgemm_packed(false, 2, 1.f, nullptr, 1, k0, 0.5f, C.data(), 3);
  CHECK(C == std::vector<float>{0.5f, 1, 1.5f, 2, 2.5f, 3});
  const gemm::PackedB b = gemm::PackedB::fp32(false, 4, 3, B.data(), 3);
  gemm::sgemm_packed(false, 0, 1.f, nullptr, 4, b, 0.f, C.data(), 3);  // M == 0: nothing written
  CHECK(C == std::vector<float>{0.5f, 1, 1.5f, 2, 2.5f, 3});
  const gemm::PackedB n0 = gemm::PackedB::fp32(true, 4, 0, nullptr, 4);
  CHECK(n0.N() == 0);
  gemm::sgemm_packed(false, 2, 1.f, B.data(), 4, n0, 0.f, C.data(), 1);
  CHECK(C == std::vector<float>{0.5f, 1, 1.5f, 2, 2.5f, 3});
}
