#include "text/pretraining_data.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "text/unicode.hpp"
#include "util/threads.hpp"
#include "util/lines.hpp"

namespace xg::text {

namespace {
const std::pair<Pairing, const char*> kPairingNames[] = {{Pairing::NextSentence, "nsp"},
                                                         {Pairing::SentenceOrder, "sop"},
                                                         {Pairing::FullSentences, "full-sentences"},
                                                         {Pairing::DocSentences, "doc-sentences"}};
}

std::string pairing_name(Pairing p) {
  for (const auto& [value, name] : kPairingNames)
    if (value == p) return name;
  return "?";
}

Pairing parse_pairing(const std::string& name) {
  for (const auto& [value, n] : kPairingNames)
    if (name == n) return value;
  throw std::invalid_argument(fmt::format("[pretraining data] unknown pairing '{}' (nsp, sop, full-sentences, doc-sentences)", name));
}

void PretrainingOptions::validate() const {
  auto fail = [](const std::string& m) { throw std::invalid_argument("[pretraining data] " + m); };
  if (max_seq_length < 5 || max_seq_length > 65535)
    fail(fmt::format("max_seq_length {} must be in [5, 65535]", max_seq_length));
  if (max_predictions_per_seq == 0 || max_predictions_per_seq > max_seq_length)
    fail(fmt::format("max_predictions_per_seq {} must be in [1, max_seq_length]", max_predictions_per_seq));
  if (!(masked_lm_prob > 0.f && masked_lm_prob < 1.f)) fail(fmt::format("masked_lm_prob {} must be in (0, 1)", masked_lm_prob));
  if (!(short_seq_prob >= 0.f && short_seq_prob <= 1.f)) fail(fmt::format("short_seq_prob {} must be in [0, 1]", short_seq_prob));
  if (dupe_factor == 0) fail("dupe_factor must be at least 1");
  if (max_ngram == 0 || max_ngram > 16) fail(fmt::format("max_ngram {} must be in [1, 16]", max_ngram));
  if (!(mask_token_rate >= 0.f && random_token_rate >= 0.f && mask_token_rate + random_token_rate <= 1.f))
    fail(fmt::format("mask_token_rate {} and random_token_rate {} must be at least 0 and add up to at most 1", mask_token_rate,
                     random_token_rate));
}

namespace {
// Python's rng.randint(a, b): inclusive.
size_t randint(Generator& rng, size_t a, size_t b) { return a + size_t(rng.below(b - a + 1)); }

template <class T>
void shuffle(std::vector<T>& v, Generator& rng) {
  for (size_t i = v.size(); i-- > 1;) std::swap(v[i], v[size_t(rng.below(i + 1))]);
}

// Google's truncate_seq_pair: drop from the longer side, front or back at random. The draws are
// Google's, one per dropped token, but the tokens go in one erase per end: erasing one at a time
// from the front made a long sentence quadratic (a 5 MB single-line corpus took 30 s an instance).
void truncate_pair(std::vector<int32_t>& a, std::vector<int32_t>& b, size_t max_tokens, Generator& rng) {
  struct Cut {
    size_t size, front = 0, back = 0;
  };
  Cut ca{a.size()}, cb{b.size()};
  while (ca.size + cb.size > max_tokens) {
    Cut& c = ca.size > cb.size ? ca : cb;
    ++(rng.uniform() < 0.5f ? c.front : c.back);
    --c.size;
  }
  for (auto [t, c] : {std::pair<std::vector<int32_t>*, Cut>{&a, ca}, {&b, cb}}) {
    t->resize(t->size() - c.back);
    t->erase(t->begin(), t->begin() + long(c.front));
  }
}

// Whether Python's str.strip() empties the line, which makes it a document break in Google's
// script: a line of U+3000 or NBSP is one as much as an empty line.
bool blank_line(const std::string& line) {
  for (const unsigned char c : line)  // the common case, decided on the first ASCII letter
    if (c < 0x80 && !is_python_space(c)) return false;
  for (const char32_t c : decode_utf8(line, InvalidUtf8::Replace))
    if (!is_python_space(c)) return false;
  return true;
}
}  // namespace

MaskingVocab MaskingVocab::from(const Tokenizer& tok) {
  MaskingVocab v;
  v.mask_id = tok.mask_id();
  v.cls_id = tok.cls_id();
  v.sep_id = tok.sep_id();
  v.size = tok.vocab_size();
  v.never_mask.resize(v.size);
  v.continuation.resize(v.size);
  for (size_t i = 0; i < v.size; ++i) {
    const int32_t id = int32_t(i);
    const std::string& t = tok.id_to_token(id);
    v.never_mask[i] = tok.is_special(id);
    v.continuation[i] = !tok.starts_word(id);
    const bool placeholder = t.size() > 2 && t.front() == '[' && t.back() == ']';  // [unused12], [CLS], ...
    if (!v.never_mask[i] && !placeholder) v.random_choices.push_back(id);
  }
  if (v.random_choices.empty()) throw std::invalid_argument("[pretraining data] the vocabulary has no ordinary tokens");
  return v;
}

namespace {
// A text's documents before tokenising, its lines given in order (numbered from 1): runs of
// non-blank lines. text_document_lines' documents, and load_documents' count of them.
class DocumentRuns {
 public:
  void add(size_t line, bool blank) {
    if (!blank && !in_document_) ranges.push_back({line, line});
    if (!blank) ranges.back().end = line + 1;
    in_document_ = !blank;
  }
  std::vector<LineRange> ranges;

