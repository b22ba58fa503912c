#pragma once
// Named-entity data in CoNLL-2003 columns, and its alignment with a tokenizer's sub-tokens.
//
// A file holds one word per line, whitespace-separated columns with the word first and the tag in
// the last column (or a chosen one), blank lines between sentences and `-DOCSTART-` lines between
// documents; a UTF-8 BOM and CRLF line ends are accepted. Tags are "O" or PREFIX-TYPE in one of
// three schemes: IOB1 (CoNLL-2003's own: I- everywhere, B- only between two touching entities of
// one type), IOB2 (every entity opens with B-) and BIOES (S- for one-word entities, E- closing
// longer ones). Training uses one canonical scheme, IOB2; predictions go back to the file's scheme.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "text/tokenizer.hpp"

namespace xg::text {

enum class TagScheme { Auto, IOB1, IOB2, BIOES };

// "auto", "iob1", "iob2", "bioes" (case-insensitive; "iobes" also names BIOES); throws otherwise.
TagScheme parse_tag_scheme(const std::string& name);
std::string tag_scheme_name(TagScheme scheme);

struct ConllSentence {
  std::vector<std::string> words, tags;  // tags as written in the file
  size_t line = 0;                       // of the first word (1-based), for errors
};

struct ConllOptions {
  size_t tag_column = 0;                 // 1-based; 0: the last column
  TagScheme scheme = TagScheme::Auto;    // Auto: detected from the tags, see detect_tag_scheme
};

struct ConllData {
  std::vector<ConllSentence> sentences;
  TagScheme scheme = TagScheme::IOB2;    // the file's scheme (detected or as given)
  size_t columns = 0;                    // fields per word line
};

// Reads every sentence. Throws std::invalid_argument "[conll] path:line: ..." naming the field for
// a bad tag ("I-", "X-PER", a prefix the given scheme has not), a line with another number of
// columns than the first word line, a tag column past the last one; and for a file with no words.
ConllData read_conll(const std::string& path, const ConllOptions& options = {});

// BIOES when any tag is E- or S-; else IOB1 when an I- tag opens an entity (after O, another type or
// at a sentence start), which IOB2 never does; else IOB2.
TagScheme detect_tag_scheme(const std::vector<ConllSentence>& sentences);

// Whether `tag` is "O" or B-, I-, E-, S- followed by a type; `why` gets the reason when it is not.
bool valid_tag(const std::string& tag, std::string* why = nullptr);

// One sentence's tags from `scheme` to IOB2: an entity opens with B-, continues with I-.
std::vector<std::string> to_iob2(const std::vector<std::string>& tags, TagScheme scheme);
// IOB2 tags (predictions may be ill-formed: an I- after O or another type opens an entity, as
// seqeval reads it) into `scheme`.
std::vector<std::string> from_iob2(const std::vector<std::string>& tags, TagScheme scheme);

// The distinct IOB2 labels of the sentences: "O" first, then by type and B- before I-, so the
// label ids of one data set are the same on every run.
std::vector<std::string> ner_label_list(const std::vector<std::vector<std::string>>& iob2_tags);

// ---- Sub-token alignment ----

inline constexpr int64_t kIgnoreLabel = -100;  // positions the loss skips, as PyTorch's ignore_index

struct WordAlignOptions {
  size_t max_len = 128;   // tokens per window, special tokens included
  // Sub-tokens shared by consecutive windows of one long sentence; 0: a quarter of a window's room
  // for sub-tokens (max_len - 2), which suits any --max-len.
  size_t stride = 0;
  // Label every sub-token of a word (B-X's later pieces get I-X), not only the first.
  bool label_all_tokens = false;
};

// One model input: a window of a sentence's sub-tokens with the special tokens around it.
struct TokenWindow {
  size_t sentence = 0;                 // index of the sentence it comes from
  std::vector<int32_t> ids;            // with special tokens
  std::vector<int64_t> labels;         // per position; kIgnoreLabel where not trained
  std::vector<int64_t> word_start;     // per position: the word whose first sub-token this is, or -1
  size_t text_begin = 0, text_end = 0; // positions of the first and one past the last sub-token
};

// Code-point spans [start, end) of the words of `words` joined with single spaces.
std::vector<std::pair<size_t, size_t>> joined_word_spans(const std::vector<std::string>& words);
// Words of raw text as the tokenizer sees them: a word starts at every token that starts_word()
// (WordPiece: not "##"; BPE and SentencePiece: a marked word start), spans in code points.
std::vector<std::pair<size_t, size_t>> token_word_spans(const Tokenizer& tokenizer, const std::vector<Token>& tokens);

// Splits `tokens` (of one sentence's text) into windows of at most max_len positions. A token
// belongs to the word whose span ends after its start. `label_ids` (one per word, or empty for
// inference) label each word's first sub-token; with label_all_tokens the later ones get
// `continuation[label]` (the label itself when `continuation` is empty). A word with no sub-token
// (text the tokenizer drops) gets no position.
// Throws "[ner] ..." when max_len leaves no room for a sub-token or stride is not below the room.
std::vector<TokenWindow> align_words(const Tokenizer& tokenizer, const std::vector<Token>& tokens,
                                     const std::vector<std::pair<size_t, size_t>>& word_spans,
                                     const std::vector<int64_t>& label_ids, const std::vector<int64_t>& continuation,
                                     size_t sentence, const WordAlignOptions& options);

// For each label id of `id2label`, the id later sub-tokens take: I-X for B-X when I-X exists,
// else the label itself.
std::vector<int64_t> continuation_labels(const std::vector<std::string>& id2label);

// Where each word's prediction is read: the window (an index into `windows`, which all belong to
// one sentence) and position of its first sub-token. When overlapping windows both hold it, the
// one that gives it more context wins: the larger of the two smallest distances to a window edge
// (BERT's "max context" rule for SQuAD), so a word is never judged from the edge of a cut.
// window == npos for a word with no sub-token (it is predicted "O").
struct WordSource {
  size_t window = size_t(-1), position = 0;
};
std::vector<WordSource> word_sources(const std::vector<TokenWindow>& windows, const std::vector<size_t>& window_ids,
                                     size_t n_words);

// Raw text tokenized as a CoNLL sentence's words are: with byte-level BPE the first word gets its
// space mark too, as transformers' run_ner tokenizes words for these models (add_prefix_space),
// unless the text starts with a space; offsets stay the text's own. `where` names the text in
// errors.
std::vector<Token> tokenize_as_words(const Tokenizer& tokenizer, const std::string& text, const std::string& where);

// Raw text tokenized as tokenize_as_words tokenizes a sentence's words: split at whitespace
// (Unicode White_Space, where BERT's and byte-level BPE's pre-tokenizers split), joined by single
// spaces, offsets mapped back to the text's code points. Byte-level BPE would otherwise make a tab
// or a run of spaces tokens of their own: words training never saw.
std::vector<Token> tokenize_text_as_words(const Tokenizer& tokenizer, const std::string& raw, const std::string& where);

}  // namespace xg::text
