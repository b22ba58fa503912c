// The sparse last layer (nn::Encoder::forward_rows): a pre-training step computes its encoder's
// last layer only at the rows its losses read. Checked against the dense run (every row, then the
// rows selected): the attention with fewer queries than keys, the encoder layer post- and pre-LN,
// under padding and activation checkpointing, the five pre-training models and the sentence heads
// (sequence classification, multiple choice: one row each) end to end (losses, logits and every
// parameter gradient), and that the sparse path runs where it should (seen through dropout). The
// transformers goldens of test_bert, test_albert, test_roberta and test_heads (forward_pretraining,
// sequence classification) hold the sparse path against transformers too.
#include <catch2/catch.hpp>
#include <cmath>

#include "autograd/ops.hpp"
#include "golden.hpp"
#include "gradcheck.hpp"
#include "models/core/model_inputs.hpp"
#include "models/core/pretraining.hpp"
#include "models/core/registry.hpp"
#include "nn/fused_encoder.hpp"
#include "nn/transformer.hpp"
#include "padding_mask.hpp"

using namespace xg;
using namespace xg::models;
using Catch::Matchers::Contains;
using xg::test::max_scaled_error;
using xg::test::padding_mask;
using xg::test::randn;

namespace {

// Rows (B, per, H) of a (B, T, H) tensor at positions[b][i] of sequence b.
nn::OutputRows rows_at(const std::vector<std::vector<int64_t>>& positions, size_t T) {
  nn::OutputRows r;
  r.per_sequence = positions.front().size();
  for (size_t b = 0; b < positions.size(); ++b)
    for (int64_t t : positions[b]) r.rows.push_back(int64_t(b * T) + t);
  return r;
}

// Execution with the sparse last layer on or off, attention fused (the op) or not.
nn::ExecutionOptions sparse_layer(bool on, bool flash_attention = true) {
  nn::ExecutionOptions e;
  e.sparse_last_layer = on;
  e.flash_attention = flash_attention;
  return e;
}

// Each parameter's gradient, by name, after `loss` of a fresh backward.
std::map<std::string, Tensor> gradients_of(nn::Module& m, const std::function<Tensor()>& loss) {
  m.zero_grad();
  loss().backward();
  std::map<std::string, Tensor> g;
  for (auto& [n, p] : m.named_parameters())
    if (p.grad().defined()) g[n] = p.grad().clone();
  return g;
}

void check_same_gradients(const std::map<std::string, Tensor>& sparse, const std::map<std::string, Tensor>& dense) {
  CHECK(sparse.size() == dense.size());
  for (const auto& [n, g] : dense) {
    INFO(n);
    REQUIRE(sparse.count(n));
    const bool key_bias = n.size() >= 8 && n.compare(n.size() - 8, 8, "key.bias") == 0;
    if (key_bias)  // zero up to rounding both ways: a shift of all of a query's scores leaves its softmax as it is
      CHECK(max_scaled_error(sparse.at(n), g, 1.0) < 1e-6);
    else
      CHECK(max_scaled_error(sparse.at(n), g, test::kGradientFloor) < 1e-4);
  }
}

// A small encoder's options: width 16, 2 heads, feed-forward 24.
nn::TransformerOptions small_options(float dropout, bool pre_layer_norm = false) {
  nn::TransformerOptions opt;
  opt.hidden_size = 16;
  opt.num_heads = 2;
  opt.intermediate_size = 24;
  opt.hidden_dropout = opt.attention_dropout = dropout;
  opt.pre_layer_norm = pre_layer_norm;
  return opt;
}

}  // namespace