 private:
  bool in_document_ = false;
};
}  // namespace

std::vector<LineRange> text_document_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("[pretraining data] {}: cannot open", path));
  DocumentRuns runs;
  size_t n = 0;
  for (std::string l; getline_lf(in, l);) runs.add(++n, blank_line(l));
  return runs.ranges;
}

std::vector<Document> load_documents(const std::string& path, const Tokenizer& tok,
                                     const std::function<void(size_t, size_t)>& progress, size_t* text_documents) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("[pretraining data] {}: cannot open", path));
  std::vector<std::string> lines;
  for (std::string l; getline_lf(in, l);) {
    lines.push_back(std::move(l));
  }
  // Tokenise every line on all cores, then group into documents.
  std::vector<std::vector<int32_t>> ids(lines.size());
  const size_t threads = default_thread_count();
  std::atomic<size_t> done{0};
  run_on_threads(threads, [&](size_t t) {
    for (size_t i = t; i < lines.size(); i += threads) {
      for (const Token& tk : tok.tokenize(lines[i], fmt::format("{}:{}", path, i + 1))) ids[i].push_back(tk.id);
      if (t == 0 && progress && i % 4096 == 0) progress(done.load(), lines.size());
      ++done;
    }
  }, fmt::format("tokenizing {}", path));
  if (progress) progress(lines.size(), lines.size());
  std::vector<Document> docs(1);
  DocumentRuns runs;
  for (size_t i = 0; i < lines.size(); ++i) {
    const bool blank = blank_line(lines[i]);
    runs.add(i + 1, blank);
    if (blank) {
      if (!docs.back().empty()) docs.emplace_back();
    } else {  // a line longer than any sequence becomes several sentences (copies stay small)
      for (size_t at = 0; at < ids[i].size(); at += kMaxSentenceTokens) {
        const auto first = ids[i].begin() + long(at);
        docs.back().emplace_back(first, first + long(std::min(kMaxSentenceTokens, ids[i].size() - at)));
      }
    }
  }
  if (docs.back().empty()) docs.pop_back();
  if (text_documents) *text_documents = runs.ranges.size();
  if (docs.empty()) throw std::runtime_error(fmt::format("[pretraining data] {}: no text (empty corpus)", path));
  return docs;
}

