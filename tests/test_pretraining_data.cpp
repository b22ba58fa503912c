// MLM/NSP pre-training data: Google's recipe's invariants, determinism, whole-word masking,
// shards (round trip, corrupt files), dynamic masking and resumption.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "text/bert_tokenizer.hpp"
#include "text/pretraining_data.hpp"
#include "training/tasks/instance_sources.hpp"
#include "util/checksums.hpp"
#include "tests/temp_path.hpp"

using namespace xg::text;
using Catch::Matchers::Contains;

namespace {
const std::string kVocab = std::string(XGRAD_TEST_DATA_DIR) + "/../../data/bert-base-uncased-vocab.txt";
const std::string kSample = std::string(XGRAD_TEST_DATA_DIR) + "/pretrain_sample.txt";

// The pre-training data code sees the tokenizer through the interface only.
const Tokenizer& tok() {
  static const BertTokenizer t = BertTokenizer::from_file(kVocab);
  return t;
}
const std::vector<Document>& docs() {
  static const std::vector<Document> d = load_documents(kSample, tok());
  return d;
}
std::string tmp(const std::string& name) { return temp_path("xgrad_pd_" + name); }
}  // namespace

TEST_CASE("documents: sentences tokenised, blank lines split documents", "[pretraining]") {
  REQUIRE(docs().size() == 40);
  for (const auto& d : docs()) {
    CHECK(!d.empty());
    for (const auto& s : d) CHECK(!s.empty());
  }
  const std::string empty = tmp("empty.txt");
  std::ofstream(empty) << "\n\n   \n";
  CHECK_THROWS_WITH(load_documents(empty, tok()), Contains("empty corpus") && Contains(empty));
  CHECK_THROWS_WITH(load_documents(tmp("missing.txt"), tok()), Contains("cannot open"));
  const std::string bad = tmp("bad_utf8.txt");
  std::ofstream(bad) << "fine line\nbroken \xc3\x28 here\n";
  CHECK_THROWS_WITH(load_documents(bad, tok()), Contains(bad + ":2") && Contains("invalid UTF-8"));
  // Lines Python's strip() empties break documents as an empty line does (NBSP, U+3000, U+001C),
  // a line of a control character that tokenizes to nothing does not.
  const std::string spaces = tmp("unicode_blank.txt");
  std::ofstream(spaces) << "one\n\xc2\xa0\ntwo\n\xe3\x80\x80 \t\nthree\n\x1c\nfour\n\x07\nfour again\n";
  const auto split = load_documents(spaces, tok());
  REQUIRE(split.size() == 4);
  CHECK(split[3].size() == 2);
}

TEST_CASE("text_document_lines: the documents before tokenising, as load_documents counts them", "[pretraining]") {
  const std::string path = tmp("document_lines.txt");
  // blank lines at either end and doubled; Python-blank lines (NBSP) break documents; a line of a
  // control character is text here, and tokenizes to nothing in load_documents
  std::ofstream(path) << "\n\none\ntwo\n\n\nthree\n\xc2\xa0\nfour\n\x07\nfive\n\n";
  const auto lines = text_document_lines(path);
  REQUIRE(lines.size() == 3);
  CHECK((lines[0].first == 3 && lines[0].end == 5));
  CHECK((lines[1].first == 7 && lines[1].end == 8));
  CHECK((lines[2].first == 9 && lines[2].end == 12));
  size_t counted = 0;
  CHECK(load_documents(path, tok(), nullptr, &counted).size() == 3);
  CHECK(counted == 3);
  // a document whose every line tokenizes to nothing: load_documents drops it, the count keeps it
  std::ofstream(path) << "one\n\n\x07\n\ntwo\n";
  CHECK(text_document_lines(path).size() == 3);
  CHECK(load_documents(path, tok(), nullptr, &counted).size() == 2);
  CHECK(counted == 3);
  CHECK_THROWS_WITH(text_document_lines(tmp("missing.txt")), Contains("cannot open"));
}