TEST_CASE("attention with fewer queries than keys: the rows of full attention, finite differences", "[attention][sparse]") {
  const size_t B = 2, T = 7, H = 8, heads = 2;
  const Tensor mask = padding_mask({7, 4}, T);
  const Tensor q = randn({B, T, H}, 1), k = randn({B, T, H}, 2), v = randn({B, T, H}, 3);
  const nn::OutputRows rows = rows_at({{0, 3, 6}, {0, 2, 2}}, T);  // a row twice, padding's row 6 too
  const Tensor full = unfused_multi_head_attention(q, k, v, mask, heads, 0.f, false);
  // The unfused composition and the memory-linear op (test_flash_attention compares the two at
  // block boundaries, forward and backward): the same rows, finite differences, the same checks.
  struct Op {
    const char* name;
    Tensor (*attend)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, size_t, float, bool, Generator&);
    double tolerance;
  };
  for (const Op& op : {Op{"unfused_multi_head_attention", unfused_multi_head_attention, 1e-6},
                       Op{"multi_head_attention", multi_head_attention, 1e-5}}) {
    INFO(op.name);
    auto attend = [&](const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& m) {
      return op.attend(a, b, c, m, heads, 0.f, false, default_generator());
    };
    const Tensor some = attend(rows.select(q), k, v, mask);
    CHECK(some.shape() == Shape{B, 3, H});
    CHECK(max_scaled_error(some, rows.select(full)) < op.tolerance);
    test::check_gradients([&](const std::vector<Tensor>& x) { return attend(x[0], x[1], x[2], mask); },
                          {randn({B, 3, H}, 4), randn({B, T, H}, 5), randn({B, T, H}, 6)});
    CHECK_THROWS_WITH(attend(randn({B, 3, 6}, 7), k, v, mask),
                      Contains(std::string("[") + op.name + "] q (B, Tq, H) and k, v (B, T, H) must share B and H"));
  }
  CHECK_THROWS_WITH(unfused_multi_head_attention(rows.select(q), k, randn({B, 5, H}, 8), mask, heads, 0.f, false),
                    Contains("must share B and H"));
  CHECK_THROWS_WITH(unfused_multi_head_attention(rows.select(q), k, v, padding_mask({3, 3}, 3), heads, 0.f, false),
                    Contains("mask has shape [2, 3], expected [2, 7]"));
  CHECK_THROWS_WITH(multi_head_attention(randn({B, 0, H}, 7), k, v, mask, heads, 0.f, false),
                    Contains("[multi_head_attention] q [2, 0, 8] has no query rows"));
}

TEST_CASE("Encoder::forward_rows equals forward's rows: post- and pre-LN, padding, checkpointing", "[nn][sparse]") {
  const size_t B = 3, T = 9, H = 16;
  const Tensor mask = padding_mask({9, 5, 7}, T);
  const nn::OutputRows rows = rows_at({{0, 4, 8, 2}, {0, 1, 3, 0}, {0, 6, 5, 0}}, T);
  for (const bool pre_ln : {false, true})
    for (const bool checkpointed : {false, true}) {
      INFO("pre-LN " << pre_ln << ", checkpointed " << checkpointed);
      nn::Encoder encoder(small_options(0.f, pre_ln), 3);  // no dropout: training mode, the same numbers both ways
      encoder.train();
      encoder.checkpoint_activations = checkpointed;
      const Tensor x = randn({B, T, H}, 12);
      const Tensor weights = randn({B, rows.per_sequence, H}, 13).detach();
      Tensor sparse_out, dense_out;
      auto run = [&](bool sparse, Tensor& out) {
        encoder.set_execution(sparse_layer(sparse));
        Tensor xi = x;
        xi.zero_grad();
        return gradients_of(encoder, [&] {
          out = encoder.forward_rows(x, mask, rows);
          return sum(mul(out, weights));
        });
      };
      const auto sparse_grads = run(true, sparse_out);
      const Tensor sparse_dx = x.grad().clone();
      const auto dense_grads = run(false, dense_out);
      const Tensor dense_dx = x.grad().clone();
      CHECK(sparse_out.shape() == Shape{B, rows.per_sequence, H});
      CHECK(max_scaled_error(sparse_out, dense_out) < 1e-5);
      CHECK(max_scaled_error(sparse_dx, dense_dx, test::kGradientFloor) < 1e-4);
      CHECK(sparse_grads.size() == encoder.parameters().size());
      check_same_gradients(sparse_grads, dense_grads);
    }
}

