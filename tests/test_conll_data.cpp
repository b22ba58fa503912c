// CoNLL-2003 data on hostile small files (CRLF, BOM, -DOCSTART-, wrong column counts, bad tags,
// empty files), tag scheme detection and conversion both ways, and sub-token alignment with
// windows that overlap and a merge that picks the window with the most context.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "tests/temp_path.hpp"
#include "text/bert_tokenizer.hpp"
#include "text/conll_data.hpp"

using namespace xg::text;
using Catch::Matchers::Contains;

namespace {
struct TempConll {
  explicit TempConll(const std::string& content) : path(temp_path("xgrad_conll") + ".conll") {
    std::ofstream(path, std::ios::binary) << content;
  }
  ~TempConll() { std::filesystem::remove(path); }
  std::string path;
};

ConllData read(const std::string& content, const ConllOptions& o = {}) {
  TempConll f(content);
  return read_conll(f.path, o);
}

// The error message of reading `content`, with the temporary path replaced by "F".
std::string read_error(const std::string& content, const ConllOptions& o = {}) {
  TempConll f(content);
  try {
    read_conll(f.path, o);
  } catch (const std::invalid_argument& e) {
    std::string m = e.what();
    const size_t at = m.find(f.path);
    if (at != std::string::npos) m.replace(at, f.path.size(), "F");
    return m;
  }
  return "no error";
}

const Tokenizer& bert() {
  static const BertTokenizer t = BertTokenizer::from_file(std::string(XGRAD_TEST_DATA_DIR) + "/../../data/bert-base-uncased-vocab.txt");
  return t;
}

std::vector<std::string> words_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}
}  // namespace

TEST_CASE("conll: CoNLL-2003 columns with -DOCSTART-, blank lines, CRLF and a BOM", "[conll]") {
  const std::string file =
      "\xEF\xBB\xBF-DOCSTART- -X- -X- O\r\n\r\n"
      "EU NNP B-NP I-ORG\r\nrejects VBZ B-VP O\r\nGerman JJ B-NP I-MISC\r\n\r\n\r\n"
      "Peter NNP B-NP I-PER\r\nBlackburn NNP I-NP I-PER\r\n"
      "-DOCSTART- -X- -X- O\n"
      "Bonn\tNNP\tB-NP\tI-LOC\n";  // tabs separate as well as spaces; no blank line at the end
  const ConllData d = read(file);
  REQUIRE(d.sentences.size() == 3);
  CHECK(d.columns == 4);
  CHECK(d.sentences[0].words == std::vector<std::string>{"EU", "rejects", "German"});
  CHECK(d.sentences[0].tags == std::vector<std::string>{"I-ORG", "O", "I-MISC"});
  CHECK(d.sentences[0].line == 3);
  CHECK(d.sentences[1].words == std::vector<std::string>{"Peter", "Blackburn"});
  CHECK(d.sentences[2].words == std::vector<std::string>{"Bonn"});
  CHECK(d.scheme == TagScheme::IOB1);  // I- opens entities: CoNLL-2003's own scheme

  // the tag in a chosen column: the chunk tags of column 3
  ConllOptions chunk;
  chunk.tag_column = 3;
  CHECK(read(file, chunk).sentences[1].tags == std::vector<std::string>{"B-NP", "I-NP"});
}

TEST_CASE("conll: errors name the file, line and field", "[conll]") {
  CHECK(read_error("") == "[conll] F: no words (an empty file?)");
  CHECK(read_error("-DOCSTART- O\n\n\n") == "[conll] F: no words (an empty file?)");
  CHECK(read_error("EU B-ORG\nrejects I-\n") == "[conll] F:2: field 2 (tag) 'I-': no entity type after the prefix");
  CHECK(read_error("EU X-PER\n") == "[conll] F:1: field 2 (tag) 'X-PER': unknown prefix 'X' (B, I, E or S)");
  CHECK(read_error("EU PER\n") == "[conll] F:1: field 2 (tag) 'PER': a tag is O or PREFIX-TYPE (B-PER, I-LOC, E-ORG, S-MISC)");
  CHECK(read_error("EU NNP B-ORG\n\nrejects O\n") == "[conll] F:3: 2 columns where the first word line has 3");
  CHECK(read_error("EU\n") == "[conll] F:1: 1 column ('EU'): a word line needs the word and its tag");
  CHECK(read_error("EU B-ORG\nsa\xffys O\n") == "[conll] F:2: invalid UTF-8 at byte 2 (0xff)");
  ConllOptions col5;
  col5.tag_column = 5;
  CHECK(read_error("EU NNP B-ORG\n", col5) == "[conll] F:1: no tag column 5 (the lines have 3 columns)");
  ConllOptions iob2;
  iob2.scheme = TagScheme::IOB2;
  CHECK(read_error("EU B-ORG\nsays O\nBonn S-LOC\n", iob2) == "[conll] F:3: field 2 (tag) 'S-LOC': the iob2 scheme has no S- tags");
  CHECK_THROWS_WITH(read_conll("/nonexistent/x.conll"), Contains("[conll] /nonexistent/x.conll: cannot open"));
  CHECK_THROWS_WITH(parse_tag_scheme("bilou"), Contains("unknown tag scheme 'bilou'"));
}

