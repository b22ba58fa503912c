// The RoBERTa and ALBERT data recipes: FULL-SENTENCES and DOC-SENTENCES packing (every token of
// the corpus once, in order, whole sentences where they fit, separators between documents) and
// sentence-order pairs (B follows A, or the two swapped, half the time each).
#include <catch2/catch.hpp>
#include <map>
#include <numeric>
#include <set>

#include "text/bert_tokenizer.hpp"
#include "text/pretraining_data.hpp"

using namespace xg::text;
using Catch::Matchers::Contains;

namespace {
const std::string kVocab = std::string(XGRAD_TEST_DATA_DIR) + "/../../data/bert-base-uncased-vocab.txt";
const std::string kSample = std::string(XGRAD_TEST_DATA_DIR) + "/pretrain_sample.txt";

const Tokenizer& tok() {
  static const BertTokenizer t = BertTokenizer::from_file(kVocab);
  return t;
}
const MaskingVocab& vocab() {
  static const MaskingVocab v = MaskingVocab::from(tok());
  return v;
}

// Documents whose tokens count up (1000, 1001, ...) across the corpus: an instance's tokens say
// where they came from. Sentence lengths cycle through `lengths`.
std::vector<Document> counting_docs(size_t n_docs, size_t sentences_per_doc, const std::vector<size_t>& lengths) {
  std::vector<Document> docs(n_docs);
  int32_t next = 1000;
  size_t k = 0;
  for (auto& d : docs)
    for (size_t s = 0; s < sentences_per_doc; ++s, ++k) {
      Sentence sentence(lengths[k % lengths.size()]);
      std::iota(sentence.begin(), sentence.end(), next);
      next += int32_t(sentence.size());
      d.push_back(sentence);
    }
  return docs;
}

std::vector<size_t> identity(size_t n) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  return order;
}
}  // namespace

TEST_CASE("FULL-SENTENCES packs the corpus in order, whole sentences where they fit, [SEP] between documents", "[pretraining][recipes]") {
  PretrainingOptions opt;
  opt.pairing = Pairing::FullSentences;
  opt.max_seq_length = 32;  // 30 tokens of text a sequence
  // 7, 12 and 25 tokens: several sentences share a sequence; a 25 after a 19 does not fit
  const auto docs = counting_docs(5, 4, {7, 12, 25, 40});  // 40 > 30: split across sequences
  std::vector<Instance> out;
  pack_full_sentences(docs, identity(docs.size()), opt, vocab(), out);
  REQUIRE(!out.empty());
  std::vector<int32_t> seen;  // the bodies in order
  for (const auto& inst : out) {
    REQUIRE(inst.tokens.size() <= opt.max_seq_length);
    CHECK(inst.tokens.front() == vocab().cls_id);
    CHECK(inst.tokens.back() == vocab().sep_id);
    CHECK(inst.a_end == inst.tokens.size() - 1);  // one segment
    CHECK(inst.tokens[1] != vocab().sep_id);       // no separator at either end of the text
    CHECK(inst.tokens[inst.tokens.size() - 2] != vocab().sep_id);
    seen.insert(seen.end(), inst.tokens.begin() + 1, inst.tokens.end() - 1);
  }
  // Every token once, in order, with a [SEP] exactly where a document ends inside a sequence.
  std::vector<int32_t> tokens_only;
  size_t separators = 0;
  for (int32_t t : seen) {
    if (t == vocab().sep_id) ++separators;
    else tokens_only.push_back(t);
  }
  std::vector<int32_t> expected;
  for (const auto& d : docs)
    for (const auto& s : d) expected.insert(expected.end(), s.begin(), s.end());
  CHECK(tokens_only == expected);
  CHECK(separators > 0);
  CHECK(separators < docs.size());
  // A sequence starts at a sentence start unless the previous sentence did not fit in one (40).
  std::set<int32_t> sentence_starts, long_sentence_tokens;
  for (const auto& d : docs)
    for (const auto& s : d) {
      sentence_starts.insert(s.front());
      if (s.size() > 30) long_sentence_tokens.insert(s.begin(), s.end());
    }
  for (const auto& inst : out) CHECK((sentence_starts.count(inst.tokens[1]) || long_sentence_tokens.count(inst.tokens[1])));
  // Packed: only the sequence before a sentence that does not fit is short.
  size_t full = 0;
  for (const auto& inst : out) full += inst.tokens.size() >= opt.max_seq_length - 6;
  CHECK(full * 2 > out.size());
}