TEST_CASE("fused inference at some rows equals the fused output's rows: post- and pre-LN, padding, repeats", "[nn][sparse][fused]") {
  const size_t T = 70, H = 16;
  // a full sequence, padding, one token, all padding; wanted rows at padding (zero, as the fused
  // output is there), repeated, in any order
  const Tensor mask = padding_mask({70, 33, 1, 0}, T);
  const nn::OutputRows rows = rows_at({{0, 69, 5, 5}, {0, 40, 32, 7}, {0, 1, 0, 0}, {0, 0, 3, 0}}, T);
  for (const bool pre_ln : {false, true})
    for (const size_t layers : {0, 1, 3}) {
      INFO("pre-LN " << pre_ln << ", layers " << layers);
      nn::Encoder encoder(small_options(0.f, pre_ln), layers);
      encoder.eval();
      NoGradGuard no_grad;
      const Tensor x = randn({4, T, H}, 31);
      const Tensor all = nn::fused_encoder_forward(encoder, x, mask);
      const size_t all_rows = nn::last_fused_output_rows();
      const Tensor some = nn::fused_encoder_forward(encoder, x, mask, &rows);
      CHECK(nn::last_fused_output_rows() == (layers ? 10 : 0));  // 16 wanted, 6 of them at padding
      CHECK(all_rows == (layers ? 104 : 0));
      REQUIRE(some.shape() == Shape{4, 4, H});
      CHECK(max_scaled_error(some, rows.select(all)) < 1e-6);
      // Encoder::forward_rows takes it on the fused path, the sparse switch on; off, every row
      encoder.set_execution(sparse_layer(true));
      CHECK(max_scaled_error(encoder.forward_rows(x, mask, rows), some) == 0.0);
      CHECK(nn::last_fused_output_rows() == (layers ? 10 : 0));
      encoder.set_execution(sparse_layer(false));
      CHECK(max_scaled_error(encoder.forward_rows(x, mask, rows), rows.select(all)) == 0.0);
      CHECK(nn::last_fused_output_rows() == all_rows);
    }
  {  // padding anywhere, not only at the end: position 0 and the middle of sequence 0 too
    nn::Encoder encoder(small_options(0.f), 2);
    encoder.eval();
    NoGradGuard no_grad;
    std::vector<float> gaps(2 * T, 0.f);
    for (size_t t : {0, 5, 6, 7, 40}) gaps[t] = -1e4f;
    for (size_t t = 60; t < T; ++t) gaps[T + t] = -1e4f;
    const Tensor gap_mask = Tensor::from_vector(gaps, {2, T});
    const nn::OutputRows around = rows_at({{0, 4, 6, 8, 41}, {0, 59, 60, 3, 3}}, T);
    const Tensor x = randn({2, T, H}, 33);
    const Tensor some = nn::fused_encoder_forward(encoder, x, gap_mask, &around);
    CHECK(nn::last_fused_output_rows() == 7);  // positions 0 and 6 of sequence 0 and 60 of sequence 1 are padding
    CHECK(max_scaled_error(some, around.select(nn::fused_encoder_forward(encoder, x, gap_mask))) < 1e-6);
    CHECK(some.contiguous().data()[0] == 0.f);
  }
  // every wanted row at padding: zeros; rows that do not fit: the select's errors
  nn::Encoder encoder(small_options(0.f), 1);
  encoder.eval();
  NoGradGuard no_grad;
  const Tensor x = randn({4, T, H}, 32);
  const nn::OutputRows at_padding = rows_at({{0}, {50}, {2}, {0}}, T);
  const Tensor y = nn::fused_encoder_forward(encoder, x, padding_mask({0, 33, 1, 0}, T), &at_padding);
  CHECK(y.shape() == Shape{4, 1, H});
  for (float v : y.to_vector()) REQUIRE(v == 0.f);
  CHECK(nn::last_fused_output_rows() == 0);
  const nn::OutputRows three = rows_at({{0}, {0}, {0}}, T);
  CHECK_THROWS_WITH(nn::fused_encoder_forward(encoder, x, mask, &three),
                    Contains("[OutputRows] 3 rows of 1 per sequence do not fit a batch of [4, 70, 16]"));
}