TEST_CASE("static instances hold Google's invariants", "[pretraining]") {
  PretrainingOptions opt;
  opt.dupe_factor = 3;
  const MaskingVocab mv = MaskingVocab::from(tok());
  const auto inst = create_static_instances(docs(), opt, mv);
  REQUIRE(inst.size() > 200);
  size_t random_next = 0, masked = 0, tokens_total = 0, as_mask = 0, kept = 0, replaced = 0, short_seqs = 0;
  for (const auto& in : inst) {
    const auto& t = in.tokens;
    REQUIRE(t.size() <= opt.max_seq_length);
    REQUIRE(t.front() == tok().cls_id());
    REQUIRE(t.back() == tok().sep_id());
    REQUIRE(t[in.a_end] == tok().sep_id());
    REQUIRE(in.a_end >= 2);              // A has at least one token
    REQUIRE(in.a_end + 2 < t.size());    // so does B
    size_t seps = 0;
    for (auto id : t) seps += id == tok().sep_id();
    REQUIRE(seps == 2);
    CHECK(in.segment_id(0) == 0);
    CHECK(in.segment_id(in.a_end) == 0);
    CHECK(in.segment_id(in.a_end + 1) == 1);
    random_next += in.is_random_next;
    short_seqs += t.size() < opt.max_seq_length / 2;
    const size_t expected = masked_count(t.size(), opt);
    REQUIRE(in.masked_positions.size() == expected);  // no whole-word constraint here: always exact
    REQUIRE(std::is_sorted(in.masked_positions.begin(), in.masked_positions.end()));
    for (size_t k = 0; k < in.masked_positions.size(); ++k) {
      const size_t p = size_t(in.masked_positions[k]);
      const int32_t label = in.masked_labels[k];
      REQUIRE(p < t.size());
      REQUIRE_FALSE(tok().is_special(label));  // special tokens are never masked
      if (t[p] == tok().mask_id()) ++as_mask;
      else if (t[p] == label) ++kept;
      else ++replaced;
    }
    masked += in.masked_positions.size();
    tokens_total += t.size();
  }
  const double n = double(inst.size());
  CHECK(double(random_next) / n == Approx(0.5).margin(0.06));
  CHECK(double(masked) / double(tokens_total) == Approx(0.15).margin(0.01));
  CHECK(double(as_mask) / double(masked) == Approx(0.8).margin(0.02));
  CHECK(double(kept) / double(masked) == Approx(0.1).margin(0.02));
  CHECK(double(replaced) / double(masked) == Approx(0.1).margin(0.02));
  CHECK(short_seqs > 0);  // short_seq_prob 0.1 produces some short targets

  // deterministic for a seed, different for another
  const auto again = create_static_instances(docs(), opt, mv);
  REQUIRE(again.size() == inst.size());
  for (size_t i = 0; i < inst.size(); ++i) REQUIRE(again[i].tokens == inst[i].tokens);
  opt.seed = 7;
  const auto other = create_static_instances(docs(), opt, mv);
  CHECK((other.size() != inst.size() || other[0].tokens != inst[0].tokens));
}

namespace {
// FNV-1a over everything an instance holds: pins the data stream (Google's draws) across rewrites.
uint64_t fingerprint(const std::vector<Instance>& instances) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ULL; };
  for (const auto& in : instances) {
    for (int32_t t : in.tokens) mix(uint64_t(t));
    mix(in.a_end);
    mix(in.is_random_next);
    for (size_t k = 0; k < in.masked_positions.size(); ++k) mix(uint64_t(in.masked_positions[k]) << 32 | uint32_t(in.masked_labels[k]));
  }
  return h;
}
}  // namespace