TEST_CASE("conll: scheme detection", "[conll]") {
  auto scheme = [](std::vector<std::vector<std::string>> tag_sets) {
    std::vector<ConllSentence> s;
    for (auto& t : tag_sets) s.push_back({std::vector<std::string>(t.size(), "w"), t, 1});
    return detect_tag_scheme(s);
  };
  CHECK(scheme({{"B-PER", "I-PER", "O", "B-LOC"}}) == TagScheme::IOB2);
  CHECK(scheme({{"B-PER", "I-PER"}, {"I-LOC"}}) == TagScheme::IOB1);            // I- at a sentence start
  CHECK(scheme({{"B-PER", "I-PER", "I-LOC"}}) == TagScheme::IOB1);              // I- of another type
  CHECK(scheme({{"B-PER", "E-PER", "O"}, {"O", "O"}}) == TagScheme::BIOES);
  CHECK(scheme({{"S-PER"}}) == TagScheme::BIOES);
  CHECK(scheme({{"O", "O"}}) == TagScheme::IOB2);
}

TEST_CASE("conll: schemes convert to IOB2 and back", "[conll]") {
  using V = std::vector<std::string>;
  // one sequence written in the three schemes: two touching PERs, a one-word LOC, an ORG of 3 words
  const V iob1{"I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG", "I-ORG", "I-ORG", "I-MISC"};
  const V iob2{"B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG", "I-ORG", "I-ORG", "B-MISC"};
  const V bioes{"B-PER", "E-PER", "S-PER", "O", "S-LOC", "B-ORG", "I-ORG", "E-ORG", "S-MISC"};
  CHECK(to_iob2(iob1, TagScheme::IOB1) == iob2);
  CHECK(to_iob2(bioes, TagScheme::BIOES) == iob2);
  CHECK(to_iob2(iob2, TagScheme::IOB2) == iob2);
  CHECK(from_iob2(iob2, TagScheme::IOB1) == iob1);
  CHECK(from_iob2(iob2, TagScheme::BIOES) == bioes);
  CHECK(from_iob2(iob2, TagScheme::IOB2) == iob2);
  // ill-formed predictions: an I- opening an entity, a type change mid-entity
  const V predicted{"I-PER", "I-LOC", "O", "I-ORG"};
  CHECK(from_iob2(predicted, TagScheme::IOB2) == V{"B-PER", "B-LOC", "O", "B-ORG"});
  CHECK(from_iob2(predicted, TagScheme::BIOES) == V{"S-PER", "S-LOC", "O", "S-ORG"});
  CHECK(from_iob2(predicted, TagScheme::IOB1) == V{"I-PER", "I-LOC", "O", "I-ORG"});

  CHECK(ner_label_list({iob2, {"B-AAA"}}) == V{"O", "B-AAA", "B-LOC", "B-MISC", "B-ORG", "I-ORG", "B-PER", "I-PER"});
  CHECK(continuation_labels({"O", "B-LOC", "B-PER", "I-PER"}) == std::vector<int64_t>{0, 1, 3, 3});
}