TEST_CASE("output rows: rows outside their sequence and a pooler's rows not at position 0 are refused", "[nn][sparse][errors]") {
  const Tensor x = randn({2, 4, 8}, 1);
  nn::OutputRows wrong = rows_at({{0, 1}, {0, 3}}, 4);
  wrong.rows[3] = 2;  // sequence 1's second row at position 2 of sequence 0
  CHECK_THROWS_WITH(wrong.select(x), Contains("[OutputRows] row 3 is position 2, not in sequence 1 of [2, 4, 8]"));
  CHECK_THROWS_WITH(rows_at({{0, 1}, {0, 3}}, 4).select(randn({3, 4, 8}, 2)),
                    Contains("[OutputRows] 4 rows of 2 per sequence do not fit a batch of [3, 4, 8]"));
  CHECK_THROWS_WITH(nn::OutputRows::first_tokens(2, 0).select(randn({2, 0, 8}, 3)),  // not a division by zero
                    Contains("[OutputRows] 2 rows wanted from sequences of no positions, [2, 0, 8]"));
  CHECK_THROWS_WITH(rows_at({{0, 1}, {2, 3}}, 4).require_first_positions(4, "BertModel"),
                    Contains("[BertModel] the output rows of sequence 1 start at position 6, not at its first token"));
}

TEST_CASE("output rows: the sparse layer runs while its attention weights stay smaller than what it skips", "[nn][sparse]") {
  nn::OutputRows rows;
  rows.per_sequence = 78;  // 15% of 512 positions, plus the first
  CHECK(rows.cheaper_than_dense(512, 12, 768, 3072));  // BERT-base at its longest
  rows.per_sequence = 615;  // 15% of 4096: (615 x 4096) weights per head outgrow what the skipped rows keep
  CHECK_FALSE(rows.cheaper_than_dense(4096, 12, 768, 3072));
  CHECK_FALSE(rows.cheaper_than_dense(4096, 4, 256, 1024));  // mini too
  rows.per_sequence = 1;  // a sentence classifier: always
  CHECK(rows.cheaper_than_dense(4096, 12, 768, 3072));
  rows.per_sequence = 8;  // every row wanted
  CHECK_FALSE(rows.cheaper_than_dense(8, 2, 16, 24));
}

TEST_CASE("Encoder::forward_rows takes the sparse path where it pays, and only there", "[nn][sparse]") {
  // Seen through dropout: the sparse layer draws its masks at its rows only, so under one seed its
  // output differs from the dense run's; where it falls back to the dense run the two are equal.
  nn::Encoder encoder(small_options(0.1f), 2);
  encoder.train();
  const size_t T = 9;
  const Tensor x = randn({2, T, 16}, 21), mask = padding_mask({9, 6}, T);
  bool flash = false;  // unfused attention stores its weights: the sparse layer runs while they stay small
  auto output = [&](bool sparse, const nn::OutputRows& rows) {
    encoder.set_execution(sparse_layer(sparse, flash));
    manual_seed(3);
    return encoder.forward_rows(x, mask, rows).to_vector();
  };
  const nn::OutputRows few = rows_at({{0, 4, 8}, {0, 2, 5}}, T);  // 2 x 3 x 9 weights per head: pays
  const nn::OutputRows most = rows_at({{0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7}}, T);
  const nn::OutputRows all = rows_at({{0, 1, 2, 3, 4, 5, 6, 7, 8}, {0, 1, 2, 3, 4, 5, 6, 7, 8}}, T);
  REQUIRE(few.cheaper_than_dense(T, 2, 16, 24));
  CHECK(output(true, few) != output(false, few));
  REQUIRE_FALSE(most.cheaper_than_dense(T, 2, 16, 24));  // does not pay
  CHECK_FALSE(nn::sparse_layer_pays(sparse_layer(true, false), most, T, 2, 16, 24));
  CHECK(output(true, most) == output(false, most));
  // the memory-linear op stores none: it runs whenever fewer rows than positions are wanted
  flash = true;
  CHECK(nn::sparse_layer_pays(sparse_layer(true), most, T, 2, 16, 24));
  CHECK(output(true, few) != output(false, few));
  CHECK(output(true, most) != output(false, most));
  CHECK_FALSE(nn::sparse_layer_pays(sparse_layer(true), all, T, 2, 16, 24));
  CHECK(output(true, all) == output(false, all));
}

