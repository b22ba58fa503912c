#pragma once
// Multi-head self-attention and the Transformer encoder, laid out module by module as Hugging
// Face's BERT so parameter names match its checkpoints:
//   layer.N.attention.self.{query,key,value}, layer.N.attention.output.{dense,LayerNorm},
//   layer.N.intermediate.dense, layer.N.output.{dense,LayerNorm}
#include <functional>
#include <memory>
#include <vector>

#include "nn/layers.hpp"

namespace xg::nn {

struct TransformerOptions {
  size_t hidden_size = 768;
  size_t num_heads = 12;
  size_t intermediate_size = 3072;
  float hidden_dropout = 0.1f;
  float attention_dropout = 0.1f;
  float layer_norm_eps = 1e-12f;
  Activation activation = Activation::Gelu;
  bool pre_layer_norm = false;  // BERT is post-LN: LayerNorm(x + sublayer(x))
  // Throws naming the field when a size is zero or hidden_size % num_heads != 0.
  void validate() const;
};

// The additive mask attention wants from a (B, T) 0/1 attention mask: 0 where attended, the
// lowest float where padded (as Hugging Face does), so padded keys get exactly zero weight.
Tensor additive_attention_mask(const Tensor& attention_mask);

// The real tokens of a padded batch, for running the encoder without its padding: packed row r
// is position rows[r] of the B * T positions, sequence b the packed rows [cu_seqlens[b],
// cu_seqlens[b + 1]). pack and unpack are recorded (gradients flow through both).
struct PackedBatch {
  size_t batch = 0, seq_len = 0;
  std::vector<int64_t> rows;
  std::vector<size_t> cu_seqlens;
  // From an additive (B, T) padding mask (see is_padding_mask): attended positions are the 0s.
  static PackedBatch from_mask(const Tensor& mask);
  Tensor pack(const Tensor& x) const;    // (B, T, H) -> (N, H)
  Tensor unpack(const Tensor& h) const;  // (N, H) -> (B, T, H), zero at padded positions
};

// What attention may look at: an additive (B, T) key mask (undefined: everything) over padded
// (B, T, H) rows, or, when `packed` is set, packed (N, H) rows that attend within their sequence.
// Layers pass it through to SelfAttention untouched; a Tensor converts to it. A mask of 0s and 1s
// with a 1 in it is refused: it is a 0/1 padding mask (Hugging Face's attention_mask), which as an
// additive one would attend to the padding (additive_attention_mask converts it).
struct AttentionMask {
  Tensor additive;
  std::shared_ptr<const PackedBatch> packed;
  AttentionMask(const Tensor& mask = Tensor());  // NOLINT: implicit on purpose
};

// The check AttentionMask's constructor makes, for entry points that take the raw mask (the fused
// inference encoder): throws on a mask of 0s and 1s with a 1 in it.
void refuse_zero_one_mask(const Tensor& mask);

// Whether an encoder running under `exec` should drop a batch's padding before its layers:
// exec.padding_free_active(), and a padding mask (0 / <= -1e4) with at least one padded position.
bool use_packed_rows(const ExecutionOptions& exec, const Tensor& mask);
// Runs `layers` on x's real rows only when use_packed_rows(exec, mask), else on x as it is; the
// result is zero at padded positions in the first case. Encoders (BERT's, ALBERT's) wrap their
// layer loop in it, with their own execution().
Tensor forward_without_padding(const ExecutionOptions& exec, const Tensor& x, const Tensor& mask,
                               const std::function<Tensor(const Tensor&, const AttentionMask&)>& layers);

// Positions of a padded (B, T, H) batch at which an encoder's output is wanted: `per_sequence`
// of each sequence, as flat indices b * T + t, sequence b's at rows[b * per_sequence, ...). A
// pre-training loss reads few (the masked positions and the first token), a sentence classifier
// one: the last layer then runs only there, its keys and values excepted (Encoder::forward_rows).
struct OutputRows {
  size_t per_sequence = 0;
  std::vector<int64_t> rows;
  // x's rows (B, T, H) -> (B, per_sequence, H); throws naming the shapes when they do not fit.
  Tensor select(const Tensor& x) const;
  // Throws as select does unless these rows fit an x of shape (B, T, H).
  void check(const Shape& x) const;
  // Throws naming `who` unless each sequence's first row is its position 0 (a pooler's input).
  void require_first_positions(size_t seq_len, const char* who) const;
  // Position 0 of each of `batch` sequences: what a sentence classifier reads.
  static OutputRows first_tokens(size_t batch, size_t seq_len);
  // Whether a layer computed at these rows keeps less than one computed everywhere: its (B, heads,
  // per_sequence, T) attention weights against the activations (hidden + intermediate wide, a
  // rough count) of the T - per_sequence positions it skips. At 15% masking it stops paying past
  // about 1,800 tokens, at any width: the weights grow as T^2.
  bool cheaper_than_dense(size_t seq_len, size_t heads, size_t hidden, size_t intermediate) const;
};

// Whether SelfAttention::forward_queries takes the blocked op (exec.flash_attention): where the
// unfused weights, heads x queries x T per sequence, would outgrow an activation, T x width.
bool queries_take_blocked_attention(const ExecutionOptions& exec, size_t heads, size_t queries, size_t width);
// Whether a last layer at `rows` only beats computing every row: with flash attention
// (SelfAttention::forward_queries keeps its memory linear in T), whenever fewer rows than positions
// are wanted; without (the weights (B, heads, per_sequence, T) stored), where
// rows.cheaper_than_dense says so.
bool sparse_layer_pays(const ExecutionOptions& exec, const OutputRows& rows, size_t seq_len, size_t heads, size_t hidden,
                       size_t intermediate);

// The sizes of an encoder's last layer that choose forward_rows' path.
struct LastLayerShape {
  size_t heads, hidden, intermediate;
};
// How an encoder's forward_rows runs under `exec` (nn::Encoder's, ALBERT's transformer): the fused
// inference pass at the rows alone (`fused`: use_fused_inference said yes), every row then the
// wanted ones (exec.sparse_last_layer off, no layers (`last` null), x not (B, T, H), packed rows, or
// where sparse_layer_pays says no), or the recorded layers with the last at the rows only.
enum class RowsPath { FusedAtRows, SelectFromAll, SparseLastLayer };
RowsPath rows_path(const ExecutionOptions& exec, bool fused, const Tensor& x, const Tensor& mask, const OutputRows& rows,
                   const LastLayerShape* last);

// Scaled dot-product self-attention over num_heads heads: the "self" module of BERT.
class SelfAttention : public Module {
 public:
  explicit SelfAttention(const TransformerOptions& opt);
  // x (B, T, H) with mask.additive undefined or (B, T); or x (N, H) with mask.packed. Returns the
  // context, shaped as x.
  Tensor forward(const Tensor& x, const AttentionMask& mask);
  // The context at some rows only: queries from xq (B, Tq, H), rows of x; keys and values from
  // every row of x (B, T, H) under the additive (B, T) mask (or none). Unfused while its weights
  // (B, heads, Tq, T) are no larger than x (heads x Tq <= H), else through multi_head_attention
  // (memory linear in T) unless execution().flash_attention is off.
  Tensor forward_queries(const Tensor& xq, const Tensor& x, const Tensor& mask);
  std::shared_ptr<Linear> query, key, value;
  size_t num_heads;
  float attention_dropout;
  // query, key and value packed as one (in, 3 x out) GEMM operand while an InferenceWeights holds
  // them (nn/packed_weights.hpp).
  struct PackedQkvWeight;
  std::shared_ptr<const PackedQkvWeight> packed_qkv;
};

// dense + dropout (+ residual and LayerNorm in post-LN): BERT's SelfOutput and Output modules.
class ProjectResidual : public Module {
 public:
  ProjectResidual(size_t in, size_t out, const TransformerOptions& opt);
  // post-LN: LayerNorm(dropout(dense(h)) + residual); pre-LN: dropout(dense(h)) + residual.
  Tensor forward(const Tensor& h, const Tensor& residual);
  std::shared_ptr<Linear> dense;
  std::shared_ptr<LayerNorm> layer_norm;  // registered as "LayerNorm"
  float dropout_p;
  bool pre_layer_norm;
};

class Attention : public Module {
 public:
  explicit Attention(const TransformerOptions& opt);
  std::shared_ptr<SelfAttention> self;
  std::shared_ptr<ProjectResidual> output;
};

class Intermediate : public UnaryModule {
 public:
  explicit Intermediate(const TransformerOptions& opt);
  Tensor forward(const Tensor& x) override { return activate(dense->forward(x), act); }
  std::shared_ptr<Linear> dense;
  Activation act;
};

class EncoderLayer : public Module {
 public:
  explicit EncoderLayer(const TransformerOptions& opt);
  // x (B, T, H) or packed (N, H); see AttentionMask.
  Tensor forward(const Tensor& x, const AttentionMask& mask);
  // forward(x, mask)'s rows `rows` (B, per_sequence, H), computed there only: x (B, T, H), mask
  // additive (B, T) or undefined.
  Tensor forward_rows(const Tensor& x, const Tensor& mask, const OutputRows& rows);
  std::shared_ptr<Attention> attention;
  std::shared_ptr<Intermediate> intermediate;
  std::shared_ptr<ProjectResidual> output;
  bool pre_layer_norm;