namespace {
// Documents whose tokens say where they came from: document d's ids are 1000 * (d + 1) + k.
std::vector<Document> labelled_documents(size_t count) {
  std::vector<Document> out(count);
  for (size_t d = 0; d < count; ++d)
    for (int32_t s = 0; s < 200; ++s) out[d].push_back(Sentence(6, int32_t(1000 * (d + 1)) + s));
  return out;
}
// The documents (by index) that an instance's first (`second` false) or second sentence came
// from, its masked tokens restored.
std::set<size_t> documents_of(const Instance& in, bool second) {
  std::vector<int32_t> t = in.tokens;
  for (size_t k = 0; k < in.masked_positions.size(); ++k) t[size_t(in.masked_positions[k])] = in.masked_labels[k];
  std::set<size_t> from;
  const size_t begin = second ? in.a_end + 1 : 1, end = second ? t.size() - 1 : in.a_end;  // between the specials
  for (size_t i = begin; i < end; ++i) from.insert(size_t(t[i] / 1000 - 1));
  return from;
}
}  // namespace

// The held-out set of a pre-training run is made by the same code from its held-out documents
// (training/tasks/pretraining.cpp holds out two at least): from one document, every "random next
// sentence" would come from that document, and held-out NSP accuracy would not measure NSP.
TEST_CASE("ELECTRA's masking: a chosen token becomes [MASK] 85% of the time, else stays itself", "[pretraining]") {
  PretrainingOptions opt;
  opt.dupe_factor = 3;
  opt.mask_token_rate = 0.85f;
  opt.random_token_rate = 0.f;
  const auto inst = create_static_instances(docs(), opt, MaskingVocab::from(tok()));
  size_t masked = 0, as_mask = 0, kept = 0;
  for (const auto& in : inst)
    for (size_t k = 0; k < in.masked_positions.size(); ++k) {
      const int32_t now = in.tokens[size_t(in.masked_positions[k])];
      as_mask += now == tok().mask_id();
      kept += now == in.masked_labels[k];
      ++masked;
    }
  REQUIRE(masked > 1000);
  CHECK(as_mask + kept == masked);  // never a random token
  CHECK(double(as_mask) / double(masked) == Approx(0.85).margin(0.02));
}

TEST_CASE("NSP negatives take their second sentence from another document when there is one", "[pretraining]") {
  PretrainingOptions opt;
  opt.max_seq_length = 32;
  const MaskingVocab mv = MaskingVocab::from(tok());
  for (const size_t count : {size_t(2), size_t(3)}) {
    CAPTURE(count);
    const auto inst = create_static_instances(labelled_documents(count), opt, mv);
    size_t negatives = 0, elsewhere = 0;
    for (const auto& in : inst) {
      const std::set<size_t> a_from = documents_of(in, false), b_from = documents_of(in, true);
      REQUIRE(a_from.size() == 1);  // A and B are each read from one document
      REQUIRE(b_from.size() == 1);
      const bool same = a_from == b_from;
      if (in.is_random_next) {
        ++negatives;
        elsewhere += !same;
      } else {
        CHECK(same);
      }
    }
    CHECK(negatives > 100);
    // Google's ten draws stay in A's document with probability (1/count)^10: 1 in 1024 for two
    CHECK(double(elsewhere) >= 0.99 * double(negatives));
  }
  // One document: the negatives have nowhere else to go
  const auto alone = create_static_instances(labelled_documents(1), opt, mv);
  size_t negatives = 0;
  for (const auto& in : alone) {
    negatives += in.is_random_next;
    CHECK(documents_of(in, true) == std::set<size_t>{0});
  }
  CHECK(negatives > 50);
}

TEST_CASE("masked counts round as Python's round(len * masked_lm_prob): halves to even", "[pretraining]") {
  PretrainingOptions o;  // masked_lm_prob 0.15, at most 20
  // python3 -c "print([round(n * 0.15) for n in (10, 30, 50, 70, 110, 128)])": [2, 4, 8, 10, 16, 19]
  const std::vector<size_t> want = {2, 4, 8, 10, 16, 19};
  std::vector<size_t> got;
  for (size_t n : {10, 30, 50, 70, 110, 128}) got.push_back(masked_count(n, o));
  CHECK(got == want);
  CHECK(masked_count(1000, o) == 20);  // capped
  CHECK(masked_count(3, o) == 1);      // at least one
}