TEST_CASE("Encoder::forward_rows: many queries go through the memory-linear op, as the dense run", "[nn][sparse][flash]") {
  // 2 heads x 10 rows > width 16: the unfused weights would outgrow an activation
  const size_t T = 12, H = 16;
  {
    const nn::ExecutionOptions flash = sparse_layer(true), unfused = sparse_layer(true, false);
    CHECK(nn::queries_take_blocked_attention(flash, 2, 10, H));
    CHECK_FALSE(nn::queries_take_blocked_attention(flash, 2, 8, H));
    CHECK_FALSE(nn::queries_take_blocked_attention(flash, 12, 21, 768));  // BERT-base at 8 x 128: unfused
    CHECK(nn::queries_take_blocked_attention(flash, 12, 78, 768));        // at 512 tokens: blocked
    CHECK_FALSE(nn::queries_take_blocked_attention(unfused, 2, 10, H));
  }
  const Tensor mask = padding_mask({12, 7}, T);
  const nn::OutputRows many = rows_at({{0, 1, 2, 3, 4, 5, 6, 7, 8, 11}, {0, 1, 2, 3, 4, 5, 6, 8, 9, 3}}, T);
  nn::Encoder encoder(small_options(0.f), 2);
  encoder.train();
  const Tensor x = randn({2, T, H}, 41);
  const Tensor weights = randn({2, many.per_sequence, H}, 42).detach();
  Tensor sparse_out, dense_out;
  auto run = [&](bool sparse, Tensor& out) {
    encoder.set_execution(sparse_layer(sparse));
    return gradients_of(encoder, [&] {
      out = encoder.forward_rows(x, mask, many);
      return sum(mul(out, weights));
    });
  };
  const auto sparse_grads = run(true, sparse_out);
  const auto dense_grads = run(false, dense_out);
  CHECK(max_scaled_error(sparse_out, dense_out) < 1e-5);
  check_same_gradients(sparse_grads, dense_grads);
}

TEST_CASE("pretraining_rows: each sequence's first position then its masked ones, padded with the first", "[pretrain][sparse]") {
  const ModelInputs in = pad_sequences({{{2, 5, 7, 9, 3}, {}}, {{2, 11, 3}, {}}, {{2, 4, 3}, {}}}, /*pad_id=*/0);
  // masked positions in no particular order; sequence 2 has none
  const PretrainingTargets t = make_pretraining_targets({3, 6, 1, 2}, {9, 11, 5, 7}, {0, 1, 0});
  const PretrainingRows r = pretraining_rows(in, t);
  CHECK(r.rows.per_sequence == 4);
  CHECK(r.rows.rows == std::vector<int64_t>{0, 3, 1, 2, 5, 6, 5, 5, 10, 10, 10, 10});
  CHECK(r.masked == std::vector<int64_t>{1, 5, 2, 3});
}