void create_instances_from_document(const std::vector<Document>& docs, size_t doc_index, const PretrainingOptions& opt,
                                    const MaskingVocab& vocab, Generator& rng, std::vector<Instance>& out) {
  const Document& doc = docs[doc_index];
  const size_t max_tokens = opt.max_seq_length - 3;  // [CLS] A [SEP] B [SEP]
  size_t target = max_tokens;
  if (rng.uniform() < opt.short_seq_prob) target = randint(rng, 2, max_tokens);
  std::vector<const Sentence*> chunk;
  size_t chunk_len = 0;
  for (size_t i = 0; i < doc.size(); ++i) {
    chunk.push_back(&doc[i]);
    chunk_len += doc[i].size();
    if (i + 1 != doc.size() && chunk_len < target) continue;
    size_t a_end = 1;
    if (chunk.size() >= 2) a_end = randint(rng, 1, chunk.size() - 1);
    std::vector<int32_t> a, b;
    for (size_t j = 0; j < a_end; ++j) a.insert(a.end(), chunk[j]->begin(), chunk[j]->end());
    bool random_next = false;
    if (opt.pairing == Pairing::SentenceOrder) {
      if (chunk.size() == 1) {  // split the one sentence so that B still follows A
        if (a.size() < 2) {
          chunk.clear();
          chunk_len = 0;
          continue;
        }
        const size_t cut = randint(rng, 1, a.size() - 1);
        b.assign(a.begin() + long(cut), a.end());
        a.resize(cut);
      } else {
        for (size_t j = a_end; j < chunk.size(); ++j) b.insert(b.end(), chunk[j]->begin(), chunk[j]->end());
      }
      if (rng.uniform() < 0.5f) {
        std::swap(a, b);
        random_next = true;
      }
    } else if (chunk.size() == 1 || rng.uniform() < 0.5f) {
      random_next = true;
      const size_t target_b = target > a.size() ? target - a.size() : 1;
      size_t other = doc_index;
      for (int tries = 0; tries < 10 && other == doc_index; ++tries) other = randint(rng, 0, docs.size() - 1);
      const Document& rd = docs[other];
      for (size_t j = randint(rng, 0, rd.size() - 1); j < rd.size(); ++j) {
        b.insert(b.end(), rd[j].begin(), rd[j].end());
        if (b.size() >= target_b) break;
      }
      i -= chunk.size() - a_end;  // the unused sentences go back for the next chunk
    } else {
      for (size_t j = a_end; j < chunk.size(); ++j) b.insert(b.end(), chunk[j]->begin(), chunk[j]->end());
    }
    truncate_pair(a, b, max_tokens, rng);
    if (!a.empty() && !b.empty()) {
      Instance inst;
      inst.tokens.reserve(a.size() + b.size() + 3);
      inst.tokens.push_back(vocab.cls_id);
      inst.tokens.insert(inst.tokens.end(), a.begin(), a.end());
      inst.a_end = inst.tokens.size();
      inst.tokens.push_back(vocab.sep_id);
      inst.tokens.insert(inst.tokens.end(), b.begin(), b.end());
      inst.tokens.push_back(vocab.sep_id);
      inst.is_random_next = random_next;
      out.push_back(std::move(inst));
    }
    chunk.clear();
    chunk_len = 0;
  }
}

void pack_full_sentences(const std::vector<Document>& docs, const std::vector<size_t>& order, const PretrainingOptions& opt,
                         const MaskingVocab& vocab, std::vector<Instance>& out) {
  const size_t max_tokens = opt.max_seq_length - 2;  // [CLS] ... [SEP]
  std::vector<int32_t> body;
  auto flush = [&] {
    if (!body.empty() && body.back() == vocab.sep_id) body.pop_back();  // a document separator at the end
    if (body.empty()) return;
    Instance inst;
    inst.tokens.reserve(body.size() + 2);
    inst.tokens.push_back(vocab.cls_id);
    inst.tokens.insert(inst.tokens.end(), body.begin(), body.end());
    inst.a_end = inst.tokens.size();
    inst.tokens.push_back(vocab.sep_id);
    out.push_back(std::move(inst));
    body.clear();
  };
  for (size_t k = 0; k < order.size(); ++k) {
    if (opt.pairing == Pairing::DocSentences) flush();
    else if (!body.empty()) body.push_back(vocab.sep_id);  // between documents
    for (const Sentence& sentence : docs[order[k]]) {
      if (body.size() + sentence.size() > max_tokens) flush();  // sentences stay whole when they fit
      for (size_t at = 0; at < sentence.size();) {
        if (body.size() == max_tokens) flush();
        const size_t take = std::min(max_tokens - body.size(), sentence.size() - at);
        body.insert(body.end(), sentence.begin() + long(at), sentence.begin() + long(at + take));
        at += take;
      }
    }
  }
  flush();
}

void create_instances(const std::vector<Document>& docs, const std::vector<size_t>& order, const PretrainingOptions& opt,
                      const MaskingVocab& vocab, Generator& rng, std::vector<Instance>& out) {
  if (opt.pairing == Pairing::FullSentences || opt.pairing == Pairing::DocSentences) {
    pack_full_sentences(docs, order, opt, vocab, out);
    return;
  }
  for (size_t d : order) create_instances_from_document(docs, d, opt, vocab, rng, out);
}