TEST_CASE("very long sentences: split on load, truncated in linear time, same draws as before", "[pretraining]") {
  // A corpus without newlines: one line of 150,000 words, then a short document.
  const std::string one_line = tmp("one_line.txt");
  {
    std::ofstream out(one_line);
    for (int i = 0; i < 150000; ++i) out << (i % 2 ? "cat " : "dog ");
    out << "\n\nthe end .\n";
  }
  const auto loaded = load_documents(one_line, tok());
  REQUIRE(loaded.size() == 2);
  REQUIRE(loaded[0].size() == 3);  // 65536 + 65536 + 18928 tokens
  CHECK(loaded[0][0].size() == kMaxSentenceTokens);
  CHECK(loaded[0][2].size() == 150000 - 2 * kMaxSentenceTokens);
  std::filesystem::remove(one_line);

  // Twenty documents of one 60,000-token sentence: each instance truncates ~60,000 tokens, which
  // took about a second an instance when they were erased one at a time from the front.
  std::vector<Document> long_docs(20, Document{Sentence(60000, tok().mask_id() + 1)});
  PretrainingOptions opt;
  opt.dupe_factor = 1;
  const auto start = std::chrono::steady_clock::now();
  const auto inst = create_static_instances(long_docs, opt, MaskingVocab::from(tok()));
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 2.0);
  REQUIRE(inst.size() == 20);
  for (const auto& in : inst) CHECK(in.tokens.size() == opt.max_seq_length);

  // The truncation draws one number per dropped token, as Google's does: the instances of the
  // sample corpus (short sequences, so most pairs are truncated) are the ones the token-at-a-time
  // loop made.
  opt.max_seq_length = 24;
  opt.max_predictions_per_seq = 4;
  CHECK(fingerprint(create_static_instances(docs(), opt, MaskingVocab::from(tok()))) == 0xfa32917e991e3487ULL);
}

TEST_CASE("whole-word masking masks every piece of a word together", "[pretraining]") {
  PretrainingOptions opt;
  opt.dupe_factor = 1;
  opt.whole_word_mask = true;
  const MaskingVocab mv = MaskingVocab::from(tok());
  size_t words_with_pieces = 0;
  for (const auto& in : create_static_instances(docs(), opt, mv)) {
    std::set<int32_t> pos(in.masked_positions.begin(), in.masked_positions.end());
    for (size_t k = 0; k < in.masked_positions.size(); ++k) {
      const size_t p = size_t(in.masked_positions[k]);
      // a masked continuation's predecessor is masked too (unless truncation cut the word's
      // start off, leaving the piece right after [CLS] or [SEP]); a masked word's continuation too
      if (mv.continuation[size_t(in.masked_labels[k])] && !mv.never_mask[size_t(in.tokens[p - 1])])
        REQUIRE(pos.count(int32_t(p - 1)));
      if (p + 1 < in.tokens.size() && pos.count(int32_t(p + 1)) == 0) {
        const int32_t next = in.tokens[p + 1];
        REQUIRE_FALSE(mv.continuation[size_t(next)]);
      }
      words_with_pieces += mv.continuation[size_t(in.masked_labels[k])];
    }
  }
  CHECK(words_with_pieces > 0);
}

