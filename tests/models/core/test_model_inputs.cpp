// Config fields declared once (JSON read/write, type and range errors), model inputs built in one
// place (padding, masks), and position ids: given, defaulted, or a family's own default.
#include <catch2/catch.hpp>

#include "models/bert/bert.hpp"
#include "tests/golden.hpp"

using namespace xg;
using namespace xg::models;
using Catch::Matchers::Contains;
using xg::test::ints;

namespace {
BertConfig small_config() {
  BertConfig c;
  c.vocab_size = 30;
  c.hidden_size = 8;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 2;
  c.intermediate_size = 16;
  c.max_position_embeddings = 10;
  c.pad_token_id = 1;
  c.hidden_dropout_prob = c.attention_probs_dropout_prob = 0.f;
  return c;
}

// RoBERTa's positions (transformers' create_position_ids_from_input_ids): padding_idx + 1 onwards
// over non-padding tokens, padding_idx at padding. A family's default is this one override.
class PaddingOffsetEmbeddings : public BertEmbeddings {
 public:
  explicit PaddingOffsetEmbeddings(const BertConfig& c) : BertEmbeddings(c), padding_idx_(c.pad_token_id) {}
  Tensor default_position_ids(const ModelInputs& in) const override {
    const std::vector<int64_t> ids = in.input_ids.to_ints();
    std::vector<int64_t> positions(ids.size());
    for (size_t b = 0; b < in.batch(); ++b) {
      int64_t count = 0;
      for (size_t t = 0; t < in.seq_len(); ++t) {
        const size_t i = b * in.seq_len() + t;
        positions[i] = ids[i] == padding_idx_ ? padding_idx_ : padding_idx_ + ++count;
      }
    }
    return Tensor::from_ints(positions, in.input_ids.shape());
  }

 private:
  int64_t padding_idx_;
};

std::vector<float> hidden(BertModel& m, const ModelInputs& in) {
  NoGradGuard no_grad;
  return m.forward(in).last_hidden_state.to_vector();
}
}  // namespace

TEST_CASE("config fields: one declaration drives defaults, JSON both ways and checks", "[config]") {
  const BertConfig defaults;
  CHECK(defaults.hidden_size == 768);
  CHECK(defaults.hidden_act == "gelu");
  const nlohmann::json j = defaults.to_json();
  CHECK(j.at("model_type") == "bert");
  CHECK(j.at("position_embedding_type") == "absolute");
  CHECK(j.size() == 15);  // 14 fields and model_type
  BertConfig c = small_config();
  c.layer_norm_eps = 1e-5f;
  c.hidden_act = "gelu_new";
  CHECK(BertConfig::from_json(c.to_json(), "c.json").to_json() == c.to_json());
  // transformers' bookkeeping keys are ignored, nulls keep defaults
  nlohmann::json hf = c.to_json();
  hf["transformers_version"] = "4.45.2";
  hf["use_cache"] = true;
  hf["classifier_dropout"] = nullptr;
  hf["type_vocab_size"] = nullptr;
  CHECK(BertConfig::from_json(hf, "hf.json").type_vocab_size == 2);
}

TEST_CASE("config fields: wrong types and ranges name the file and the field", "[config][errors]") {
  auto with = [](const char* key, nlohmann::json v) {
    nlohmann::json j = small_config().to_json();
    j[key] = std::move(v);
    return j;
  };
  CHECK_THROWS_WITH(BertConfig::from_json(with("hidden_size", "768"), "x.json"),
                    Contains("[BertConfig] x.json: field hidden_size") && Contains("\"768\"") &&
                        Contains("expected a non-negative integer"));
  CHECK_THROWS_WITH(BertConfig::from_json(with("hidden_size", 12.5), "x.json"), Contains("hidden_size") && Contains("12.5"));
  CHECK_THROWS_WITH(BertConfig::from_json(with("num_hidden_layers", -2), "x.json"), Contains("num_hidden_layers") && Contains("-2"));
  CHECK_THROWS_WITH(BertConfig::from_json(with("pad_token_id", "0"), "x.json"), Contains("pad_token_id") && Contains("expected an integer"));
  CHECK_THROWS_WITH(BertConfig::from_json(with("layer_norm_eps", "1e-12"), "x.json"), Contains("expected a number"));
  CHECK_THROWS_WITH(BertConfig::from_json(with("layer_norm_eps", 1e39), "x.json"), Contains("float's range"));
  CHECK_THROWS_WITH(BertConfig::from_json(with("hidden_act", 5), "x.json"), Contains("hidden_act") && Contains("expected a string"));
  // range checks run after reading, and name the file too
  CHECK_THROWS_WITH(BertConfig::from_json(with("hidden_dropout_prob", 1.5), "y.json"),
                    Contains("[BertConfig] hidden_dropout_prob 1.5 is not in [0, 1)") && Contains("(in y.json)"));
  CHECK_THROWS_WITH(BertConfig::from_json(with("vocab_size", 0), "y.json"), Contains("vocab_size must be positive"));
  CHECK_THROWS_WITH(BertConfig::from_json(with("pad_token_id", -1), "y.json"), Contains("pad_token_id must not be negative, got -1"));
  CHECK_THROWS_WITH(BertConfig::from_json(with("pad_token_id", 30), "y.json"), Contains("pad_token_id 30 is outside the vocabulary of 30"));
  CHECK_THROWS_WITH(BertConfig::from_json(with("initializer_range", 0), "y.json"), Contains("initializer_range 0 must be > 0"));
  CHECK_THROWS_WITH(BertConfig::from_json(with("hidden_act", "swish"), "y.json"), Contains("hidden_act") && Contains("'swish'"));
  CHECK_THROWS_WITH(BertConfig::from_json(with("position_embedding_type", "relative_key"), "y.json"),
                    Contains("position_embedding_type 'relative_key' is not supported"));
  // a decoder's causal or cross attention would be computed as an encoder's, without a word
  CHECK_THROWS_WITH(BertConfig::from_json(with("is_decoder", true), "y.json"), Contains("y.json: is_decoder true is not supported"));
  CHECK_THROWS_WITH(BertConfig::from_json(with("add_cross_attention", true), "y.json"), Contains("add_cross_attention true"));
  CHECK(BertConfig::from_json(with("is_decoder", false), "y.json").hidden_size > 0);
  CHECK_THROWS_WITH(BertConfig::from_json(nlohmann::json::array(), "z.json"), Contains("z.json: not a JSON object"));
  CHECK_THROWS_WITH(BertConfig::from_file("/nonexistent/config.json"), Contains("/nonexistent/config.json"));
}