TEST_CASE("conll: labels on the first sub-token of each word, or on all", "[conll][align]") {
  const auto words = words_of("Johanson lives in Grasmere");
  // "johanson" -> johan ##son, "grasmere" -> gr ##as ##mere in bert-base-uncased
  const std::vector<int64_t> labels{2, 0, 0, 1};  // O B-LOC B-PER I-PER
  const std::vector<int64_t> continuation = continuation_labels({"O", "B-LOC", "B-PER", "I-PER"});
  std::string text = "Johanson lives in Grasmere";
  const auto tokens = bert().tokenize(text);
  REQUIRE(tokens.size() == 7);
  WordAlignOptions o;
  const auto first = align_words(bert(), tokens, joined_word_spans(words), labels, continuation, 4, o);
  REQUIRE(first.size() == 1);
  CHECK(first[0].sentence == 4);
  CHECK(first[0].ids.front() == bert().cls_id());
  CHECK(first[0].ids.back() == bert().sep_id());
  CHECK(first[0].labels == std::vector<int64_t>{-100, 2, -100, 0, 0, 1, -100, -100, -100});
  CHECK(first[0].word_start == std::vector<int64_t>{-1, 0, -1, 1, 2, 3, -1, -1, -1});
  o.label_all_tokens = true;  // B-PER's second piece is I-PER; B-LOC has no I-LOC and keeps B-LOC
  const auto all = align_words(bert(), tokens, joined_word_spans(words), labels, continuation, 4, o);
  CHECK(all[0].labels == std::vector<int64_t>{-100, 2, 3, 0, 0, 1, 1, 1, -100});
}

TEST_CASE("conll: long sentences split into overlapping windows, merged per word", "[conll][align]") {
  // 12 one-piece words, windows of 4 sub-tokens (max_len 6) sharing 2: starts 0, 2, 4, 6, 8
  std::vector<std::string> words;
  std::vector<int64_t> labels;
  for (int i = 0; i < 12; ++i) {
    words.push_back("the");
    labels.push_back(i % 3);
  }
  std::string text;
  for (const auto& w : words) text += (text.empty() ? "" : " ") + w;
  WordAlignOptions o;
  o.max_len = 6;
  o.stride = 2;
  const auto windows = align_words(bert(), bert().tokenize(text), joined_word_spans(words), labels, {}, 0, o);
  REQUIRE(windows.size() == 5);
  CHECK(windows[1].word_start == std::vector<int64_t>{-1, 2, 3, 4, 5, -1});
  CHECK(windows[4].word_start == std::vector<int64_t>{-1, 8, 9, 10, 11, -1});
  CHECK(windows[4].labels == std::vector<int64_t>{-100, 2, 0, 1, 2, -100});
  const auto src = word_sources(windows, {0, 1, 2, 3, 4}, 12);
  // A position's context is its distance to the nearer window edge: 0, 1, 1, 0 for positions 1-4.
  CHECK(src[0].window == 0);
  CHECK(src[1].window == 0);
  CHECK((src[2].window == 0 && src[2].position == 3));  // context 1 in window 0, 0 at window 1's edge
  CHECK(src[3].window == 1);   // 0 at window 0's edge, 1 in window 1
  CHECK(src[4].window == 1);   // 1 in window 1, 0 at window 2's edge
  CHECK(src[5].window == 2);
  CHECK(src[10].window == 4);
  CHECK(src[11].window == 4);
  for (size_t w = 0; w < 12; ++w) CHECK(windows[src[w].window].word_start[src[w].position] == int64_t(w));

  o.stride = 0;  // the default: a quarter of the 4 sub-tokens a window holds, 1; windows start at 0, 3, 6, 9
  const auto quarter = align_words(bert(), bert().tokenize(text), joined_word_spans(words), labels, {}, 0, o);
  REQUIRE(quarter.size() == 4);
  CHECK(quarter[3].word_start == std::vector<int64_t>{-1, 9, 10, 11, -1});
  o.stride = 4;
  CHECK_THROWS_WITH(align_words(bert(), bert().tokenize(text), joined_word_spans(words), labels, {}, 0, o),
                    Contains("[ner] stride 4 must be below the 4 sub-tokens a window holds"));
  o.max_len = 2;
  CHECK_THROWS_WITH(align_words(bert(), bert().tokenize(text), joined_word_spans(words), labels, {}, 0, o),
                    Contains("[ner] max_len 2 leaves no room"));
}

TEST_CASE("conll: words of raw text follow the tokenizer's word starts", "[conll][align]") {
  const std::string text = "Grasmere,  Zürich";
  const auto tokens = bert().tokenize(text);
  const auto spans = token_word_spans(bert(), tokens);
  // gr ##as ##mere | , | zurich: three words, spans in code points of the original text
  REQUIRE(spans.size() == 3);
  CHECK(spans[0] == std::pair<size_t, size_t>{0, 8});
  CHECK(spans[1] == std::pair<size_t, size_t>{8, 9});
  CHECK(spans[2] == std::pair<size_t, size_t>{11, 17});
}
