#pragma once
// Pre-training examples as the families' recipes make them: BERT's sentence pairs for MLM + NSP
// (Google's create_pretraining_data), ALBERT's for MLM + SOP (Google's ALBERT version), and
// RoBERTa's single segments of full sentences for MLM only (Liu et al. 2019, section 4.2).
// Input: plain text, one sentence per line, a blank line between documents.
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "text/tokenizer.hpp"
#include "util/random.hpp"

namespace xg::text {

// How sentences become an instance's tokens.
enum class Pairing {
  NextSentence,   // [CLS] A [SEP] B [SEP]; B follows A, or half the time comes from another document (BERT)
  SentenceOrder,  // [CLS] A [SEP] B [SEP]; B follows A, half the time the two are swapped (ALBERT)
  FullSentences,  // [CLS] sentences [SEP]: contiguous sentences packed to the length, crossing
                  // document boundaries with a [SEP] between documents (RoBERTa's FULL-SENTENCES)
  DocSentences,   // as FullSentences, but an instance never crosses a document boundary
};
// "nsp", "sop", "full-sentences", "doc-sentences"; parse_pairing throws listing them.
std::string pairing_name(Pairing p);
Pairing parse_pairing(const std::string& name);

struct PretrainingOptions {
  Pairing pairing = Pairing::NextSentence;
  size_t max_seq_length = 128;
  size_t max_predictions_per_seq = 20;
  float masked_lm_prob = 0.15f;
  float short_seq_prob = 0.1f;  // how often to aim for a shorter sequence (sentence pairs only)
  size_t dupe_factor = 5;       // static mode: passes over the corpus, each with fresh masks
  bool whole_word_mask = false;
  size_t max_ngram = 1;  // > 1: mask spans of up to this many whole words (ALBERT: 3), see mask_instance
  // What a chosen token becomes: [MASK] at mask_token_rate, a random token at random_token_rate,
  // itself otherwise (BERT 0.8 and 0.1; ELECTRA 0.85 and 0).
  float mask_token_rate = 0.8f, random_token_rate = 0.1f;
  uint64_t seed = 12345;
  // Throws naming the field for impossible settings.
  void validate() const;
};

using Sentence = std::vector<int32_t>;
using Document = std::vector<Sentence>;

// Sentences are cut into pieces of at most this many tokens on load: more than any sequence holds
// (max_seq_length <= 65535), and a corpus without newlines stays linear to process.
constexpr size_t kMaxSentenceTokens = 65536;

// Reads and tokenises a corpus in the BERT format on all cores. Sentences that tokenise to
// nothing are dropped, then empty documents; longer sentences than kMaxSentenceTokens are split. Throws naming the file (and line, for invalid
// UTF-8) when it is missing or yields no document.
// `text_documents`, when set, receives how many documents the text holds before tokenising (as
// text_document_lines counts them).
std::vector<Document> load_documents(const std::string& path, const Tokenizer& tok,
                                     const std::function<void(size_t, size_t)>& progress = nullptr,
                                     size_t* text_documents = nullptr);

// A document's lines [first, end), numbered from 1.
struct LineRange {
  size_t first, end;
};
// The documents of a corpus in the BERT format as they are before tokenising: runs of non-blank
// lines (a vocabulary is trained from them before any tokenizer exists). load_documents finds the
// same ones, less any whose every line tokenises to nothing. Throws naming the file when it cannot
// be read.
std::vector<LineRange> text_document_lines(const std::string& path);

struct Instance {
  std::vector<int32_t> tokens;  // [CLS] A [SEP] B [SEP] (or [CLS] A [SEP] for a single segment), unpadded
  size_t a_end = 0;             // index of the first [SEP]; segment 0 is tokens[0 .. a_end]
  bool is_random_next = false;  // the sentence label: NSP 1 = B is from another document, SOP 1 = swapped
  std::vector<int32_t> masked_positions, masked_labels;  // sorted by position
  int32_t segment_id(size_t i) const { return i <= a_end ? 0 : 1; }
};

// What masking needs from the tokenizer, looked up once.
struct MaskingVocab {
  int32_t mask_id, cls_id, sep_id;
  size_t size = 0;
  std::vector<bool> never_mask;         // special tokens ([CLS], [SEP], [PAD], [UNK], [MASK], ...)
  std::vector<bool> continuation;       // tokens that do not start a word ("##" pieces), for whole-word masking
  std::vector<int32_t> random_choices;  // replacement tokens: the vocabulary minus specials and [unused*]
  static MaskingVocab from(const Tokenizer& tok);
};

// Google's create_instances_from_document: fills sequences to max_seq_length from document
// `doc_index` (shorter with probability short_seq_prob), splits each chunk into A and B at a
// sentence boundary; with probability 0.5 (always for one-sentence chunks) B comes from a random
// other document and the unused sentences go back; the pair is trimmed from its longer side,
// randomly front or back. Appends unmasked instances.
// With Pairing::SentenceOrder, ALBERT's variant: the same chunks, B always the rest of the chunk,
// A and B swapped with probability 0.5 (is_random_next = swapped). A chunk of one sentence is
// split inside it: Google's ALBERT code pairs it with another document's text instead, which makes
// such instances NSP's easy case rather than an order question.
void create_instances_from_document(const std::vector<Document>& docs, size_t doc_index, const PretrainingOptions& opt,
                                    const MaskingVocab& vocab, Generator& rng, std::vector<Instance>& out);

// RoBERTa's packing, over documents in `order`: see Pairing::FullSentences and DocSentences.
// A sentence longer than a sequence fills whole sequences. Appends unmasked instances.
void pack_full_sentences(const std::vector<Document>& docs, const std::vector<size_t>& order, const PretrainingOptions& opt,
                         const MaskingVocab& vocab, std::vector<Instance>& out);

// Instances of documents `order` per opt.pairing (unmasked).
void create_instances(const std::vector<Document>& docs, const std::vector<size_t>& order, const PretrainingOptions& opt,
                      const MaskingVocab& vocab, Generator& rng, std::vector<Instance>& out);

// How many of `tokens` tokens an instance masks, as Google's script counts them (Python's round).
size_t masked_count(size_t tokens, const PretrainingOptions& opt);

// Google's create_masked_lm_predictions: masked_lm_prob of the tokens (at least 1, at most
// max_predictions_per_seq), never a special token, whole words together when asked; each chosen
// token becomes [MASK] 80% of the time, a random token 10%, itself 10% (opt's rates).
// With max_ngram > 1, ALBERT's n-gram masking: from whole words taken in random order, a span of n
// consecutive words (n <= max_ngram, drawn by draw_ngram_length), shortened while it would exceed
// the budget, skipped if it overlaps one already masked.
void mask_instance(Instance& inst, const PretrainingOptions& opt, const MaskingVocab& vocab, Generator& rng);

// A span length in [1, max_n] with probability proportional to 1/n (ALBERT: 6:3:2 for n <= 3).
size_t draw_ngram_length(Generator& rng, size_t max_n);

// The documents of a corpus of `documents` held out for evaluation, ascending: 2% of them but at
// least `min_documents`, and never all (none below two documents or with min_documents 0); spread
// evenly through the corpus (the middle of each of as many equal stretches), so that a corpus in
// some order (by source, by date) is held out from all of it, or its last ones (`at_end`). Two at
// least, so that a held-out NSP negative can take its second sentence from another document.
std::vector<size_t> held_out_documents(size_t documents, size_t min_documents, bool at_end);
// Moves the documents `which` (ascending) out of `docs`, the rest keeping their order, and returns them.
std::vector<Document> take_documents(std::vector<Document>& docs, const std::vector<size_t>& which);
// Moves the documents `which` out of `docs` (as take_documents) and returns their held-out
// instances: one masking each (dupe_factor 1), drawn from seed + 1 so that they are not the
// training draws. bert_pretrain's held-out set of a text corpus and create_pretraining_data's
// held_out.bin are made so. None when `which` is empty.
std::vector<Instance> take_held_out_instances(std::vector<Document>& docs, const std::vector<size_t>& which,
                                              PretrainingOptions opt, const MaskingVocab& vocab);

// Static mode: dupe_factor passes over the (shuffled) documents, masked, shuffled.
std::vector<Instance> create_static_instances(std::vector<Document> docs, const PretrainingOptions& opt,
                                              const MaskingVocab& vocab,
                                              const std::function<void(size_t, size_t)>& progress = nullptr);

// Dynamic mode (RoBERTa-style): each epoch makes the instances anew (pairs drawn afresh, packed
// sequences in a new order) and masks every instance on the fly, from a generator seeded by (seed, epoch, index), so any position can be resumed.
class DynamicDataset {
 public:
  DynamicDataset(std::vector<Document> docs, PretrainingOptions opt, MaskingVocab vocab);
  // Instances of one epoch (unmasked pairs; deterministic for (seed, epoch)).
  size_t epoch_size(uint64_t epoch);
  // Masked instance `index` of `epoch`.
  Instance get(uint64_t epoch, size_t index);