TEST_CASE("model inputs: sequences padded with a mask, dense rows, and their errors", "[inputs]") {
  const ModelInputs in = pad_sequences({{{5, 6, 7}, {0, 0, 1}}, {{8}, {}}}, /*pad_id=*/1);
  CHECK(in.batch() == 2);
  CHECK(in.seq_len() == 3);
  CHECK(in.input_ids.dtype() == Dtype::Int64);
  CHECK(in.input_ids.shape() == Shape{2, 3});
  CHECK(in.input_ids.to_ints() == std::vector<int64_t>{5, 6, 7, 8, 1, 1});
  CHECK(in.token_type_ids.to_ints() == std::vector<int64_t>{0, 0, 1, 0, 0, 0});
  CHECK(in.attention_mask.to_vector() == std::vector<float>{1, 1, 1, 1, 0, 0});
  CHECK(pad_sequences({{{5}, {}}}, 0, 4).input_ids.to_ints() == std::vector<int64_t>{5, 0, 0, 0});
  CHECK_THROWS_WITH(pad_sequences({{{5, 6, 7}, {}}}, 0, 2), Contains("3 tokens") && Contains("length 2"));
  CHECK_THROWS_WITH(pad_sequences({{{5, 6}, {0}}}, 0), Contains("2 ids but 1 type ids"));
  const ModelInputs dense = make_inputs(1, 3, {4, 5, 6}, {}, {1, 1, 0});
  CHECK(dense.attention_mask.to_vector() == std::vector<float>{1, 1, 0});
  CHECK_THROWS_WITH(make_inputs(1, 3, {4, 5, 6}, {}, {1, 1}), Contains("2 attention_mask values for a 1 x 3 batch"));
  const InputLimits limits = small_config().input_limits();
  ModelInputs bad = dense;
  bad.position_ids = ints({0, 1}, {1, 2});
  CHECK_THROWS_WITH(bad.validate(limits), Contains("position_ids has shape [1, 2], expected [1, 3]"));
  bad.position_ids = ints({0, 1, 10}, {1, 3});
  CHECK_THROWS_WITH(bad.validate(limits), Contains("position id 10 at position 2") && Contains("max_position_embeddings 10"));
  bad.position_ids = Tensor();
  bad.token_type_ids = ints({0, 2, 0}, {1, 3});
  CHECK_THROWS_WITH(bad.validate(limits), Contains("token type 2"));
}

TEST_CASE("position ids: given ones are used, 0..T-1 by default, a family may override the default", "[inputs][bert]") {
  const BertConfig c = small_config();
  BertModel plain(c), offset(c, true, std::make_shared<PaddingOffsetEmbeddings>(c));
  Generator g1(11), g2(11);
  plain.init_weights(g1);
  offset.init_weights(g2);  // same shapes in the same order: the same weights
  plain.eval();
  offset.eval();
  ModelInputs in = pad_sequences({{{5, 6, 7, 8}, {}}, {{9, 4}, {}}}, c.pad_token_id);
  const auto by_default = hidden(plain, in);
  in.position_ids = ints({0, 1, 2, 3, 0, 1, 2, 3}, {2, 4});
  CHECK(hidden(plain, in) == by_default);
  in.position_ids = ints({1, 2, 3, 4, 1, 2, 3, 4}, {2, 4});
  const auto shifted = hidden(plain, in);
  CHECK(shifted != by_default);
  // RoBERTa-style defaults equal BERT's embeddings fed those positions explicitly
  in.position_ids = ints({2, 3, 4, 5, 2, 3, 1, 1}, {2, 4});
  const auto explicit_offsets = hidden(plain, in);
  in.position_ids = Tensor();
  CHECK(hidden(offset, in) == explicit_offsets);
  // explicit position ids are checked against the table
  in.position_ids = ints({0, 1, 2, 3, 0, 1, 2, 99}, {2, 4});
  CHECK_THROWS_WITH(plain.forward(in), Contains("position id 99"));
}
