#pragma once
// The Transformer encoder's inference path: no tape, no padding, no (T, T) score tensors.
//  - Padding-free: the attended tokens of every sequence are packed into one (N, H) matrix with
//    offsets (cu_seqlens), so a batch of mixed lengths costs what its real tokens cost.
//  - Q, K and V are one GEMM into an (N, 3H) buffer when the weights are packed (else three, into
//    its column slices); their biases are added as the attention kernel reads them; heads are
//    strided column blocks, never permuted.
//  - Attention is blocked with an online softmax (attn::packed_self_attention): memory linear
//    in the sequence length.
//  - Linear biases and the feed-forward's activation are their GEMM's epilogue (gemm::Epilogue);
//    the output projections add into the residual stream in their GEMMs (beta 1), and LayerNorm
//    is one pass per row.
// Encoder::forward takes this path when there is no tape to record (gradients off, eval mode)
// and the mask is a padding mask; at padded positions its output rows are zero (real positions
// agree with the recorded path to float rounding). Under MatmulPrecision::BF16 its GEMMs are
// sgemm_bf16, as linear() would run them.
#include "nn/transformer.hpp"

namespace xg::nn {

// Whether `mask` (undefined, or additive (B, T)) only says attend (0) or ignore (<= -1e4), the
// one kind of mask packing can express.
bool is_padding_mask(const Tensor& mask);

// One Transformer layer as the fused path sees it, whatever a family calls its modules:
//   post-LN: x1 = attention_norm(x + attention_out(attn(x))); out = output_norm(x1 + down(act(up(x1))))
//   pre-LN:  x1 = x + attention_out(attn(attention_norm(x)));  out = x1 + down(act(up(output_norm(x1))))
struct FusedLayerView {
  const SelfAttention* attention = nullptr;  // its query, key, value and num_heads
  const Linear* attention_out = nullptr;
  const LayerNorm* attention_norm = nullptr;
  const Linear* up = nullptr;
  Activation act = Activation::Gelu;
  const Linear* down = nullptr;
  const LayerNorm* output_norm = nullptr;
  bool pre_layer_norm = false;
};
// BERT's (and RoBERTa's) layer.
FusedLayerView fused_view(const EncoderLayer& layer);

// The layers' forward on x (B, T, H) under a padding mask (see is_padding_mask), without
// recording, then final_norm when given. Returns (B, T, H), zero at padded positions. A family
// with its own layer modules (ALBERT) calls this with views of them.
// With `wanted`, returns the output at those rows only, (B, per_sequence, H) as
// wanted->select(output) would: the last layer projects Q, K and V at every position (one GEMM)
// and computes the rest (attention, projections, feed-forward, LayerNorms) at those rows alone.
Tensor fused_encoder_forward(const std::vector<FusedLayerView>& layers, const LayerNorm* final_norm, const Tensor& x,
                             const Tensor& mask, const OutputRows* wanted = nullptr);
// enc's layers and final LayerNorm.
Tensor fused_encoder_forward(const Encoder& enc, const Tensor& x, const Tensor& mask,
                             const OutputRows* wanted = nullptr);
// How many rows the last fused_encoder_forward on this thread ran its last layer's feed-forward
// at: every attended position, or the wanted ones there (the tests see which path ran).
size_t last_fused_output_rows();
// Whether a module's forward should take the fused path now: gradients off, eval mode,
// m.execution().fused_inference, a padding mask.
bool use_fused_inference(const Module& m, const Tensor& mask);

}  // namespace xg::nn