namespace {
// A 3-layer model of `architecture` (family "bert", "roberta" or "albert") in training mode, with
// no dropout unless `dropout`.
std::unique_ptr<PretrainedModel> small_model(const std::string& family, const std::string& architecture, double dropout = 0) {
  nlohmann::json j = preset_config(family, "tiny");
  j["architectures"] = {architecture};
  j["vocab_size"] = 20;
  j["hidden_size"] = 16;
  j["num_hidden_layers"] = 3;
  j["num_attention_heads"] = 2;
  j["intermediate_size"] = 24;
  j["max_position_embeddings"] = 16;
  j["hidden_dropout_prob"] = j["attention_probs_dropout_prob"] = dropout;
  if (family == "albert") {
    j["embedding_size"] = 8;
    j["inner_group_num"] = 2;  // the last group's second layer is the sparse one
    j["classifier_dropout_prob"] = dropout;
  }
  auto model = build_model(j, "test", architecture);
  Generator gen(5);
  model->init_weights(gen);
  model->train();
  return model;
}

std::string family_of(const std::string& architecture) {
  return architecture.rfind("Bert", 0) == 0 ? "bert" : architecture.rfind("Roberta", 0) == 0 ? "roberta" : "albert";
}

// Two sequences of 8 and 5 real tokens, a padded tail in the second; `pair`: two token types
// (RoBERTa has one).
ModelInputs two_sequences(bool pair) {
  return pad_sequences({{{2, 5, 7, 9, 3, 12, 14, 3}, pair ? std::vector<int64_t>{0, 0, 0, 0, 0, 1, 1, 1} : std::vector<int64_t>{}},
                        {{2, 11, 13, 6, 3}, {}}},
                       /*pad_id=*/1);
}
}  // namespace

TEST_CASE("sentence heads read one row of the last layer: logits, loss and gradients as the dense run", "[heads][sparse]") {
  for (const std::string arch : {"BertForSequenceClassification", "RobertaForSequenceClassification",
                                 "AlbertForSequenceClassification", "BertForMultipleChoice", "RobertaForMultipleChoice",
                                 "AlbertForMultipleChoice"}) {
    INFO(arch);
    const std::string family = family_of(arch);
    auto model = small_model(family, arch);
    const bool choices = arch.find("MultipleChoice") != std::string::npos;
    ModelInputs in = two_sequences(family != "roberta");
    Labels labels{{"labels", Tensor::from_ints({1, 0}, {2})}};
    if (choices) {  // the two sequences as two choices of one example
      const long T = long(in.seq_len());
      for (Tensor* t : {&in.input_ids, &in.token_type_ids, &in.attention_mask})
        if (t->defined()) *t = reshape(*t, {1, 2, T});
      labels = {{"labels", Tensor::from_ints({1}, {1})}};
    }
    NamedOutputs sparse, dense;
    auto run = [&](bool on, NamedOutputs& out) {
      model->set_execution(sparse_layer(on));
      return gradients_of(*model, [&] {
        out = model->forward_named(in, labels);
        return out.at("loss");
      });
    };
    const auto sparse_grads = run(true, sparse);
    const auto dense_grads = run(false, dense);
    CHECK(sparse.at("loss").item() == Approx(dense.at("loss").item()).epsilon(1e-6));
    CHECK(max_scaled_error(sparse.at("logits"), dense.at("logits")) < 1e-5);
    CHECK(sparse_grads.size() == model->parameters().size());
    check_same_gradients(sparse_grads, dense_grads);
    // the inputs are checked before the first tokens are picked
    if (!choices) {
      const ModelInputs flat{Tensor::from_ints({2, 5, 3}, {3}), Tensor(), Tensor(), Tensor()};
      CHECK_THROWS_WITH(model->forward_named(flat, labels), Contains("input_ids must be a non-empty (batch, length) tensor"));
    }
  }
}

TEST_CASE("inference: sentence heads and pre-training models run the fused last layer at their rows only", "[heads][pretrain][sparse][fused]") {
  const PretrainingTargets t = make_pretraining_targets({2, 6, 9, 11, 1}, {7, 14, 11, 6, 5}, {1, 0});
  for (const std::string arch : {"BertForSequenceClassification", "RobertaForSequenceClassification",
                                 "AlbertForSequenceClassification", "BertForPreTraining", "BertForMaskedLM",
                                 "RobertaForMaskedLM", "AlbertForPreTraining", "AlbertForMaskedLM"}) {
    INFO(arch);
    const std::string family = family_of(arch);
    auto model = small_model(family, arch);
    model->eval();
    NoGradGuard no_grad;
    const ModelInputs in = two_sequences(family != "roberta");
    const bool classifier = arch.find("Classification") != std::string::npos;
    auto run = [&](bool on) {
      model->set_execution(sparse_layer(on));
      const Tensor out = classifier ? model->forward_named(in, {}).at("logits")
                                    : dynamic_cast<PretrainingHeads&>(*model).forward_pretraining(in, t).mlm_logits;
      return std::make_pair(out, nn::last_fused_output_rows());
    };
    const auto [sparse, sparse_rows] = run(true);
    const auto [dense, dense_rows] = run(false);
    CHECK(max_scaled_error(sparse, dense) < 1e-5);
    CHECK(dense_rows == 13);  // every real token
    // a classifier's first tokens; the first tokens and masked positions, sequence 1's padded with its first
    CHECK(sparse_rows == (classifier ? 2 : 8));
  }
}