TEST_CASE("DOC-SENTENCES never crosses a document boundary", "[pretraining][recipes]") {
  PretrainingOptions opt;
  opt.pairing = Pairing::DocSentences;
  opt.max_seq_length = 40;
  const auto docs = counting_docs(6, 3, {5, 9, 14});
  std::vector<Instance> out;
  pack_full_sentences(docs, identity(docs.size()), opt, vocab(), out);
  std::map<int32_t, size_t> doc_of;
  for (size_t d = 0; d < docs.size(); ++d)
    for (const auto& s : docs[d])
      for (int32_t t : s) doc_of[t] = d;
  CHECK(out.size() == docs.size());  // each document (28 tokens) fits one sequence
  for (const auto& inst : out) {
    std::set<size_t> from;
    for (size_t i = 1; i + 1 < inst.tokens.size(); ++i) {
      REQUIRE(inst.tokens[i] != vocab().sep_id);
      from.insert(doc_of.at(inst.tokens[i]));
    }
    CHECK(from.size() == 1);
  }
}

TEST_CASE("sentence-order pairs: B follows A in one document, swapped half the time", "[pretraining][recipes]") {
  PretrainingOptions opt;
  opt.pairing = Pairing::SentenceOrder;
  opt.max_seq_length = 48;
  const auto docs = counting_docs(60, 6, {6, 11, 3, 17, 30});
  std::map<int32_t, size_t> doc_of;
  for (size_t d = 0; d < docs.size(); ++d)
    for (const auto& s : docs[d])
      for (int32_t t : s) doc_of[t] = d;
  xg::Generator rng(7);
  std::vector<Instance> out;
  create_instances(docs, identity(docs.size()), opt, vocab(), rng, out);
  REQUIRE(out.size() > 100);
  size_t swapped = 0;
  for (const auto& inst : out) {
    REQUIRE(inst.tokens.size() <= opt.max_seq_length);
    REQUIRE(inst.tokens[inst.a_end] == vocab().sep_id);
    const std::vector<int32_t> a(inst.tokens.begin() + 1, inst.tokens.begin() + long(inst.a_end));
    const std::vector<int32_t> b(inst.tokens.begin() + long(inst.a_end) + 1, inst.tokens.end() - 1);
    REQUIRE((!a.empty() && !b.empty()));
    std::set<size_t> from;
    for (int32_t t : a) from.insert(doc_of.at(t));
    for (int32_t t : b) from.insert(doc_of.at(t));
    CHECK(from.size() == 1);  // never another document's text, unlike NSP
    // Counting tokens: in order, all of A comes before all of B; swapped, after.
    const int32_t a_max = *std::max_element(a.begin(), a.end()), b_min = *std::min_element(b.begin(), b.end());
    const int32_t a_min = *std::min_element(a.begin(), a.end()), b_max = *std::max_element(b.begin(), b.end());
    if (inst.is_random_next) CHECK(a_min > b_max);
    else CHECK(a_max < b_min);
    swapped += inst.is_random_next;
  }
  const double share = double(swapped) / double(out.size());
  CHECK(share == Approx(0.5).margin(0.06));
}

