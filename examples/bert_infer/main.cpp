// Inference with a Hugging Face BERT checkpoint directory (config.json + model.safetensors):
//   bert_infer dump --model DIR --inputs IN.safetensors --out OUT.safetensors [--grads]
//   bert_infer tokenize --vocab FILE [--cased]                < lines   (ids of [CLS] line [SEP])
//   bert_infer fill-mask --model DIR --text "the [MASK] sat on the mat" [--top-k 5] [--cased]
//   bert_infer embed --model DIR [--pooling cls|mean] [--batch N] [--cased] < lines   (a vector per line)
// Each subcommand takes --help.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>

#include "models/checkpoint.hpp"
#include "text/bert_tokenizer.hpp"
#include "util/cli.hpp"

using namespace xg;
namespace fs = std::filesystem;

namespace {

// Each subcommand's flags, with their defaults.
struct DumpArgs {
  std::string model, inputs, out;
  bool grads = false;
};
struct TokenizeArgs {
  std::string vocab;
  bool cased = false;
};
struct FillMaskArgs {
  std::string model, text;
  size_t top_k = 5;
  bool cased = false;
};
struct EmbedArgs {
  std::string model, pooling = "cls";
  size_t batch = 32;
  bool cased = false;
};

text::BertTokenizer tokenizer_for(const std::string& dir, bool cased) {
  const std::string vocab = (fs::path(dir) / "vocab.txt").string();
  if (!fs::exists(vocab)) throw std::runtime_error(fmt::format("{}: no vocab.txt in the model directory", dir));
  text::TokenizerOptions o;
  o.lowercase = !cased;
  return text::BertTokenizer::from_file(vocab, o);
}

models::LoadedBert load_model(const std::string& dir) {
  auto loaded = models::load_pretrained(dir);
  for (const auto& n : loaded.notes) fmt::print(stderr, "note: {}\n", n);
  loaded.model->eval();
  return loaded;
}

int dump(const DumpArgs& a) {
  auto loaded = load_model(a.model);
  auto& model = *loaded.model;
  const std::string& in_path = a.inputs;
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
  const bool grads = a.grads;
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
  nn::safetensors::write(a.out, out, {{"producer", "bert_infer dump"}});
  fmt::print(stderr, "wrote {} tensors to {}\n", out.size(), a.out);
  return 0;
}

int tokenize(const TokenizeArgs& a) {
  text::TokenizerOptions o;
  o.lowercase = !a.cased;
  const auto tok = text::BertTokenizer::from_file(a.vocab, o);
  std::string line;
  for (size_t n = 1; std::getline(std::cin, line); ++n) {
    const auto e = tok.encode(line);
    std::string s;
    for (size_t i = 0; i < e.ids.size(); ++i) s += (i ? " " : "") + std::to_string(e.ids[i]);
    fmt::print("{}\n", s);
  }
  return 0;
}

int fill_mask(const FillMaskArgs& a) {
  const auto tok = tokenizer_for(a.model, a.cased);
  auto loaded = load_model(a.model);
  const size_t k = a.top_k;
  const auto e = tok.encode(a.text);
  models::BertInputs in;
  in.batch = 1;
  in.seq_len = e.ids.size();
  in.input_ids.assign(e.ids.begin(), e.ids.end());
  NoGradGuard no_grad;
  const auto full = loaded.model->forward_full(in);
  const size_t V = loaded.model->config.vocab_size;
  size_t masks = 0;
  for (size_t t = 0; t < e.ids.size(); ++t) {
    if (e.ids[t] != tok.mask_id()) continue;
    ++masks;
    const Tensor probs = softmax(slice(reshape(full.prediction_logits, {long(in.seq_len), long(V)}), 0, long(t), long(t) + 1));
    std::vector<int32_t> order(V);
    for (size_t i = 0; i < V; ++i) order[i] = int32_t(i);
    std::partial_sort(order.begin(), order.begin() + long(std::min(k, V)), order.end(),
                      [&](int32_t x, int32_t y) { return probs.data()[x] > probs.data()[y]; });
    fmt::print("[MASK] at token {}:\n", t);
    for (size_t i = 0; i < std::min(k, V); ++i) {
      std::vector<int32_t> filled(e.ids.begin(), e.ids.end());
      filled[t] = order[i];
      fmt::print("  {:.4f}  {:<15} {}\n", probs.data()[order[i]], tok.vocab().token(order[i]), tok.decode(filled));
    }
  }
  if (masks == 0) throw std::invalid_argument("fill-mask: the text has no [MASK]");
  return 0;
}

int embed(const EmbedArgs& a) {
  const std::string& pooling = a.pooling;
  const auto tok = tokenizer_for(a.model, a.cased);
  auto loaded = load_model(a.model);
  const size_t batch = a.batch;
  text::EncodeOptions eo;
  eo.max_length = loaded.model->config.max_position_embeddings;
  eo.pad_to_longest = true;
  std::vector<std::string> lines;
  auto flush = [&] {
    if (lines.empty()) return;
    const auto enc = tok.encode_batch(lines, eo);
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
  CLI::App app{"Inference with a Hugging Face BERT checkpoint directory (config.json + model.safetensors).", "bert_infer"};
  xg::cli::show_defaults(app);
  app.require_subcommand(1);

  DumpArgs d;
  auto* dump_cmd = app.add_subcommand("dump", "Runs a batch through the model; writes its outputs (and gradients)");
  dump_cmd->add_option("--model", d.model, "checkpoint directory")->required()->type_name("DIR");
  dump_cmd->add_option("--inputs", d.inputs, "inputs")->required()->type_name("IN.safetensors");
  dump_cmd->add_option("--out", d.out, "outputs")->required()->type_name("OUT.safetensors");
  dump_cmd->add_flag("--grads", d.grads, "also write grad.<parameter> (needs labels in IN)");
  dump_cmd->footer(
      "IN: input_ids, attention_mask, token_type_ids (I64/I32, [B, T]), optional labels [B, T]\n"
      "(-100 = not predicted) and next_sentence_label [B]. OUT (F32): last_hidden_state, pooler_output,\n"
      "prediction_logits, seq_relationship_logits, and with labels loss, mlm_loss, nsp_loss; --grads adds\n"
      "grad.<parameter> under the checkpoint's names. Dropout is off.");

  TokenizeArgs t;
  auto* tokenize_cmd = app.add_subcommand("tokenize", "Each stdin line -> ids of [CLS] line [SEP]");
  tokenize_cmd->add_option("--vocab", t.vocab, "WordPiece vocab.txt")->required()->type_name("FILE");
  tokenize_cmd->add_flag("--cased", t.cased, "keep case and accents");

  FillMaskArgs f;
  auto* fill_mask_cmd = app.add_subcommand("fill-mask", "The most likely tokens for each [MASK] in the text");
  fill_mask_cmd->add_option("--model", f.model, "checkpoint directory (with vocab.txt)")->required()->type_name("DIR");
  fill_mask_cmd->add_option("--text", f.text, "text with one or more [MASK]")->required();
  xg::cli::add_number(*fill_mask_cmd, "--top-k", f.top_k, "candidates shown per [MASK]")->check(xg::cli::positive());
  fill_mask_cmd->add_flag("--cased", f.cased, "keep case and accents");

  EmbedArgs e;
  auto* embed_cmd = app.add_subcommand("embed", "Each stdin line -> one vector (the last hidden layer, pooled)");
  embed_cmd->add_option("--model", e.model, "checkpoint directory (with vocab.txt)")->required()->type_name("DIR");
  embed_cmd->add_option("--pooling", e.pooling, "the [CLS] vector or the mean over tokens")
      ->check(CLI::IsMember({"cls", "mean"}));
  xg::cli::add_number(*embed_cmd, "--batch", e.batch, "lines per forward pass")->check(xg::cli::positive());
  embed_cmd->add_flag("--cased", e.cased, "keep case and accents");

  if (auto code = xg::cli::parse_or_exit(app, argc, argv)) return *code;
  try {
    if (*dump_cmd) return dump(d);
    if (*tokenize_cmd) return tokenize(t);
    if (*fill_mask_cmd) return fill_mask(f);
    return embed(e);
  } catch (const std::exception& ex) {
    fmt::print(stderr, "bert_infer: {}\n", ex.what());
    return 1;
  }
}
