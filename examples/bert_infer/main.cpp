// Inference with a Hugging Face BERT checkpoint directory (config.json + model.safetensors, and
// the tokenizer's files: vocab.txt, tokenizer_config.json, special_tokens_map.json):
//   bert_infer dump --model DIR --inputs IN.safetensors --out OUT.safetensors [--grads]
//   bert_infer tokenize --model DIR | --tokenizer FILE|DIR [--cased]   < lines   (ids with the family's template)
//   bert_infer fill-mask --model DIR --text "the [MASK] sat on the mat" [--top-k 5]
//   bert_infer embed --model DIR [--pooling cls|mean] [--normalize] [--batch N] < lines   (one vector per line;
//     --pooling mean --normalize gives sentence-transformers' embeddings of all-MiniLM-L6-v2)
//   bert_infer qa --model DIR [--input FILE]  < {"question": ..., "context": ...} lines   (answer, span, score)
//   bert_infer ner --model DIR [--jsonl] [--batch N] < lines   (entities of each line as one JSON line;
//     DIR is a *ForTokenClassification checkpoint, e.g. OUT/best of bert_finetune --task ner)
//   bert_infer classify --model DIR [--jsonl] [--top-k K] [--batch N] < lines   (a fine-tuned *ForSequenceClassification:
//     each line's labels with their probabilities, or its value for regression; a TAB separates a pair)
//   bert_infer bench --model PRESET|DIR [--batch 8] [--seq-len 128] [--steps 20] [--threads N] [--precision fp32|bf16|int8]
//                    [--sentences FILE [--vocab PATH]] [--first-token]
//     (the encoder's forward pass on random ids, no tape: prints tokens/s last; bf16 and int8 also
//     print their difference from fp32)
// --tokenizer (or --vocab) FILE|DIR [--cased] overrides the model directory's tokenizer. Each subcommand takes --help.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "autograd/parallel.hpp"
#include "examples/bert_infer/checkpoint_args.hpp"
#include "examples/bert_infer/qa.hpp"
#include "inference/benchmark.hpp"
#include "inference/ner_tagging.hpp"
#include "models/core/head_config.hpp"
#include "models/core/sentence_embedding.hpp"
#include "nn/fused_encoder.hpp"
#include "nn/safetensors.hpp"
#include "util/cli.hpp"
#include "util/json_input.hpp"

using namespace xg;
using infer::ModelArgs;