 private:
  Tensor feed_forward(const Tensor& x1);  // the feed-forward half, after attention's residual x1
};

// A stack of encoder layers ("layer.0", "layer.1", ...). Pre-LN stacks end with a LayerNorm
// ("final_layer_norm"), as pre-LN Transformers need.
class Encoder : public Module {
 public:
  Encoder(const TransformerOptions& opt, size_t num_layers);
  // x (B, T, H), mask undefined or additive (B, T). For inference (gradients off, eval mode) under
  // a padding mask it runs nn/fused_encoder.hpp's packed path (execution().fused_inference), and
  // with execution().padding_free training runs on the real tokens only too
  // (forward_without_padding); either way rows at padded positions are zero (transformers computes
  // values there, which the default training path and fused_inference off give).
  Tensor forward(const Tensor& x, const Tensor& mask);
  // forward(x, mask) at `rows` only, (B, per_sequence, H): every layer but the last runs as in
  // forward, the last at those rows (execution().sparse_last_layer); on the fused inference path
  // too, where rows at padded positions are zero as forward's are. Where forward would drop the
  // padding, it does, and the rows are selected from its output.
  Tensor forward_rows(const Tensor& x, const Tensor& mask, const OutputRows& rows);
  std::shared_ptr<ModuleList<EncoderLayer>> layer;
  std::shared_ptr<LayerNorm> final_layer_norm;  // pre-LN only
  // Gradient checkpointing: in training, each layer keeps only its input and is recomputed in
  // the backward pass (one more forward per layer, activations of one layer at a time).
  bool checkpoint_activations = false;

 private:
  EncoderLayer& last_layer() { return (*layer)[layer->size() - 1]; }
  // layer_forward(h) for layer l, recomputed in the backward under checkpoint_activations.
  Tensor run_layer(Module& l, const Tensor& h, const std::function<Tensor(const Tensor&)>& layer_forward);
};

}  // namespace xg::nn