TEST_CASE("shards round-trip exactly and reject corrupt files", "[pretraining][errors]") {
  PretrainingOptions opt;
  opt.dupe_factor = 1;
  const auto inst = create_static_instances(docs(), opt, MaskingVocab::from(tok()));
  const std::string dir = tmp("shards");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/shard_99999.bin") << "a shard of an earlier run";
  const auto paths = write_shards(inst, dir, 50, opt, tok());
  REQUIRE(paths.size() == (inst.size() + 49) / 50);
  CHECK(!std::filesystem::exists(dir + "/shard_99999.bin"));  // not mixed into this run's
  CHECK(std::filesystem::exists(dir + "/checksums.json"));
  size_t i = 0;
  for (const auto& p : paths) {
    ShardReader r(p);
    for (size_t k = 0; k < r.size(); ++k, ++i) {
      const Instance got = r.get(k);
      REQUIRE(got.tokens == inst[i].tokens);
      REQUIRE(got.a_end == inst[i].a_end);
      REQUIRE(got.is_random_next == inst[i].is_random_next);
      REQUIRE(got.masked_positions == inst[i].masked_positions);
      REQUIRE(got.masked_labels == inst[i].masked_labels);
    }
  }
  CHECK(i == inst.size());
  // shards.json says how they were made, and is listed with the shards
  const auto recipe = read_shard_recipe(dir, paths, xg::verify_checksums(dir));
  REQUIRE(recipe);
  CHECK(recipe->files.size() == paths.size());
  CHECK(recipe->pairing == "nsp");
  CHECK(recipe->probe_text == kTokenizerProbe);
  CHECK(recipe->probe_ids == probe_ids(tok(), kTokenizerProbe));
  CHECK(recipe->probe_ids.size() > 5);
  std::stringstream listing;
  listing << std::ifstream(dir + "/checksums.json").rdbuf();
  CHECK_THAT(listing.str(), Contains(kShardRecipeFile));
  std::vector<Instance> eval;
  CHECK(xg::training::ShardSource(dir, 4, eval).recipe()->probe_ids == recipe->probe_ids);
  const std::string unreadable = tmp("recipe_unreadable");
  std::filesystem::remove_all(unreadable);
  std::filesystem::create_directories(unreadable);
  std::ofstream(unreadable + "/" + kShardRecipeFile) << R"({"pairing": "nsp-ish", "tokenizer_probe": {"text": "a", "ids": []}})";
  CHECK_THROWS_WITH(read_shard_recipe(unreadable, {}, std::nullopt), Contains(kShardRecipeFile) && Contains("nsp-ish"));
  std::ofstream(unreadable + "/" + kShardRecipeFile) << R"({"pairing": "sop"})";
  CHECK_THROWS_WITH(read_shard_recipe(unreadable, {}, std::nullopt), Contains(kShardRecipeFile) && Contains("tokenizer_probe"));
  CHECK(!read_shard_recipe(tmp("recipe_none_here"), {}, std::nullopt));  // shards made before it
  // the first build that wrote shards.json listed no files: its pairing and probe still count
  std::ofstream(unreadable + "/" + kShardRecipeFile) << R"({"pairing": "sop", "tokenizer_probe": {"text": "a", "ids": [7]}})";
  const auto first = read_shard_recipe(unreadable, {unreadable + "/shard_00000.bin"}, std::nullopt);
  REQUIRE(first);
  CHECK(first->pairing == "sop");
  CHECK(first->files.empty());
  {  // an earlier build remade the shards in this folder (SOP pairs), kept shards.json and listed it
    const std::string stale = tmp("recipe_stale");
    std::filesystem::remove_all(stale);
    std::filesystem::copy(dir, stale);
    PretrainingOptions sop = opt;
    sop.pairing = Pairing::SentenceOrder;
    const std::string kept = tmp("recipe_kept.json");
    std::filesystem::copy_file(stale + "/" + kShardRecipeFile, kept, std::filesystem::copy_options::overwrite_existing);
    const auto remade = write_shards(create_static_instances(docs(), sop, MaskingVocab::from(tok())), stale, 50, sop, tok());
    std::filesystem::copy_file(kept, stale + "/" + kShardRecipeFile, std::filesystem::copy_options::overwrite_existing);
    xg::write_checksums(stale);
    CHECK_THROWS_WITH(read_shard_recipe(stale, remade, xg::verify_checksums(stale)), Contains("describes other shards") && Contains(stale) &&
                                                            Contains("remove shards.json to train on them unchecked"));
    std::vector<std::string> one_less = paths;  // a shard removed by hand is named
    one_less.pop_back();
    CHECK_THROWS_WITH(read_shard_recipe(dir, one_less, xg::verify_checksums(dir)), Contains(fmt::format("its shard_{:05d}.bin is not there", paths.size() - 1)));
    std::vector<Instance> none;
    CHECK_THROWS_WITH(xg::training::ShardSource(stale, 4, none), Contains("describes other shards"));
    std::filesystem::remove(stale + "/" + kShardRecipeFile);  // without it: trusted, as shards made before it
    xg::write_checksums(stale);
    CHECK(!read_shard_recipe(stale, remade, xg::verify_checksums(stale)));
  }
  // the writer refuses an id the reader would refuse, naming it
  Instance outside = inst[0];
  outside.masked_labels[0] = int32_t(tok().vocab_size());
  ShardWriter refusing(tmp("refused.bin"), opt.max_seq_length, opt.max_predictions_per_seq, tok().vocab_size());
  CHECK_THROWS_WITH(refusing.write(outside), Contains(fmt::format("label {} is outside the vocabulary", tok().vocab_size())));
  outside = inst[0];
  outside.tokens[1] = -1;
  CHECK_THROWS_WITH(refusing.write(outside), Contains("token id -1"));
  // ... and every other record the reader refuses: predictions out of order, no first segment
  outside = inst[0];
  REQUIRE(outside.masked_positions.size() >= 2);
  std::swap(outside.masked_positions[0], outside.masked_positions[1]);
  CHECK_THROWS_WITH(refusing.write(outside), Contains("prediction 1 at position") && Contains("positions ascend within"));
  outside = inst[0];
  outside.a_end = 0;
  CHECK_THROWS_WITH(refusing.write(outside), Contains("(a_end 0)") && Contains(tmp("refused.bin")));
  outside = inst[0];
  outside.masked_labels.pop_back();
  CHECK_THROWS_WITH(refusing.write(outside), Contains("do not fit"));
  // truncated file
  const std::string cut = tmp("cut.bin");
  std::filesystem::copy_file(paths[0], cut, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(cut, std::filesystem::file_size(cut) - 10);
  CHECK_THROWS_WITH(ShardReader(cut), Contains("truncated") && Contains(cut));
  // a forged record count whose product with the record size wraps around to the file's size
  // (found by fuzz_shard: the reader then promised 2^57 records)
  const std::string forged = tmp("forged.bin");
  std::filesystem::copy_file(paths[0], forged, std::filesystem::copy_options::overwrite_existing);
  const uint64_t count = ShardReader(paths[0]).size(), record = (std::filesystem::file_size(forged) - 32) / count;
  const uint64_t wrapped = count + (uint64_t(1) << (64 - __builtin_ctzll(record)));
  REQUIRE(wrapped * record == count * record);
  {
    std::fstream f(forged, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(24);  // the header's record count
    for (int b = 0; b < 8; ++b) f.put(char(uint8_t(wrapped >> (8 * b))));
  }
  CHECK_THROWS_WITH(ShardReader(forged), Contains("truncated") && Contains(forged));
  // a refused shard leaves no file open (found by fuzz_shard: each one leaked its FILE)
  auto open_files = [] {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
    return n;
  };
  const size_t before = open_files();
  for (int k = 0; k < 5; ++k) CHECK_THROWS(ShardReader(forged));
  CHECK(open_files() == before);
  // not a shard
  const std::string junk = tmp("junk.bin");
  std::ofstream(junk) << "definitely not a shard file at all, but long enough to read a header from";
  CHECK_THROWS_WITH(ShardReader(junk), Contains("not an xgrad pre-training shard"));
  // a record whose token id is out of the vocabulary
  const std::string bad = tmp("bad.bin");
  std::filesystem::copy_file(paths[0], bad, std::filesystem::copy_options::overwrite_existing);
  {
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(32 + 8 + 4);  // record 0, token 1
    const char big[4] = {'\xff', '\xff', '\xff', '\x7f'};
    f.write(big, 4);
  }
  ShardReader r(bad);
  CHECK_THROWS_WITH(r.get(0), Contains("record 0") && Contains("token id"));
  CHECK_THROWS_AS(r.get(r.size()), std::out_of_range);
  // forged records: an id of 2^32 - 1 (negative as int32), a sentence label byte of 2
  auto forge = [&](size_t offset, std::vector<char> bytes) {
    const std::string path = tmp("forged_record.bin");
    std::filesystem::copy_file(paths[0], path, std::filesystem::copy_options::overwrite_existing);
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(long(32 + offset));
    f.write(bytes.data(), long(bytes.size()));
    return path;
  };
  ShardReader huge_id(forge(8 + 4, {'\xff', '\xff', '\xff', '\xff'}));
  CHECK_THROWS_WITH(huge_id.get(0), Contains("record 0") && Contains("token id -1"));
  ShardReader label_two(forge(4, {'\x02'}));
  CHECK_THROWS_WITH(label_two.get(0), Contains("record 0") && Contains("sentence label 2"));
  // a header no reader accepts is refused before the file exists
  const std::string no_header = tmp("no_header.bin");
  CHECK_THROWS_WITH(ShardWriter(no_header, 70000, 20, 100), Contains("max_seq_length 70000") && Contains(no_header));
  CHECK_THROWS_WITH(ShardWriter(no_header, 128, 0, 100), Contains("max_predictions 0"));
  CHECK_THROWS_WITH(ShardWriter(no_header, 128, 20, 0), Contains("vocabulary 0"));
  CHECK(!std::filesystem::exists(no_header + ".tmp"));
}

// Shards evaluate on documents that no training record draws on: create_pretraining_data holds
// them out into held_out.bin. Shards made before give their last records, as they always did.
TEST_CASE("shards: held_out.bin holds the held-out documents' instances, and bert_pretrain evaluates on them", "[pretraining]") {
  PretrainingOptions opt;
  opt.dupe_factor = 1;
  opt.max_seq_length = 64;
  std::vector<Document> training = docs();
  const auto which = held_out_documents(training.size(), 2, false);
  REQUIRE(which == std::vector<size_t>{10, 30});
  CHECK(held_out_documents(training.size(), 0, false).empty());  // create_pretraining_data --eval-min-documents 0
  const std::vector<Document> held = take_documents(training, which);
  REQUIRE(held.size() == 2);
  REQUIRE(training.size() == 38);
  CHECK(held[0] == docs()[10]);
  CHECK(training[10] == docs()[11]);  // the rest in order
  const auto inst = create_static_instances(training, opt, MaskingVocab::from(tok()));
  const auto held_inst = create_static_instances(held, opt, MaskingVocab::from(tok()));
  const std::string dir = tmp("held_shards");
  std::filesystem::remove_all(dir);
  write_shards(inst, dir, 100, opt, tok(), held_inst);
  std::stringstream listing;
  listing << std::ifstream(dir + "/checksums.json").rdbuf();
  CHECK_THAT(listing.str(), Contains(kHeldOutShard));

  std::vector<Instance> eval;
  xg::training::ShardSource with(dir, 8, eval);
  CHECK(with.held_out_documents());
  CHECK(with.epoch_size(0) == inst.size());  // every training record trains
  REQUIRE(eval.size() == 8);
  for (size_t i = 0; i < eval.size(); ++i) CHECK(eval[i].tokens == held_inst[i].tokens);
  std::vector<Instance> all_of_it;
  xg::training::ShardSource(dir, held_inst.size() + 5, all_of_it);  // asked for more than it holds: all of it
  CHECK(all_of_it.size() == held_inst.size());

  // made again without held-out documents (or before them): the earlier held_out.bin goes, and the
  // last records are held out
  write_shards(inst, dir, 100, opt, tok());
  CHECK(!std::filesystem::exists(std::filesystem::path(dir) / kHeldOutShard));
  std::vector<Instance> last;
  xg::training::ShardSource without(dir, 8, last);
  CHECK(!without.held_out_documents());
  CHECK(without.epoch_size(0) == inst.size() - 8);
  REQUIRE(last.size() == 8);
  CHECK(last[0].tokens == inst[inst.size() - 8].tokens);

  // a held_out.bin of other settings is refused with the shards' other checks
  PretrainingOptions longer = opt;
  longer.max_seq_length = 128;
  {
    ShardWriter w((std::filesystem::path(dir) / kHeldOutShard).string(), longer.max_seq_length, longer.max_predictions_per_seq,
                  tok().vocab_size());
    w.write(held_inst[0]);
    w.close();
  }
  std::vector<Instance> refused;  // not listed in checksums.json: refused as any shard would be
  CHECK_THROWS_WITH(xg::training::ShardSource(dir, 8, refused), Contains(kHeldOutShard) && Contains("not among the shards listed"));
  xg::write_checksums(dir);  // listed (a hand-made directory): still not of these shards' settings
  CHECK_THROWS_WITH(xg::training::ShardSource(dir, 8, refused), Contains(kHeldOutShard) && Contains("shards of different runs"));
  // and one with no instances holds nothing out
  {
    ShardWriter w((std::filesystem::path(dir) / kHeldOutShard).string(), opt.max_seq_length, opt.max_predictions_per_seq,
                  tok().vocab_size());
    w.close();
  }
  xg::write_checksums(dir);  // of these settings, but not among the files shards.json describes
  CHECK_THROWS_WITH(xg::training::ShardSource(dir, 8, refused), Contains("describes other shards") && Contains("held_out.bin is not among its files"));
  std::filesystem::remove(std::filesystem::path(dir) / kShardRecipeFile);  // without it, the held-out shard's own check
  xg::write_checksums(dir);
  CHECK_THROWS_WITH(xg::training::ShardSource(dir, 8, refused), Contains(kHeldOutShard) && Contains("holds no instances"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("dynamic masking: new masks each epoch, deterministic, resumable at any index", "[pretraining]") {
  PretrainingOptions opt;
  DynamicDataset a(docs(), opt, MaskingVocab::from(tok())), b(docs(), opt, MaskingVocab::from(tok()));
  const size_t n0 = a.epoch_size(0);
  REQUIRE(n0 > 50);
  // resuming in the middle of epoch 1 gives exactly what an uninterrupted run sees
  const Instance mid = a.get(1, 17);
  CHECK(b.get(1, 17).tokens == mid.tokens);
  CHECK(b.get(1, 17).masked_positions == mid.masked_positions);
  // a different epoch pairs and masks differently
  bool differs = false;
  for (size_t i = 0; i < 5; ++i) differs = differs || a.get(0, i).tokens != a.get(1, i).tokens;
  CHECK(differs);
  CHECK_THROWS_AS(a.get(0, n0), std::out_of_range);
}

TEST_CASE("pre-training options are validated", "[pretraining][errors]") {
  PretrainingOptions o;
  o.masked_lm_prob = 1.5f;
  CHECK_THROWS_WITH(o.validate(), Contains("masked_lm_prob 1.5"));
  o = {};
  o.max_seq_length = 3;
  CHECK_THROWS_WITH(o.validate(), Contains("max_seq_length 3"));
  o = {};
  o.dupe_factor = 0;
  CHECK_THROWS_WITH(o.validate(), Contains("dupe_factor"));
  o = {};
  o.mask_token_rate = 0.95f;  // with random_token_rate 0.1: more than every token
  CHECK_THROWS_WITH(o.validate(), Contains("mask_token_rate 0.95") && Contains("random_token_rate 0.1"));
}