size_t masked_count(size_t tokens, const PretrainingOptions& opt) {
  // Google's min(max_predictions_per_seq, max(1, int(round(len(tokens) * masked_lm_prob)))) in
  // Python: the product in double of the decimal the flag was given as (a float prints as its
  // shortest decimal, 0.15f as "0.15"), rounded half to even (30 tokens: 4.5 -> 4, not 5).
  const std::string decimal = fmt::format("{}", opt.masked_lm_prob);
  double prob = opt.masked_lm_prob;
  std::from_chars(decimal.data(), decimal.data() + decimal.size(), prob);  // whatever the C locale's decimal point
  const double want = std::nearbyint(double(tokens) * prob);
  return std::min(opt.max_predictions_per_seq, std::max<size_t>(1, size_t(want)));
}

void mask_instance(Instance& inst, const PretrainingOptions& opt, const MaskingVocab& vocab, Generator& rng) {
  auto& tokens = inst.tokens;
  const bool whole_words = opt.whole_word_mask || opt.max_ngram > 1;
  std::vector<std::vector<size_t>> candidates;  // words: their token positions
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t t = tokens[i];
    if (vocab.never_mask[size_t(t)]) continue;
    if (whole_words && !candidates.empty() && vocab.continuation[size_t(t)] && candidates.back().back() + 1 == i)
      candidates.back().push_back(i);
    else
      candidates.push_back({i});
  }
  const size_t to_predict = masked_count(tokens.size(), opt);
  std::vector<std::pair<int32_t, int32_t>> masked;  // (position, original id)
  const std::vector<int32_t> original = tokens;
  // Of the chosen tokens not masked, the share that stays itself (BERT: 0.1 of 0.2).
  const float not_masked = 1.f - opt.mask_token_rate;
  const float keep_share = not_masked > 0.f ? (not_masked - opt.random_token_rate) / not_masked : 1.f;
  auto mask_word = [&](const std::vector<size_t>& word) {
    for (size_t idx : word) {
      int32_t replacement;
      // Two draws whatever the rates: BERT's 80/10/10 draws the numbers it always drew.
      if (rng.uniform() < opt.mask_token_rate) replacement = vocab.mask_id;
      else if (rng.uniform() < keep_share) replacement = original[idx];
      else replacement = vocab.random_choices[size_t(rng.below(vocab.random_choices.size()))];
      tokens[idx] = replacement;
      masked.emplace_back(int32_t(idx), original[idx]);
    }
  };
  if (opt.max_ngram <= 1) {
    shuffle(candidates, rng);
    for (const auto& word : candidates) {
      if (masked.size() >= to_predict) break;
      if (masked.size() + word.size() > to_predict) continue;
      mask_word(word);
    }
  } else {  // ALBERT's n-gram spans of whole words
    std::vector<size_t> starts(candidates.size());
    for (size_t w = 0; w < starts.size(); ++w) starts[w] = w;
    shuffle(starts, rng);
    std::vector<bool> covered(candidates.size());
    auto span_tokens = [&](size_t first, size_t n) {
      size_t count = 0;
      for (size_t w = first; w < first + n; ++w) count += candidates[w].size();
      return count;
    };
    for (size_t first : starts) {
      if (masked.size() >= to_predict) break;
      size_t n = draw_ngram_length(rng, std::min(opt.max_ngram, candidates.size() - first));
      while (n > 1 && masked.size() + span_tokens(first, n) > to_predict) --n;  // shorter spans before none
      if (masked.size() + span_tokens(first, n) > to_predict) continue;
      if (std::any_of(covered.begin() + long(first), covered.begin() + long(first + n), [](bool c) { return c; })) continue;
      for (size_t w = first; w < first + n; ++w) {
        covered[w] = true;
        mask_word(candidates[w]);
      }
    }
  }
  std::sort(masked.begin(), masked.end());
  inst.masked_positions.clear();
  inst.masked_labels.clear();
  for (auto [p, l] : masked) {
    inst.masked_positions.push_back(p);
    inst.masked_labels.push_back(l);
  }
}