 private:
  void prepare(uint64_t epoch);
  std::vector<Document> docs_;
  PretrainingOptions opt_;
  MaskingVocab vocab_;
  uint64_t prepared_epoch_ = UINT64_MAX;
  std::vector<Instance> pairs_;
};

// ---- static shards: fixed-size records, so any instance is one seek away ----
// Header: "XGBERT01", u32 version, u32 max_seq_length, u32 max_predictions, u32 vocab_size,
// u64 count. Record: u16 length, u16 a_end, u8 is_random_next, u8 0, u16 n_predictions,
// u32 tokens[max_seq_length], u16 positions[max_predictions], u32 labels[max_predictions].
class ShardWriter {
 public:
  ShardWriter(const std::string& path, size_t max_seq_length, size_t max_predictions, size_t vocab_size);
  void write(const Instance& inst);
  // Writes the count and renames the temporary file into place; before this no shard exists.
  void close();
  ~ShardWriter();
  size_t count() const { return count_; }

 private:
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
  size_t seq_, preds_, vocab_, count_ = 0;
};

class ShardReader {
 public:
  // Validates the header and the file size; throws naming the file.
  explicit ShardReader(const std::string& path);
  ~ShardReader();
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;
  size_t size() const { return count_; }
  size_t max_seq_length() const { return seq_; }
  size_t max_predictions() const { return preds_; }
  size_t vocab_size() const { return vocab_; }
  // Reads and validates record i (lengths, positions, ids); throws naming the file and record.
  Instance get(size_t i);

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  size_t seq_, preds_, vocab_, count_, record_bytes_;
};

// The shard of held-out instances (from documents that no other shard draws on), beside the others.
constexpr const char* kHeldOutShard = "held_out.bin";

// How a directory's shards were made, in DIR/shards.json (listed in checksums.json): what the
// records do not tell. Without it, shards of NSP pairs trained an MLM-only model, MLM-only shards
// an NSP head (on labels all 0: "NSP accuracy 100%"), and a cased tokenizer's ids were read with an
// uncased one's vocabulary.
constexpr const char* kShardRecipeFile = "shards.json";
// The text whose ids tell tokenizers apart: mixed case, accents, punctuation, digits.
constexpr const char* kTokenizerProbe = "The Caf\u00e9's NA\u00cfVE r\u00e9sum\u00e9, 1984: Stra\u00dfe \u00fcber-ready!";
struct ShardRecipe {
  std::string pairing;              // pairing_name() of the instances' pairing
  std::string probe_text;           // kTokenizerProbe when written
  std::vector<int32_t> probe_ids;   // what the shards' tokenizer made of probe_text
  std::optional<float> masked_lm_prob;   // the masking the records were made with, when recorded
  std::optional<bool> whole_word_mask;
  // The shard files it describes (held_out.bin included), as checksums.json lists them: an
  // earlier build writing into the folder replaced the shards and left this file.
  std::map<std::string, std::pair<uint64_t, std::string>> files;  // name -> (size, crc32c)
};
// DIR/shards.json, or nothing for shards made before it was written. Throws naming the file and
// field when it cannot be read, or when it describes other files than `shard_paths` (with their
// sizes, and their CRC32C where `listed`, the DIR/checksums.json verify_checksums checked them
// against, has them).
std::optional<ShardRecipe> read_shard_recipe(const std::string& dir, const std::vector<std::string>& shard_paths,
                                             const std::optional<nlohmann::json>& listed);
// The ids `tok` gives `text` (no special tokens).
std::vector<int32_t> probe_ids(const Tokenizer& tok, const std::string& text);

// Writes instances into shards of at most `per_shard` records: DIR/shard_00000.bin, ..., and
// `held_out` (when there are any) into DIR/held_out.bin, after removing the shard_*.bin,
// held_out.bin and shards.json of an earlier run there; then DIR/shards.json says how they were
// made (opt, `tok`'s ids of kTokenizerProbe, the files) and DIR/checksums.json lists them all.
std::vector<std::string> write_shards(const std::vector<Instance>& instances, const std::string& dir, size_t per_shard,
                                      const PretrainingOptions& opt, const Tokenizer& tok,
                                      const std::vector<Instance>& held_out = {});

}  // namespace xg::text
