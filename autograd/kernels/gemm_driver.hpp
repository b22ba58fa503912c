#pragma once
// The Goto/BLIS loop nest shared by the fp32 and bf16 GEMMs (internal to autograd/kernels).
// Loop nest, outermost first:
//   jc: NC columns of C   pc: KC of the inner dimension -> pack B block (KC x NC, shared by the
//   threads; with few rows, each thread packs the columns it computes)
//   ic: MC rows of C -> pack A block (MC x KC, per task; a short GEMM's kernels may read A in
//   place instead)   jr: NR columns   ir: MR rows -> kernel
//   then, after the last K block, the epilogue's activation on the block's rows (Epilogue)
// A kernel set `Kern` supplies the element type of its packed panels (Packed), the blocking
// (MR, NR, KC, MC_MAX, NC), depth(kc) (packed elements per panel row/column: kc, or kc/2
// rounded up for bf16 pairs), pack_a, pack_b and kernel, and kReadsAInPlace (with kernel_rows,
// the kernel on A's rows where they are, when true). Panel ir of a packed A block starts at
// ir * depth(kc), panel jr of a packed B block at jr * depth(kc).
#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <utility>
#include <vector>

#include "autograd/kernels/gemm.hpp"
#include "autograd/kernels/round_up.hpp"
#include "autograd/kernels/vec.hpp"
#include "autograd/parallel.hpp"