TEST_CASE("first_token_states: every family's base model through PretrainedModel, heads refused", "[heads][sparse]") {
  for (const std::string arch : {"BertForSequenceClassification", "RobertaForSequenceClassification", "AlbertForSequenceClassification"}) {
    INFO(arch);
    const std::string family = family_of(arch);
    auto model = small_model(family, arch);  // training mode, no dropout: the recorded sparse layer
    const ModelInputs in = two_sequences(family != "roberta");
    PretrainedModel& base = model->base_model();
    auto check_first_tokens = [&] {
      const Tensor all = nn::OutputRows::first_tokens(2, in.seq_len()).select(base.forward_named(in).at("last_hidden_state"));
      const Tensor first = base.first_token_states(in);
      CHECK(first.shape() == Shape{2, 1, 16});
      CHECK(max_scaled_error(first, all) < 1e-5);
    };
    check_first_tokens();
    model->eval();  // inference: no tape, the fused pass at the rows
    NoGradGuard no_grad;
    check_first_tokens();
    CHECK_THROWS_WITH(model->first_token_states(in), Contains(arch) && Contains("ask its base_model()"));
  }
}

TEST_CASE("pre-training models: the sparse last layer gives the dense run's losses, logits and gradients", "[pretrain][sparse]") {
  const PretrainingTargets t = make_pretraining_targets({2, 6, 9, 11, 1}, {7, 14, 11, 6, 5}, {1, 0});  // in both sequences
  for (const std::string arch : {"BertForPreTraining", "BertForMaskedLM", "RobertaForMaskedLM", "AlbertForPreTraining",
                                 "AlbertForMaskedLM"}) {
    INFO(arch);
    const std::string family = family_of(arch);
    const ModelInputs in = two_sequences(family != "roberta");
    for (const bool checkpointed : {false, true}) {
      INFO("checkpointed " << checkpointed);
      auto model = small_model(family, arch);
      auto& heads = dynamic_cast<PretrainingHeads&>(*model);
      heads.set_checkpoint_activations(checkpointed);
      PretrainingOutput sparse, dense;
      auto run = [&](bool on, PretrainingOutput& out) {
        model->set_execution(sparse_layer(on));
        return gradients_of(*model, [&] {
          out = heads.forward_pretraining(in, t);
          return out.loss;
        });
      };
      const auto sparse_grads = run(true, sparse);
      const auto dense_grads = run(false, dense);
      CHECK(sparse.loss.item() == Approx(dense.loss.item()).epsilon(1e-6));
      CHECK(sparse.mlm_correct == dense.mlm_correct);
      CHECK(max_scaled_error(sparse.mlm_logits, dense.mlm_logits) < 1e-5);
      if (dense.sentence_logits.defined()) CHECK(max_scaled_error(sparse.sentence_logits, dense.sentence_logits) < 1e-5);
      CHECK(sparse_grads.size() == model->parameters().size());
      check_same_gradients(sparse_grads, dense_grads);
    }
    // The sparse path ran (not the dense one behind the switch): with dropout on, it draws the
    // last layer's masks at its rows only, so under one seed it gives another loss.
    auto with_dropout = small_model(family, arch, 0.2);
    auto loss = [&](bool on) {
      with_dropout->set_execution(sparse_layer(on));
      manual_seed(9);
      return dynamic_cast<PretrainingHeads&>(*with_dropout).forward_pretraining(in, t).loss.item();
    };
    CHECK(loss(true) != loss(false));
    CHECK(loss(false) == loss(false));
  }
}