TEST_CASE("packed and sentence-order instances go through static and dynamic datasets, masked", "[pretraining][recipes]") {
  const auto docs = load_documents(kSample, tok());
  for (Pairing p : {Pairing::FullSentences, Pairing::DocSentences, Pairing::SentenceOrder}) {
    CAPTURE(pairing_name(p));
    PretrainingOptions opt;
    opt.pairing = p;
    opt.max_seq_length = 64;
    opt.max_predictions_per_seq = 10;
    opt.dupe_factor = 2;
    const auto inst = create_static_instances(docs, opt, vocab());
    REQUIRE(!inst.empty());
    for (const auto& in : inst) {
      REQUIRE(!in.masked_positions.empty());
      REQUIRE(in.masked_positions.size() <= 10);
      for (int32_t label : in.masked_labels) CHECK(!vocab().never_mask[size_t(label)]);  // never a special token
    }
    DynamicDataset ds(docs, opt, vocab());
    const Instance first = ds.get(0, 0), again = ds.get(0, 0), next_epoch = ds.get(1, 0);
    CHECK(first.tokens == again.tokens);  // any position can be resumed
    CHECK(first.tokens != next_epoch.tokens);  // a new order and a fresh mask each epoch
  }
  CHECK(parse_pairing("full-sentences") == Pairing::FullSentences);
  CHECK_THROWS_WITH(parse_pairing("nsp2"), Contains("'nsp2'") && Contains("doc-sentences"));
}

TEST_CASE("n-gram masking: span lengths 1/n, whole words, 15% of the tokens", "[pretraining][recipes]") {
  xg::Generator rng(3);
  std::map<size_t, size_t> drawn;
  const size_t draws = 110000;
  for (size_t i = 0; i < draws; ++i) ++drawn[draw_ngram_length(rng, 3)];
  CHECK(double(drawn[1]) / draws == Approx(6.0 / 11).margin(0.01));
  CHECK(double(drawn[2]) / draws == Approx(3.0 / 11).margin(0.01));
  CHECK(double(drawn[3]) / draws == Approx(2.0 / 11).margin(0.01));
  CHECK(draw_ngram_length(rng, 1) == 1);

  // Real sentences, WordPiece words ("##" pieces continue one): the masked spans as they come out.
  const auto docs = load_documents(kSample, tok());
  PretrainingOptions opt;
  opt.pairing = Pairing::FullSentences;
  opt.max_seq_length = 256;
  opt.max_predictions_per_seq = 256;  // the 15% is the only limit
  opt.max_ngram = 3;
  const auto inst = create_static_instances(docs, opt, vocab());
  size_t tokens = 0, masked = 0;
  std::map<size_t, size_t> span_words;  // runs of consecutive masked words, by length
  for (const auto& in : inst) {
    std::vector<bool> is_masked(in.tokens.size());
    for (int32_t p : in.masked_positions) is_masked[size_t(p)] = true;
    tokens += in.tokens.size();
    masked += in.masked_positions.size();
    // Recover the original tokens, then the words.
    std::vector<int32_t> original = in.tokens;
    for (size_t k = 0; k < in.masked_positions.size(); ++k) original[size_t(in.masked_positions[k])] = in.masked_labels[k];
    size_t run = 0;
    for (size_t i = 1; i + 1 < original.size(); ++i) {
      // (a piece right after [CLS] or [SEP] starts a word: packing can cut a word in two)
      const bool starts_word = !vocab().continuation[size_t(original[i])] || vocab().never_mask[size_t(original[i - 1])];
      if (!starts_word) {
        REQUIRE(is_masked[i] == is_masked[i - 1]);  // a word is masked whole or not at all
        continue;
      }
      if (is_masked[i]) {
        ++run;
      } else if (run > 0) {
        ++span_words[run];
        run = 0;
      }
    }
    if (run > 0) ++span_words[run];
  }
  CHECK(double(masked) / double(tokens) == Approx(0.15).margin(0.01));
  // Adjacent spans merge into longer runs, and spans shrink at the budget's end: the runs of 1, 2
  // and 3 words still keep the 6:3:2 shape within 3 points.
  const double runs = double(span_words[1] + span_words[2] + span_words[3]);
  INFO("runs of 1, 2, 3 words: " << span_words[1] << " " << span_words[2] << " " << span_words[3]);
  CHECK(double(span_words[1]) / runs == Approx(6.0 / 11).margin(0.03));
  CHECK(double(span_words[2]) / runs == Approx(3.0 / 11).margin(0.03));
  CHECK(double(span_words[3]) / runs == Approx(2.0 / 11).margin(0.03));
}