namespace {

// Each subcommand's flags, with their defaults.
struct DumpArgs {
  std::string model, inputs, out;
  bool grads = false;
};
struct TokenizeArgs {
  ModelArgs tok;
};
struct FillMaskArgs {
  ModelArgs tok;
  size_t top_k = 5;
  size_t batch = 32;
};
struct EmbedArgs {
  ModelArgs tok;
  std::string pooling = "cls";
  bool normalize = false;
  size_t batch = 32;
};
struct BenchArgs {
  inference::InferenceBenchmarkOptions opt;
  std::string precision = "fp32";
};
struct NerArgs {
  ModelArgs tok;
  bool jsonl = false;
  size_t batch = 32;
  text::WordAlignOptions align;
};

struct ClassifyArgs {
  ModelArgs tok;
  bool jsonl = false;
  size_t top_k = 1;
  size_t batch = 32;
  size_t max_len = 512;  // capped at what the model's positions hold (infer::max_tokens)
};

// Encodes an input line, naming it (`where`) in errors (invalid UTF-8, ...).
text::Encoding encode_line(const text::Tokenizer& tok, const std::string& line, const std::string& where,
                           const text::EncodeOptions& eo = {}) {
  try {
    return tok.encode(line, eo);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: {}", where, e.what()));
  }
}

// Integer tensors of the inputs file: model inputs by name, every other one a label.
bool is_model_input(const std::string& name) {
  return name == "input_ids" || name == "token_type_ids" || name == "attention_mask" || name == "position_ids";
}

int dump(const DumpArgs& a) {
  if (std::filesystem::is_directory(a.out))
    throw std::invalid_argument(fmt::format("dump --out {}: a directory; give the output file's name", a.out));
  auto loaded = infer::load_model(infer::model_directory(a.model));
  auto& model = *loaded.model;
  const std::string& in_path = a.inputs;
  const auto file = nn::safetensors::read(in_path);
  auto it = file.tensors.find("input_ids");
  if (it == file.tensors.end()) throw std::runtime_error(fmt::format("{}: no 'input_ids' tensor", in_path));
  const Shape ids_shape = it->second.shape;
  if (ids_shape.size() != 2) throw std::runtime_error(fmt::format("{}: input_ids must be [B, T], got {}", in_path, shape_str(ids_shape)));
  std::map<std::string, std::vector<int64_t>> inputs;
  models::Labels labels;
  for (const auto& [name, e] : file.tensors) {
    const bool integers = e.dtype == nn::safetensors::DType::I64 || e.dtype == nn::safetensors::DType::I32;
    if (is_model_input(name) && !integers)  // ids read as floats would be silently dropped
      throw std::runtime_error(fmt::format("{}: {} is {}; model inputs are integers (I64 or I32)", in_path, name,
                                           nn::safetensors::dtype_name(e.dtype)));
    if (!integers) continue;  // e.g. reference outputs
    if (is_model_input(name) && e.shape != ids_shape)
      throw std::runtime_error(fmt::format("{}: {} has shape {}, expected {}", in_path, name, shape_str(e.shape), shape_str(ids_shape)));
    std::vector<int64_t> values = nn::safetensors::to_int64(e, name);
    if (is_model_input(name))
      inputs[name] = std::move(values);
    else
      labels[name] = Tensor::from_ints(values, e.shape);
  }
  const models::ModelInputs in = models::make_inputs(ids_shape[0], ids_shape[1], inputs["input_ids"], inputs["token_type_ids"],
                                                     inputs["attention_mask"], inputs["position_ids"]);
  const bool grads = a.grads;
  if (grads && labels.empty()) throw std::runtime_error("dump --grads needs labels in the inputs (to have a loss)");

  nn::StateDict out;
  {
    // every position as transformers computes it, padding included (the fused and packed paths
    // zero padded positions, and question answering's loss then leaves them out)
    nn::ExecutionOptions recorded = model.execution();
    recorded.fused_inference = recorded.padding_free = false;
    model.set_execution(recorded);
    std::unique_ptr<NoGradGuard> no_grad;
    if (!grads) no_grad = std::make_unique<NoGradGuard>();
    out = model.forward_named(in, labels);
    if (grads) {
      out.at("loss").backward();
      std::vector<std::string> unreached;  // parameters this forward does not use (an ELECTRA discriminator's generator)
      for (auto& [n, p] : model.named_parameters()) {
        if (!p.grad().defined()) {
          unreached.push_back(n);
          continue;
        }
        auto f = loaded.file_names.find(n);
        out["grad." + (f == loaded.file_names.end() ? n : f->second)] = p.grad();
      }
      if (!unreached.empty())
        fmt::print(stderr, "note: {} parameters get no gradient from {}'s forward, so no grad.*: {}{}\n", unreached.size(),
                   model.architecture(), unreached.front(), unreached.size() > 1 ? ", ..." : "");
    }
  }
  for (auto& [n, t] : out) t = t.detach();
  nn::safetensors::write(a.out, out, {{"producer", "bert_infer dump"}});
  fmt::print(stderr, "wrote {} tensors to {}\n", out.size(), a.out);
  return 0;
}

int tokenize(const TokenizeArgs& a) {
  if (a.tok.vocab.empty() && a.tok.model.empty()) throw std::invalid_argument("tokenize needs --model DIR or --tokenizer FILE");
  const auto tok = infer::tokenizer_for(a.tok, "tokenize");
  infer::Inputs inputs(a.tok);
  std::string line;
  for (size_t n = 1; inputs.next(line); ++n) {
    const auto e = encode_line(*tok, line, inputs.where(n));
    std::string s;
    for (size_t i = 0; i < e.ids.size(); ++i) s += (i ? " " : "") + std::to_string(e.ids[i]);
    fmt::print("{}\n", s);
  }
  return 0;
}

// Reads the inputs in batches of `batch` lines; `run(lines, first)` gets each batch and the
// 1-based number of its first line.
template <class Run>
void for_each_batch(infer::Inputs& inputs, size_t batch, Run run) {
  std::vector<std::string> lines;
  size_t first = 1;
  std::string line;
  while (inputs.next(line)) {
    lines.push_back(line);
    if (lines.size() == batch) {
      run(lines, first);
      first += lines.size();
      lines.clear();
    }
  }
  if (!lines.empty()) run(lines, first);
}

// Each input's masks, a blank line between inputs.
int fill_mask(const FillMaskArgs& a) {
  const inference::Pipeline p = infer::open_checkpoint(a.tok, "fill-mask");
  infer::Inputs inputs(a.tok);
  bool first_input = true;
  for_each_batch(inputs, a.batch, [&](const std::vector<std::string>& lines, size_t first) {
    for (const auto& masks : p.fill_mask(lines, a.top_k, [&](size_t i) { return inputs.where(first + i); })) {
      if (!first_input) fmt::print("\n");
      first_input = false;
      for (const auto& candidates : masks) {
        fmt::print("{} at token {}:\n", p.tokenizer().special_tokens().mask, candidates.front().position);
        for (const auto& c : candidates) fmt::print("  {:.4f}  {:<15} {}\n", c.score, c.token, c.sequence);
      }
    }
  });
  return 0;
}

int embed(const EmbedArgs& a) {
  inference::Pipeline p = infer::open_checkpoint(a.tok, "embed");
  p.set_batch(a.batch);
  const models::Pooling pooling = models::pooling_from_name(a.pooling);
  infer::Inputs inputs(a.tok);
  for_each_batch(inputs, a.batch, [&](const std::vector<std::string>& lines, size_t first) {
    const auto vectors = p.embed(lines, pooling, a.normalize, [&](size_t i) { return inputs.where(first + i); });
    for (const auto& v : vectors) {
      std::string s;
      for (size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{:.8g}", i ? " " : "", v[i]);
      fmt::print("{}\n", s);
    }
  });
  return 0;
}

// One input of classify: a line "text[<TAB>text_b]", or a JSON object {"text": ..., "text_b": ...}.
models::Sequence encode_input(const text::Tokenizer& tok, const std::string& line, const std::string& where, bool jsonl,
                              const text::EncodeOptions& eo) {
  std::string a = line, b;
  bool pair = false;
  if (jsonl) {
    nlohmann::json j;
    try {
      j = parse_json_bounded(line);
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument(fmt::format("{}: not valid JSON ({})", where, e.what()));
    }
    auto text_of = [&](const char* key) {
      if (!j.is_object() || !j.contains(key) || !j[key].is_string())
        throw std::invalid_argument(fmt::format("{}: expected {{\"text\": \"...\"}} with an optional \"text_b\", got {}", where, json_summary(j)));
      return j[key].get<std::string>();
    };
    a = text_of("text");
    pair = j.contains("text_b");
    if (pair) b = text_of("text_b");
  } else if (const size_t tab = line.find('\t'); tab != std::string::npos) {
    a = line.substr(0, tab);
    b = line.substr(tab + 1);
    pair = true;
  }
  try {
    const text::Encoding e = pair ? tok.encode_pair(a, b, eo) : tok.encode(a, eo);
    return {{e.ids.begin(), e.ids.end()}, {e.type_ids.begin(), e.type_ids.end()}};
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: {}", where, e.what()));
  }
}

int classify(const ClassifyArgs& a) {
  inference::Pipeline p = infer::open_checkpoint(a.tok, "classify", "ForSequenceClassification", "a sequence classifier");
  p.set_batch(a.batch);
  const bool regression = p.head_config().is_regression();
  text::EncodeOptions eo;
  eo.max_length = std::min(a.max_len, p.max_tokens());
  infer::Inputs inputs(a.tok);
  for_each_batch(inputs, a.batch, [&](const std::vector<std::string>& lines, size_t first) {
    std::vector<models::Sequence> sequences;
    for (size_t i = 0; i < lines.size(); ++i)
      sequences.push_back(encode_input(p.tokenizer(), lines[i], inputs.where(first + i), a.jsonl, eo));
    for (const auto& labels : p.classify_encoded(sequences, a.top_k)) {
      std::string row;  // label<TAB>probability for the top k, or a regression's value
      for (size_t i = 0; i < labels.size(); ++i)
        row += regression ? fmt::format("{:.6g}", labels[i].score)
                          : fmt::format("{}{}\t{:.6f}", i ? "\t" : "", labels[i].label, labels[i].score);
      fmt::print("{}\n", row);
    }
  });
  return 0;
}

// A JSONL line's "text", naming the line when it is not an object with a string "text".
std::string jsonl_text(const std::string& line, const std::string& where) {
  nlohmann::json j;
  try {
    j = parse_json_bounded(line);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("{}: not valid JSON ({})", where, e.what()));
  }
  if (!j.is_object() || !j.contains("text") || !j.at("text").is_string())
    throw std::invalid_argument(fmt::format("{}: expected an object with a string \"text\", got {}", where, json_summary(j)));
  return j.at("text").get<std::string>();
}

int ner(const NerArgs& a) {
  inference::Pipeline p = infer::open_checkpoint(a.tok, "ner", "ForTokenClassification", "a *ForTokenClassification model");
  p.set_batch(a.batch);
  infer::Inputs inputs(a.tok);
  for_each_batch(inputs, a.batch, [&](const std::vector<std::string>& lines, size_t first) {
    std::vector<std::string> texts;
    for (size_t i = 0; i < lines.size(); ++i) texts.push_back(a.jsonl ? jsonl_text(lines[i], inputs.where(first + i)) : lines[i]);
    const auto found = p.entities(texts, a.align, [&](size_t i) { return inputs.where(first + i); });
    for (size_t i = 0; i < texts.size(); ++i) {
      nlohmann::json entities = nlohmann::json::array();
      for (const auto& e : found[i])
        entities.push_back({{"type", e.type}, {"text", e.text}, {"start", e.start}, {"end", e.end},
                            {"score", std::round(e.score * 1e4) / 1e4}});
      fmt::print("{}\n", nlohmann::json{{"text", texts[i]}, {"entities", entities}}.dump());
    }
  });
  return 0;
}

// Prints the timing as bert_pretrain --benchmark does, tokens/s last (scripts read that line).
int bench(const BenchArgs& a) {
  inference::InferenceBenchmarkOptions opt = a.opt;
  opt.precision = matmul_precision_from_name(a.precision);
  const auto r = inference::run_inference_benchmark(opt);
  fmt::print("inference (encoder forward{}, no tape, {}): {}, {:.2f}M parameters, {} threads, {} matmuls\n",
             opt.first_token ? " read at each first token" : "", r.fused ? "fused and padding-free" : "recorded path", opt.model,
             double(r.parameters) / 1e6, num_threads(), a.precision);
  if (opt.sentences.empty())
    fmt::print("batch {} x {} random ids, no padding\n", opt.batch, opt.seq_len);
  else
    fmt::print("batch: {} lines of {}, {} real tokens ({} with padding to the longest)\n", opt.batch, opt.sentences,
               r.real_tokens, r.padded_tokens);
  if (r.max_abs_diff >= 0)
    fmt::print("last_hidden_state vs fp32: max abs diff {:.3g}, mean abs diff {:.3g}\n", r.max_abs_diff, r.mean_abs_diff);
  fmt::print("ms/batch: {:.2f}\npeak RSS: {:.0f} MB\ntokens/s: {:.1f}\n", r.seconds_per_step * 1e3, r.peak_rss_mb, r.tokens_per_s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Inference with a Hugging Face checkpoint directory of any registered model family: "
               "config.json, model.safetensors or pytorch_model.bin, and its tokenizer files.", "bert_infer"};
  xg::cli::show_defaults(app);
  app.require_subcommand(1);

  DumpArgs d;
  auto* dump_cmd = app.add_subcommand("dump", "Runs a batch through the model; writes its outputs (and gradients)");
  dump_cmd->add_option("--model", d.model, "checkpoint directory")->required()->type_name("DIR");
  dump_cmd->add_option("--inputs", d.inputs, "inputs")->required()->type_name("IN.safetensors");
  dump_cmd->add_option("--out", d.out, "outputs")->required()->type_name("OUT.safetensors");
  dump_cmd->add_flag("--grads", d.grads, "also write grad.<parameter> (needs labels in IN)");
  dump_cmd->footer(
      "IN: input_ids, attention_mask, token_type_ids, position_ids (I64/I32, [B, T]); every other integer\n"
      "tensor is a label by transformers' name (labels [B, T] with -100 = not predicted, next_sentence_label\n"
      "[B]). OUT (F32): the model's forward outputs by transformers' names (last_hidden_state,\n"
      "pooler_output, prediction_logits/logits, ..., and loss with labels); --grads adds\n"
      "grad.<parameter> under the checkpoint's names. Dropout is off.");

  TokenizeArgs t;
  auto* tokenize_cmd = infer::add_model_command(app, "tokenize", "Each stdin line -> ids of [CLS] line [SEP]", t.tok, /*model_optional=*/true);

  FillMaskArgs f;
  auto* fill_mask_cmd = infer::add_model_command(app, "fill-mask", "Each stdin line -> the most likely tokens for each of its [MASK]s", f.tok);
  xg::cli::add_number(*fill_mask_cmd, "--top-k", f.top_k, "candidates shown per [MASK]")->check(xg::cli::positive());
  xg::cli::add_number(*fill_mask_cmd, "--batch-size,--batch", f.batch, "lines per forward pass")->check(xg::cli::positive());
  fill_mask_cmd->footer("Prints, for each input line, \"[MASK] at token T:\" per mask and its --top-k candidates, one per line:\n"
                        "probability, token, the text with the mask filled; a blank line between inputs.");

  EmbedArgs e;
  auto* embed_cmd = infer::add_model_command(app, "embed", "Each stdin line -> one vector (the last hidden layer, pooled)", e.tok);
  embed_cmd->add_option("--pooling", e.pooling, "the [CLS] vector or the mean over tokens")
      ->check(CLI::IsMember({"cls", "mean"}));
  embed_cmd->add_flag("--normalize", e.normalize, "scale each vector to unit length (cosine similarity = dot product)");
  xg::cli::add_number(*embed_cmd, "--batch-size,--batch", e.batch, "lines per forward pass")->check(xg::cli::positive());

  infer::QaArgs q;
  auto* qa_cmd = infer::add_qa_command(app, q);
  NerArgs n;
  auto* ner_cmd = infer::add_model_command(app, "ner", "Each stdin line -> its named entities as one JSON line", n.tok);
  ner_cmd->add_flag("--jsonl", n.jsonl, "stdin lines are JSON objects {\"text\": ...} (default: plain text lines)");
  xg::cli::add_number(*ner_cmd, "--batch-size,--batch", n.batch, "lines per batch (their windows run together)")->check(xg::cli::positive());
  xg::cli::add_number(*ner_cmd, "--max-seq-length,--max-len", n.align.max_len, "tokens per window, special tokens included (at most what the "
                      "model's positions hold); longer lines are split into overlapping windows")->check(CLI::Range(size_t(4), size_t(1) << 20));
  xg::cli::add_number(*ner_cmd, "--doc-stride,--stride", n.align.stride, "sub-tokens shared by consecutive windows of a long line (0: a quarter of the window)");
  ner_cmd->footer(
      "Output, one line per input line: {\"text\": ..., \"entities\": [{\"type\": \"PER\", \"text\": ..., \"start\": S,\n"
      "\"end\": E, \"score\": P}]}; [S, E) counts code points of the line, P is the mean probability of the\n"
      "entity's word tags (each word's tag is its first sub-token's).");
  ClassifyArgs c;
  auto* classify_cmd = infer::add_model_command(app, "classify", "Each stdin line (a TAB separates a pair) -> its labels with probabilities",
                                                c.tok);
  classify_cmd->add_flag("--jsonl", c.jsonl, "each line is a JSON object {\"text\": ..., \"text_b\": ...} (text_b optional)");
  xg::cli::add_number(*classify_cmd, "--top-k", c.top_k, "labels printed per line, most likely first")->check(xg::cli::positive());
  xg::cli::add_number(*classify_cmd, "--batch-size,--batch", c.batch, "lines per forward pass")->check(xg::cli::positive());
  xg::cli::add_number(*classify_cmd, "--max-seq-length,--max-len", c.max_len, "tokens per input, special tokens included (longer ones are truncated; "
                                                             "at most what its positions hold: max_position_embeddings, less RoBERTa's pad_token_id + 1)")->check(xg::cli::positive());
  classify_cmd->footer("Prints one line per input: label<TAB>probability (softmax over the labels; each label's sigmoid for a\n"
                       "multi-label model), the top --top-k of them; for a regression model (one output) its value.");

  BenchArgs b;
  auto* bench_cmd = app.add_subcommand("bench", "Times the encoder's forward pass (no tape) on random ids or --sentences; prints tokens/s last");
  bench_cmd->add_option("--model", b.opt.model, "a [family-]size preset (random weights) or a checkpoint directory (its encoder)")
      ->type_name("PRESET|DIR");
  xg::cli::add_number(*bench_cmd, "--batch-size,--batch", b.opt.batch, "sequences per forward pass")->check(xg::cli::positive());
  xg::cli::add_number(*bench_cmd, "--max-seq-length,--seq-len", b.opt.seq_len, "tokens per sequence: all real with random ids; with --sentences, the most a line keeps")->check(xg::cli::positive());
  xg::cli::add_number(*bench_cmd, "--steps", b.opt.steps, "timed passes, after two warm-up ones")->check(xg::cli::positive());
  xg::cli::add_number(*bench_cmd, "--threads", b.opt.threads, "threads (0: XGRAD_NUM_THREADS, else the cores)")->check(CLI::Range(0, 4096));
  xg::cli::add_number(*bench_cmd, "--seed", b.opt.seed, "random weights and ids");
  bench_cmd->add_option("--precision", b.precision,
                        "matmul precision of the linear layers (bf16: inputs rounded to bf16, fp32 sums; int8: dynamic "
                        "quantization, int32 sums)")
      ->check(CLI::IsMember({"fp32", "bf16", "int8"}));
  bench_cmd->add_flag("--first-token", b.opt.first_token,
                      "time the output at each sequence's first token only, as a sentence classifier reads it (the last layer runs there alone)");
  bench_cmd->add_option("--sentences", b.opt.sentences,
                        "time real text instead: the first --batch-size non-empty lines of FILE, padded to the longest; tokens/s counts real tokens")
      ->type_name("FILE");
  bench_cmd->add_option("--tokenizer,--vocab", b.opt.vocab, "the tokenizer for --sentences (a checkpoint directory brings its own)")
      ->type_name("PATH");

  if (auto code = xg::cli::parse_or_exit(app, argc, argv)) return *code;
  try {
    nn::set_default_execution(nn::ExecutionOptions::from_environment());  // the XGRAD_* switches, read once here
    if (*dump_cmd) return dump(d);
    if (*tokenize_cmd) return tokenize(t);
    if (*fill_mask_cmd) return fill_mask(f);
    if (*qa_cmd) return infer::run_qa(q);
    if (*ner_cmd) return ner(n);
    if (*classify_cmd) return classify(c);
    if (*bench_cmd) return bench(b);
    return embed(e);
  } catch (const std::exception& ex) {
    fmt::print(stderr, "{}\n", xg::cli::error_line("bert_infer", ex.what()));
    return 1;
  }
}
