// Inference with a Hugging Face BERT checkpoint directory (config.json + model.safetensors, and
// the tokenizer's files: vocab.txt, tokenizer_config.json, special_tokens_map.json):
//   bert_infer dump --model DIR --inputs IN.safetensors --out OUT.safetensors [--grads]
//   bert_infer tokenize --model DIR | --vocab FILE [--cased]   < lines   (ids of [CLS] line [SEP])
//   bert_infer fill-mask --model DIR --text "the [MASK] sat on the mat" [--top-k 5]
//   bert_infer embed --model DIR [--pooling cls|mean] [--batch N] < lines   (one vector per line)
// --vocab FILE [--cased] overrides the model directory's tokenizer.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <string>

#include "models/checkpoint.hpp"
#include "text/load_tokenizer.hpp"

using namespace xg;

namespace {

struct Args {
  std::string command;
  std::map<std::string, std::string> values;
  bool has(const std::string& k) const { return values.count(k) > 0; }
  std::string get(const std::string& k, const std::string& fallback = "") const {
    auto it = values.find(k);
    return it == values.end() ? fallback : it->second;
  }
  std::string need(const std::string& k) const {
    if (!has(k)) throw std::invalid_argument(fmt::format("{} needs {}", command, k));
    return values.at(k);
  }
};

int usage(int code) {
  fmt::print(
      "usage:\n"
      "  bert_infer dump --model DIR --inputs IN.safetensors --out OUT.safetensors [--grads]\n"
      "      IN: input_ids, attention_mask, token_type_ids (I64/I32, [B, T]), optional labels [B, T]\n"
      "      (-100 = not predicted) and next_sentence_label [B]. OUT (F32): last_hidden_state, pooler_output,\n"
      "      prediction_logits, seq_relationship_logits, and with labels loss, mlm_loss, nsp_loss; --grads adds\n"
      "      grad.<parameter> under the checkpoint's names. Dropout is off.\n"
      "  bert_infer tokenize --model DIR | --vocab FILE [--cased]   each stdin line -> ids of [CLS] line [SEP]\n"
      "  bert_infer fill-mask --model DIR --text TEXT [--top-k 5]\n"
      "  bert_infer embed --model DIR [--pooling cls|mean] [--batch 32]   each stdin line -> a vector\n"
      "  The model directory's tokenizer files are used unless --vocab FILE [--cased] overrides them.\n");
  return code;
}

// --vocab FILE [--cased] when given, else the tokenizer files of --model DIR.
std::unique_ptr<text::Tokenizer> tokenizer_for(const Args& a) {
  if (a.has("--vocab")) {
    text::TokenizerOptions o;
    o.lowercase = !a.has("--cased");
    return text::open_tokenizer(a.get("--vocab"), o);
  }
  if (a.has("--cased"))
    throw std::invalid_argument(fmt::format("{}: --cased applies to --vocab; without it the model directory's "
                                            "tokenizer_config.json (do_lower_case) decides", a.command));
  return text::load_tokenizer(a.need("--model"));
}

models::LoadedBert load_model(const std::string& dir) {
  auto loaded = models::load_pretrained(dir);
  for (const auto& n : loaded.notes) fmt::print(stderr, "note: {}\n", n);
  loaded.model->eval();
  return loaded;
}

int dump(const Args& a) {
  auto loaded = load_model(a.need("--model"));
  auto& model = *loaded.model;
  const std::string in_path = a.need("--inputs");
  const auto file = nn::safetensors::read(in_path);
  auto ints = [&](const std::string& name, bool required) -> std::pair<Shape, std::vector<int64_t>> {
    auto it = file.tensors.find(name);
    if (it == file.tensors.end()) {
      if (required) throw std::runtime_error(fmt::format("{}: no '{}' tensor", in_path, name));
      return {};
    }
    return {it->second.shape, nn::safetensors::to_int64(it->second, name)};
  };
  const auto [ids_shape, ids] = ints("input_ids", true);
  if (ids_shape.size() != 2) throw std::runtime_error(fmt::format("{}: input_ids must be [B, T], got {}", in_path, shape_str(ids_shape)));
  models::BertInputs in;
  in.batch = ids_shape[0];
  in.seq_len = ids_shape[1];
  in.input_ids = ids;
  auto check_shape = [&](const char* name, const Shape& s, const Shape& want) {
    if (s != want) throw std::runtime_error(fmt::format("{}: {} has shape {}, expected {}", in_path, name, shape_str(s), shape_str(want)));
  };
  if (auto [s, v] = ints("token_type_ids", false); !v.empty()) {
    check_shape("token_type_ids", s, ids_shape);
    in.token_type_ids = v;
  }
  if (auto [s, v] = ints("attention_mask", false); !v.empty()) {
    check_shape("attention_mask", s, ids_shape);
    in.attention_mask = Tensor::empty(ids_shape);
    for (size_t i = 0; i < v.size(); ++i) in.attention_mask.data()[i] = float(v[i]);
  }
  const auto [label_shape, labels] = ints("labels", false);
  const auto [nsp_shape, nsp] = ints("next_sentence_label", false);
  const bool with_labels = !labels.empty();
  if (with_labels) check_shape("labels", label_shape, ids_shape);
  if (with_labels && nsp.empty()) throw std::runtime_error(fmt::format("{}: labels need next_sentence_label too", in_path));
  if (!nsp.empty()) check_shape("next_sentence_label", nsp_shape, {in.batch});
  const bool grads = a.has("--grads");
  if (grads && !with_labels) throw std::runtime_error("dump --grads needs labels and next_sentence_label in the inputs");

  nn::StateDict out;
  {
    std::unique_ptr<NoGradGuard> no_grad;
    if (!grads) no_grad = std::make_unique<NoGradGuard>();
    auto full = model.forward_full(in);
    out["last_hidden_state"] = full.base.last_hidden_state;
    out["pooler_output"] = full.base.pooler_output;
    out["prediction_logits"] = full.prediction_logits;
    out["seq_relationship_logits"] = full.seq_relationship_logits;
    if (with_labels) {
      const size_t V = model.config.vocab_size;
      const Tensor mlm = cross_entropy(reshape(full.prediction_logits, {-1, long(V)}), labels, -100);
      const Tensor nsp_loss = cross_entropy(full.seq_relationship_logits, nsp);
      const Tensor loss = add(mlm, nsp_loss);
      out["loss"] = loss;
      out["mlm_loss"] = mlm;
      out["nsp_loss"] = nsp_loss;
      if (grads) {
        loss.backward();
        for (auto& [n, p] : model.named_parameters()) {
          auto it = loaded.file_names.find(n);
          out["grad." + (it == loaded.file_names.end() ? n : it->second)] = p.grad();
        }
      }
    }
  }
  for (auto& [n, t] : out) t = t.detach();
  nn::safetensors::write(a.need("--out"), out, {{"producer", "bert_infer dump"}});
  fmt::print(stderr, "wrote {} tensors to {}\n", out.size(), a.need("--out"));
  return 0;
}

int tokenize(const Args& a) {
  if (!a.has("--vocab") && !a.has("--model")) throw std::invalid_argument("tokenize needs --model DIR or --vocab FILE");
  const auto tok = tokenizer_for(a);
  std::string line;
  for (size_t n = 1; std::getline(std::cin, line); ++n) {
    const auto e = tok->encode(line);
    std::string s;
    for (size_t i = 0; i < e.ids.size(); ++i) s += (i ? " " : "") + std::to_string(e.ids[i]);
    fmt::print("{}\n", s);
  }
  return 0;
}

int fill_mask(const Args& a) {
  const std::string dir = a.need("--model");
  const auto tok = tokenizer_for(a);
  auto loaded = load_model(dir);
  const size_t k = std::stoul(a.get("--top-k", "5"));
  const auto e = tok->encode(a.need("--text"));
  models::BertInputs in;
  in.batch = 1;
  in.seq_len = e.ids.size();
  in.input_ids.assign(e.ids.begin(), e.ids.end());
  NoGradGuard no_grad;
  const auto full = loaded.model->forward_full(in);
  const size_t V = loaded.model->config.vocab_size;
  size_t masks = 0;
  for (size_t t = 0; t < e.ids.size(); ++t) {
    if (e.ids[t] != tok->mask_id()) continue;
    ++masks;
    const Tensor probs = softmax(slice(reshape(full.prediction_logits, {long(in.seq_len), long(V)}), 0, long(t), long(t) + 1));
    std::vector<int32_t> order(V);
    for (size_t i = 0; i < V; ++i) order[i] = int32_t(i);
    std::partial_sort(order.begin(), order.begin() + long(std::min(k, V)), order.end(),
                      [&](int32_t x, int32_t y) { return probs.data()[x] > probs.data()[y]; });
    fmt::print("{} at token {}:\n", tok->special_tokens().mask, t);
    for (size_t i = 0; i < std::min(k, V); ++i) {
      std::vector<int32_t> filled(e.ids.begin(), e.ids.end());
      filled[t] = order[i];
      fmt::print("  {:.4f}  {:<15} {}\n", probs.data()[order[i]], tok->id_to_token(order[i]), tok->decode(filled));
    }
  }
  if (masks == 0) throw std::invalid_argument(fmt::format("fill-mask: the text has no {}", tok->special_tokens().mask));
  return 0;
}

int embed(const Args& a) {
  const std::string dir = a.need("--model");
  const std::string pooling = a.get("--pooling", "cls");
  if (pooling != "cls" && pooling != "mean") throw std::invalid_argument(fmt::format("embed: --pooling {}: use cls or mean", pooling));
  const auto tok = tokenizer_for(a);
  auto loaded = load_model(dir);
  const size_t batch = std::stoul(a.get("--batch", "32"));
  text::EncodeOptions eo;
  eo.max_length = loaded.model->config.max_position_embeddings;
  eo.pad_to_longest = true;
  std::vector<std::string> lines;
  auto flush = [&] {
    if (lines.empty()) return;
    const auto enc = tok->encode_batch(lines, eo);
    models::BertInputs in;
    in.batch = enc.size();
    in.seq_len = enc[0].size();
    in.attention_mask = Tensor::empty({in.batch, in.seq_len});
    for (size_t b = 0; b < enc.size(); ++b)
      for (size_t t = 0; t < in.seq_len; ++t) {
        in.input_ids.push_back(enc[b].ids[t]);
        in.token_type_ids.push_back(0);
        in.attention_mask.data()[b * in.seq_len + t] = float(enc[b].attention_mask[t]);
      }
    NoGradGuard no_grad;
    const Tensor h = loaded.model->bert->forward(in).last_hidden_state;
    const size_t H = h.size(2);
    for (size_t b = 0; b < in.batch; ++b) {
      std::vector<double> v(H, 0.0);
      size_t n = 0;
      for (size_t t = 0; t < in.seq_len; ++t) {
        if (pooling == "cls" ? t != 0 : enc[b].attention_mask[t] == 0) continue;
        for (size_t i = 0; i < H; ++i) v[i] += h.data()[(b * in.seq_len + t) * H + i];
        ++n;
      }
      std::string s;
      for (size_t i = 0; i < H; ++i) s += fmt::format("{}{:.6g}", i ? " " : "", v[i] / double(n));
      fmt::print("{}\n", s);
    }
    lines.clear();
  };
  std::string line;
  while (std::getline(std::cin, line)) {
    lines.push_back(line);
    if (lines.size() == batch) flush();
  }
  flush();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") return usage(argc < 2 ? 2 : 0);
  Args a;
  a.command = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    if (k.rfind("--", 0) != 0) {
      fmt::print(stderr, "bert_infer: unexpected argument '{}'\n", k);
      return usage(2);
    }
    if (k == "--grads" || k == "--cased") a.values[k] = "1";
    else if (i + 1 < argc) a.values[k] = argv[++i];
    else {
      fmt::print(stderr, "bert_infer: {} needs a value\n", k);
      return 2;
    }
  }
  try {
    if (a.command == "dump") return dump(a);
    if (a.command == "tokenize") return tokenize(a);
    if (a.command == "fill-mask") return fill_mask(a);
    if (a.command == "embed") return embed(a);
    fmt::print(stderr, "bert_infer: unknown command '{}'\n", a.command);
    return usage(2);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bert_infer: {}\n", e.what());
    return 1;
  }
}