size_t draw_ngram_length(Generator& rng, size_t max_n) {
  double total = 0;
  for (size_t n = 1; n <= max_n; ++n) total += 1.0 / double(n);
  double u = double(rng.uniform()) * total;
  for (size_t n = 1; n < max_n; ++n) {
    u -= 1.0 / double(n);
    if (u < 0) return n;
  }
  return std::max<size_t>(max_n, 1);
}

std::vector<size_t> held_out_documents(size_t documents, size_t min_documents, bool at_end) {
  if (documents < 2 || min_documents == 0) return {};
  const size_t count = std::min(documents - 1, std::max(min_documents, documents / 50));
  std::vector<size_t> held(count);
  for (size_t k = 0; k < count; ++k)  // increasing: the stretches are longer than one document (count < documents)
    held[k] = at_end ? documents - count + k : (2 * k + 1) * documents / (2 * count);
  return held;
}

std::vector<Document> take_documents(std::vector<Document>& docs, const std::vector<size_t>& which) {
  std::vector<Document> taken, kept;
  for (size_t i = 0, next = 0; i < docs.size(); ++i) {
    const bool take = next < which.size() && which[next] == i;
    next += take;
    (take ? taken : kept).push_back(std::move(docs[i]));
  }
  docs = std::move(kept);
  return taken;
}

std::vector<Instance> take_held_out_instances(std::vector<Document>& docs, const std::vector<size_t>& which,
                                              PretrainingOptions opt, const MaskingVocab& vocab) {
  if (which.empty()) return {};
  opt.dupe_factor = 1;
  opt.seed += 1;
  return create_static_instances(take_documents(docs, which), opt, vocab);
}

std::vector<Instance> create_static_instances(std::vector<Document> docs, const PretrainingOptions& opt,
                                              const MaskingVocab& vocab, const std::function<void(size_t, size_t)>& progress) {
  opt.validate();
  Generator rng(opt.seed);
  shuffle(docs, rng);
  std::vector<Instance> out;
  const size_t total = opt.dupe_factor * docs.size();
  const bool packing = opt.pairing == Pairing::FullSentences || opt.pairing == Pairing::DocSentences;
  std::vector<size_t> all(docs.size());
  for (size_t d = 0; d < docs.size(); ++d) all[d] = d;
  auto add = [&](const std::vector<size_t>& order) {
    const size_t first = out.size();
    create_instances(docs, order, opt, vocab, rng, out);
    for (size_t k = first; k < out.size(); ++k) mask_instance(out[k], opt, vocab, rng);
  };
  for (size_t pass = 0; pass < opt.dupe_factor; ++pass) {
    if (packing) {  // packed sequences cross documents: a pass at once
      add(all);
      if (progress) progress((pass + 1) * docs.size(), total);
      continue;
    }
    for (size_t d = 0; d < docs.size(); ++d) {
      add({d});
      if (progress && (d % 16 == 0 || d + 1 == docs.size())) progress(pass * docs.size() + d + 1, total);
    }
  }
  shuffle(out, rng);
  return out;
}

DynamicDataset::DynamicDataset(std::vector<Document> docs, PretrainingOptions opt, MaskingVocab vocab)
    : docs_(std::move(docs)), opt_(std::move(opt)), vocab_(std::move(vocab)) {
  opt_.validate();
  if (docs_.empty()) throw std::invalid_argument("[pretraining data] no documents");
}

void DynamicDataset::prepare(uint64_t epoch) {
  if (epoch == prepared_epoch_) return;
  Generator rng(opt_.seed ^ (0x9e3779b97f4a7c15ULL * (epoch + 1)));
  std::vector<size_t> order(docs_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  shuffle(order, rng);
  pairs_.clear();
  create_instances(docs_, order, opt_, vocab_, rng, pairs_);
  shuffle(pairs_, rng);
  prepared_epoch_ = epoch;
}

size_t DynamicDataset::epoch_size(uint64_t epoch) {
  prepare(epoch);
  return pairs_.size();
}

Instance DynamicDataset::get(uint64_t epoch, size_t index) {
  prepare(epoch);
  if (index >= pairs_.size())
    throw std::out_of_range(fmt::format("[DynamicDataset] index {} >= epoch size {}", index, pairs_.size()));
  Instance inst = pairs_[index];
  Generator rng(opt_.seed * 0x2545F4914F6CDD1DULL + epoch * 0x9E3779B97F4A7C15ULL + index);
  mask_instance(inst, opt_, vocab_, rng);
  return inst;
}

}  // namespace xg::text