namespace xg::gemm::detail {

template <class T>
using PackBuffer = std::vector<T, xsimd::aligned_allocator<T, 64>>;

// One GEMM; B's element type is BElem (float, or uint16_t bf16 for pre-converted weights).
template <class BElem>
struct Problem {
  bool ta, tb;
  size_t M, N, K;
  float alpha;
  const float* A;
  size_t lda;
  const BElem* B;
  size_t ldb;
  float beta;
  float* C;
  size_t ldc;
  Epilogue epilogue = {};  // after the last K block
};

// The epilogue's activation on rows [i0, i0 + rows) x columns [j0, j1) of C, row by row. A row
// segment starts at a multiple of NR, so vec::unary splits it into SIMD batches and a scalar tail
// where a pass over the whole row would: the same bits.
template <class BElem>
void activate(const Problem<BElem>& p, size_t i0, size_t rows, size_t j0, size_t j1) {
  if (!p.epilogue.activation || j0 >= j1) return;
  for (size_t i = i0; i < i0 + rows; ++i) {
    float* row = p.C + i * p.ldc + j0;
    vec::unary(*p.epilogue.activation, row, row, j1 - j0);
  }
}

template <class BElem>
void scale_c(const Problem<BElem>& p) {  // K == 0: C = activation(beta * C + bias)
  const float* bias = p.epilogue.bias;
  for (size_t i = 0; i < p.M; ++i)
    for (size_t j = 0; j < p.N; ++j) {
      float& v = p.C[i * p.ldc + j];
      v = p.beta != 0.f ? p.beta * v : 0.f;
      if (bias) v += bias[j];
    }
  activate(p, 0, p.M, 0, p.N);
}

// Kept per thread between calls: a fresh 3 MB buffer per call costs page faults on every GEMM.
// Keyed on the panel element type, so kernel sets with the same panels (fp32, and the bf16
// fallback's rounded fp32) share them; run() is never re-entered on a thread.
template <class Packed>
PackBuffer<Packed>& a_buffer() {
  thread_local PackBuffer<Packed> buffer;
  return buffer;
}
// This thread's B block: the caller's, which workers read during a threaded call, or (few rows)
// each thread's own. Kept for the thread's life: KC x NC floats (3 MB at fp32) per pool thread.
template <class Packed>
PackBuffer<Packed>& b_buffer() {
  thread_local PackBuffer<Packed> buffer;
  return buffer;
}

// Multiplies the packed B block by rows [i0, i0+mc) x panel columns [jr_begin, jr_end). With
// `a_in_place` (a non-transposed A, and a kernel set with kReadsAInPlace and kernel_rows) the
// kernels read A's rows where they are instead of a packed copy.
template <class Kern, class BElem>
void compute_block(const Problem<BElem>& p, const typename Kern::Packed* bpack, size_t pc, size_t kc, size_t jc,
                   size_t nc, size_t i0, size_t mc, size_t jr_begin, size_t jr_end, float beta, bool a_in_place) {
  constexpr size_t MR = Kern::MR, NR = Kern::NR;
  const size_t depth = Kern::depth(kc);
  const bool last = pc + kc == p.K;  // the epilogue goes with the last K block
  const float* bias = last && p.epilogue.bias ? p.epilogue.bias + jc : nullptr;
  const typename Kern::Packed* apack = nullptr;
  if (!a_in_place) {
    auto& buffer = a_buffer<typename Kern::Packed>();
    buffer.resize(std::max(buffer.size(), round_up(mc, MR) * depth));
    Kern::pack_a(p.ta, p.A, p.lda, i0, mc, pc, kc, buffer.data());
    apack = buffer.data();
  }
  for (size_t jr = jr_begin; jr < jr_end; jr += NR) {
    const size_t nr = std::min(NR, nc - jr);
    for (size_t ir = 0; ir < mc; ir += MR) {
      const size_t mr = std::min(MR, mc - ir);
      float* c = p.C + (i0 + ir) * p.ldc + jc + jr;
      const float* tile_bias = bias ? bias + jr : nullptr;
      if constexpr (Kern::kReadsAInPlace) {
        if (a_in_place) {
          Kern::kernel_rows(kc, p.A + (i0 + ir) * p.lda + pc, p.lda, bpack + jr * depth, c, p.ldc, mr, nr,
                            p.alpha, beta, tile_bias);
          continue;
        }
      }
      Kern::kernel(kc, apack + ir * depth, bpack + jr * depth, c, p.ldc, mr, nr, p.alpha, beta, tile_bias);
    }
  }
  // once per row of the block, whose tiles are still in L1/L2: per tile, a call would run on 16 floats
  if (last) activate(p, i0, mc, jc + jr_begin, jc + std::min(jr_end, nc));
}

// A whole K x N op(B) packed ahead (PackedB): the (jc, pc) blocks run() would pack, jc-major,
// each laid out as pack_b lays out its panels.
template <class Kern>
size_t packed_b_depth(size_t K) {  // packed elements per column over all KC blocks
  return K / Kern::KC * Kern::depth(Kern::KC) + (K % Kern::KC ? Kern::depth(K % Kern::KC) : 0);
}
template <class Kern>
size_t packed_b_size(size_t K, size_t N) {
  return round_up(N, Kern::NR) * packed_b_depth<Kern>(K);
}
template <class Kern>
size_t packed_b_offset(size_t K, size_t N, size_t jc, size_t pc) {
  const size_t nc = std::min(Kern::NC, N - jc);  // every earlier column block is NC wide
  return jc * packed_b_depth<Kern>(K) + round_up(nc, Kern::NR) * (pc / Kern::KC) * Kern::depth(Kern::KC);
}
template <class Kern, class BElem>
void pack_whole_b(bool tb, const BElem* B, size_t ldb, size_t K, size_t N, typename Kern::Packed* out) {
  for (size_t jc = 0; jc < N; jc += Kern::NC) {
    const size_t nc = std::min(Kern::NC, N - jc);
    for (size_t pc = 0; pc < K; pc += Kern::KC)
      Kern::pack_b(tb, B, ldb, pc, std::min(Kern::KC, K - pc), jc, nc, 0, round_up(nc, Kern::NR),
                   out + packed_b_offset<Kern>(K, N, jc, pc));
  }
}

// One GEMM. With threads > 1 the B block is packed cooperatively and the (ic, column group)
// tasks of each block are shared out, or, with few rows, each thread takes a range of column
// panels; with threads == 1 everything runs on this thread.
// `packed_b` (from pack_whole_b) replaces p.B and its packing.
template <class Kern, class BElem>
void run(const Problem<BElem>& p, int threads, const typename Kern::Packed* packed_b = nullptr) {
  constexpr size_t MR = Kern::MR, NR = Kern::NR, KC = Kern::KC, MC_MAX = Kern::MC_MAX,
                   NC = Kern::NC;
  if (p.M == 0 || p.N == 0) return;
  if (p.K == 0) return scale_c(p);
  const size_t T = size_t(std::max(1, threads));
  // Threads share out row blocks when M has enough MR-row panels for whole-panel blocks to split
  // evenly, else column groups of each row block. Row blocks hold at most MC_MAX rows, a multiple
  // of T of them, as even as whole panels allow: rounding each block up to MC_MAX rows instead
  // left M = 1024 as 9 blocks of 112 rows and one of 16, and one thread did 560 rows, the other 464.
  const size_t m_panels = (p.M + MR - 1) / MR;
  // At AVX2's 6-row panels, splitting columns measured faster up to 16 panels per thread: at
  // M = 128 each thread streams its half of B once, where row tasks send every B panel through
  // both threads (BERT-base inference at 1 x 128 +4.5%, mini +3%). AVX-512's 14-row panels keep 8.
  constexpr size_t kSplitPanels = MR >= 8 ? 8 : 16;
  const bool split_rows = m_panels >= kSplitPanels * T;
  // A short GEMM (the column path below) packs each A block once per column block per thread, and
  // an inference linear layer at 1 x 128 spent ~2% of its time there: its kernels read A in place
  // (bench_gemm 128 x 3072 x 768 and 128 x 768 x 3072, packed B: +5%). Tall ones keep packing: level
  // at K = 768, and 3% slower with A's rows 12 KB apart (K = 3072) from a cold cache.
  const bool a_in_place = Kern::kReadsAInPlace && !p.ta && !split_rows;
  size_t m_blocks = (m_panels + MC_MAX / MR - 1) / (MC_MAX / MR);
  if (T > 1 && split_rows) m_blocks = round_up(std::max(m_blocks, T), T);
  // With too few column panels for every thread (a narrow N, which takes the shared path below),
  // more row blocks fill the rest.
  const size_t min_panels = (std::min(NC, p.N) + NR - 1) / NR;
  if (!split_rows) m_blocks = std::max(m_blocks, std::min(m_panels, (T + min_panels - 1) / min_panels));
  auto block_rows = [&](size_t ib) {  // [first row, row count) of row block ib
    const size_t i0 = ib * m_panels / m_blocks * MR;
    return std::make_pair(i0, std::min(p.M, (ib + 1) * m_panels / m_blocks * MR) - i0);
  };

  // Columns [c0, c1) of C (c0 a multiple of NR), every row, on this thread: each B block packed
  // into `own` from c0 on, or the panels of [c0, c1) in packed_b's blocks (which start at
  // multiples of NC).
  auto columns_alone = [&](size_t c0, size_t c1, PackBuffer<typename Kern::Packed>& own) {
    for (size_t jc = packed_b ? c0 / NC * NC : c0; jc < c1; jc += NC) {
      const size_t nc = std::min(NC, (packed_b ? p.N : c1) - jc);
      const size_t jr0 = std::max(c0, jc) - jc, jr1 = std::min(c1, jc + nc) - jc;
      for (size_t pc = 0; pc < p.K; pc += KC) {
        const size_t kc = std::min(KC, p.K - pc);
        const auto* block = packed_b ? packed_b + packed_b_offset<Kern>(p.K, p.N, jc, pc) : own.data();
        if (!packed_b) Kern::pack_b(p.tb, p.B, p.ldb, pc, kc, jc, nc, 0, round_up(nc, NR), own.data());
        for (size_t ib = 0; ib < m_blocks; ++ib) {
          auto [i0, mc] = block_rows(ib);
          compute_block<Kern>(p, block, pc, kc, jc, nc, i0, mc, jr0, jr1, pc == 0 ? p.beta : 1.f, a_in_place);
        }
      }
    }
  };
  const auto reserve_b = [&](PackBuffer<typename Kern::Packed>& buffer) {
    if (!packed_b) buffer.resize(std::max(buffer.size(), round_up(std::min(NC, p.N), NR) * Kern::depth(KC)));
  };
  auto& bpack = b_buffer<typename Kern::Packed>();
  reserve_b(bpack);
  if (T == 1) return columns_alone(0, p.N, bpack);
  // Few rows (an MLM decoder's 160 masked positions, a short batch): each thread takes a range of
  // whole column panels (and packs its own B), so a call has one parallel_for instead of one or
  // two per (jc, pc) block. Either way each A block is packed (or read in place) once per column
  // group, and every element of C is summed in the same order, so the bits do not change.
  const size_t n_all_panels = (p.N + NR - 1) / NR;
  if (!split_rows && n_all_panels >= T) {
    parallel_for(T, [&](size_t t) {
      auto& own = b_buffer<typename Kern::Packed>();
      reserve_b(own);
      columns_alone(t * n_all_panels / T * NR, std::min(p.N, (t + 1) * n_all_panels / T * NR), own);
    });
    return;
  }

  // Row tasks: the row blocks, except that the rows of the last T blocks go out in pieces that
  // shrink to single MR-row panels (each piece 1/(2T) of the panels left). Tasks are handed out as
  // threads free up, so the thread that runs out of work first waits for about one panel, not a
  // block: with the last blocks in halves, the two threads of a mini training step still ended
  // ~85 us apart per GEMM call on average (~3.5% of the GEMMs' time), with single panels ~20 us.
  // A's panels are packed once either way; a piece streams the B block for fewer rows than a
  // block does, so the pieces start large.
  // (first panel, panels). The vector is kept between calls, as the pack buffers are, so a call
  // allocates nothing; the tasks reach it through this local reference (a thread_local named in a
  // lambda is the running thread's own, an empty one on the workers).
  thread_local std::vector<std::pair<size_t, size_t>> tail_buffer;
  auto& tail_pieces = tail_buffer;
  tail_pieces.clear();
  const size_t tail = split_rows ? std::min(T, m_blocks) : 0;
  for (size_t panel = tail ? block_rows(m_blocks - tail).first / MR : m_panels; panel < m_panels;) {
    const size_t n = (m_panels - panel + 2 * T - 1) / (2 * T);
    tail_pieces.emplace_back(panel, n);
    panel += n;
  }
  const size_t row_tasks = m_blocks - tail + tail_pieces.size();
  auto task_rows = [&](size_t t) {
    if (t < m_blocks - tail) return block_rows(t);
    const auto [panel, n] = tail_pieces[t - (m_blocks - tail)];
    return std::make_pair(panel * MR, std::min(n * MR, p.M - panel * MR));
  };
  for (size_t jc = 0; jc < p.N; jc += NC) {
    const size_t nc = std::min(NC, p.N - jc);
    const size_t n_panels = (nc + NR - 1) / NR;
    const size_t n_groups = split_rows ? 1 : std::min(n_panels, T);
    for (size_t pc = 0; pc < p.K; pc += KC) {
      const size_t kc = std::min(KC, p.K - pc);
      const float beta = pc == 0 ? p.beta : 1.f;
      auto panel_range = [&](size_t g, size_t groups) {  // as even as whole panels allow
        return std::make_pair(g * n_panels / groups * NR, (g + 1) * n_panels / groups * NR);
      };
      const auto* block = packed_b ? packed_b + packed_b_offset<Kern>(p.K, p.N, jc, pc) : bpack.data();
      if (!packed_b)
        parallel_for(std::min(T, n_panels), [&](size_t t) {
          auto [b0, b1] = panel_range(t, std::min(T, n_panels));
          Kern::pack_b(p.tb, p.B, p.ldb, pc, kc, jc, nc, b0, b1, bpack.data());
        });
      parallel_for(row_tasks * n_groups, [&](size_t task) {
        auto [i0, mc] = task_rows(task / n_groups);
        auto [j0, j1] = panel_range(task % n_groups, n_groups);
        if (j0 < j1) compute_block<Kern>(p, block, pc, kc, jc, nc, i0, mc, j0, j1, beta, a_in_place);
      });
    }
  }
}

// Packed-B runs (PackedB, gemm.hpp): the fp32 GEMM (gemm.cpp), and sgemm_bf16 (gemm_bf16.cpp)
// on bf16 pairs for the native kernel or, when `pairs` is false, on fp32 panels of rounded values.
void run_fp32_packed(const Problem<float>& p, const float* packed);
void run_bf16_packed(const Problem<float>& p, const void* packed, bool pairs);
// The int8 GEMM (gemm_int8.cpp) on a PackedB::int8's words.
void run_int8_packed(const Problem<float>& p, const void* packed);
// sgemm_bf16's fallback (gemm.cpp): the fp32 kernel on panels rounded to bf16 as they are packed;
// `packed` (fp32 panels, already rounded) replaces p.B and its packing.
void run_bf16_rounded(const Problem<float>& p, const float* packed = nullptr);
// x[i] = bf16_to_float(float_to_bf16(x[i])) for i < n, SIMD.
void round_to_bf16(float* x, size_t n);

// Tiny products are not worth waking the pool for.
inline int threads_for(size_t M, size_t N, size_t K) {
  return double(M) * double(N) * double(K) < 64.0 * 64.0 * 64.0 ? 1 : num_threads();
}

}  // namespace xg::gemm::detail
