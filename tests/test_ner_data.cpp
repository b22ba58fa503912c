// The NER task's data path without a model: CoNLL files encoded into windows and batches, logits
// turned back into word tags (the window with more context wins), entities with code-point spans
// in raw text, and the predictions file in the input's own scheme.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "inference/ner_tagging.hpp"
#include "tests/temp_path.hpp"
#include "text/bert_tokenizer.hpp"
#include "text/roberta_tokenizer.hpp"
#include "training/tasks/ner_data.hpp"

using namespace xg;
using namespace xg::training;
using namespace xg::inference;
using Catch::Matchers::Contains;

namespace {
const text::Tokenizer& bert() {
  static const text::BertTokenizer t =
      text::BertTokenizer::from_file(std::string(XGRAD_TEST_DATA_DIR) + "/../../data/bert-base-uncased-vocab.txt");
  return t;
}

struct TempFile {
  explicit TempFile(const std::string& content, const std::string& name = "xgrad_ner") : path(temp_path(name)) {
    if (!content.empty()) std::ofstream(path, std::ios::binary) << content;
  }
  ~TempFile() { std::filesystem::remove(path); }
  std::string path;
};

const std::vector<std::string> kLabels{"O", "B-LOC", "B-PER", "I-PER"};

// Logits that make `label` the arg-max with margin `margin` at every position.
std::vector<float> logits_for(const std::vector<int64_t>& labels, float margin) {
  std::vector<float> out;
  for (int64_t l : labels)
    for (size_t c = 0; c < kLabels.size(); ++c) out.push_back(int64_t(c) == std::max<int64_t>(l, 0) ? margin : 0.0f);
  return out;
}
}  // namespace

TEST_CASE("ner data: a CoNLL file in IOB1 encodes to IOB2 labels and padded batches", "[ner]") {
  TempFile f("-DOCSTART- O\n\nJohanson I-PER\nlives O\nin O\nGrasmere I-LOC\n\nBonn I-LOC\n");
  text::WordAlignOptions align;
  const NerSet set = encode_conll(f.path, {}, bert(), kLabels, align);
  CHECK(set.scheme == text::TagScheme::IOB1);
  REQUIRE(set.sentences.size() == 2);
  CHECK(set.iob2_tags[0] == std::vector<std::string>{"B-PER", "O", "O", "B-LOC"});
  CHECK(set.windows_of == std::vector<std::vector<size_t>>{{0}, {1}});
  CHECK(set.words() == 5);
  const NerBatch b = make_ner_batch(set.windows, {0, 1}, bert().pad_id());
  CHECK(b.inputs.input_ids.shape() == Shape{2, 9});
  const auto labels = b.labels.to_ints();
  // johan ##son lives in gr ##as ##mere | bonn, padded with the ignore label
  CHECK(std::vector<int64_t>(labels.begin(), labels.begin() + 9) == std::vector<int64_t>{-100, 2, -100, 0, 0, 1, -100, -100, -100});
  CHECK(std::vector<int64_t>(labels.begin() + 9, labels.end()) == std::vector<int64_t>{-100, 1, -100, -100, -100, -100, -100, -100, -100});
  CHECK(b.tokens == 12);

  TempFile unknown("Bonn B-MISC\n");
  CHECK_THROWS_WITH(encode_conll(unknown.path, {}, bert(), kLabels, align),
                    Contains(":1: tag 'B-MISC' (as IOB2 'B-MISC') is not among the model's labels (O, B-LOC, B-PER, I-PER)"));
}

// transformers' run_ner gives RoBERTa's tokenizer add_prefix_space=True and the words one by one
// (is_split_into_words): each word, the first included, starts with its space mark (Ġ). Ids and
// word ids from RobertaTokenizerFast (transformers 4.45.2) on GPT-2's files, as
// tools/gen_bpe_goldens.py loads them.
TEST_CASE("ner data: byte-level BPE words are tokenized as run_ner does, the first word too", "[ner]") {
  const std::string data = std::string(XGRAD_TEST_DATA_DIR) + "/../../data/";
  const auto roberta = text::RobertaTokenizer::from_files(data + "gpt2-vocab.json", data + "gpt2-merges.txt", {});
  TempFile f("EU B-LOC\nrejects O\nGerman B-PER\ncall O\nU.S. B-LOC\ndon't O\nGrasmere B-LOC\nna\xc3\xafve O\n");
  const NerSet set = encode_conll(f.path, {}, roberta, kLabels, {});
  REQUIRE(set.windows.size() == 1);
  CHECK(set.windows[0].ids == std::vector<int32_t>{50257, 4576, 28317, 2679, 869, 471, 13, 50, 13, 836, 470, 1902, 8597, 567, 41492, 50258});
  // the label on each word's first token: word ids None 0 1 2 3 4 4 4 4 5 5 6 6 6 7 None
  CHECK(set.windows[0].labels == std::vector<int64_t>{-100, 1, 0, 2, 0, 1, -100, -100, -100, 0, -100, 1, -100, -100, 0, -100});

  // Raw text (bert_infer ner) goes in as the same ids, and its entities keep the text's offsets.
  std::vector<int64_t> seen;
  const auto found = tag_texts({"EU rejects German call"}, roberta, kLabels, {}, 8,
                               [&](const models::ModelInputs& in) {
                                 seen = in.input_ids.to_ints();
                                 const size_t T = in.input_ids.size(1);
                                 std::vector<float> logits;
                                 for (size_t t = 0; t < T; ++t)  // B-LOC everywhere
                                   for (size_t c = 0; c < kLabels.size(); ++c) logits.push_back(c == 1 ? 5.f : 0.f);
                                 return Tensor::from_vector(logits, {1, T, kLabels.size()});
                               },
                               [](size_t) { return std::string("text"); });
  CHECK(seen == std::vector<int64_t>{50257, 4576, 28317, 2679, 869, 50258});
  REQUIRE(found.size() == 1);
  REQUIRE(!found[0].empty());
  CHECK(found[0][0].text == "EU");
  CHECK(found[0][0].start == 0);

  SECTION("whitespace runs, tabs and edges split words as CoNLL's columns do, offsets the raw text's") {
    // Byte-level BPE alone makes a tab or a second space tokens of their own: words never trained on.
    std::vector<int64_t> raw_ids;
    const auto tag_all_loc = [](std::vector<int64_t>& ids) {
      return [&ids](const models::ModelInputs& in) {
        ids = in.input_ids.to_ints();
        const size_t T = in.input_ids.size(1);
        std::vector<float> logits;
        for (size_t t = 0; t < T; ++t)
          for (size_t c = 0; c < kLabels.size(); ++c) logits.push_back(c == 1 ? 5.f : 0.f);
        return Tensor::from_vector(logits, {1, T, kLabels.size()});
      };
    };
    const auto where = [](size_t) { return std::string("text"); };
    const std::string raw = "  EU\trejects  G\xc3\xa9rman call \r";
    const auto entities = tag_texts({raw}, roberta, kLabels, {}, 8, tag_all_loc(raw_ids), where)[0];
    std::vector<int64_t> clean_ids;
    tag_texts({"EU rejects G\xc3\xa9rman call"}, roberta, kLabels, {}, 8, tag_all_loc(clean_ids), where);
    CHECK(raw_ids == clean_ids);
    REQUIRE(entities.size() == 4);  // B-LOC on every word: one entity each
    const std::vector<std::tuple<std::string, size_t, size_t>> expected{
        {"EU", 2, 4}, {"rejects", 5, 12}, {"G\xc3\xa9rman", 14, 20}, {"call", 21, 25}};
    for (size_t i = 0; i < 4; ++i)
      CHECK(std::tuple{entities[i].text, entities[i].start, entities[i].end} == expected[i]);
    CHECK(tag_texts({" \t "}, roberta, kLabels, {}, 8, tag_all_loc(raw_ids), where)[0].empty());
  }
}

TEST_CASE("ner data: words take the tag of their first sub-token, from the window with more context", "[ner]") {
  // 12 one-piece words in windows of 4 sharing 2 (see test_conll_data): word 3 sits at the edge of
  // window 0 and inside window 1; give the two windows different opinions about it.
  std::vector<std::string> words(12, "the");
  std::string joined;
  for (const auto& w : words) joined += (joined.empty() ? "" : " ") + w;
  text::WordAlignOptions align;
  align.max_len = 6;
  align.stride = 2;
  const auto windows = text::align_words(bert(), bert().tokenize(joined), text::joined_word_spans(words), {}, {}, 0, align);
  REQUIRE(windows.size() == 5);
  std::vector<std::vector<float>> logits;
  for (size_t w = 0; w < windows.size(); ++w) logits.push_back(logits_for(std::vector<int64_t>(6, int64_t(w % 2 ? 2 : 1)), 2.0f));
  const WordTags tags = predict_words(windows, {0, 1, 2, 3, 4}, logits, kLabels, 12);
  // windows 0, 2, 4 say B-LOC, windows 1, 3 B-PER; words 3 and 4 come from window 1, 5 from window 2
  CHECK(tags.tags[2] == "B-LOC");
  CHECK(tags.tags[3] == "B-PER");
  CHECK(tags.tags[4] == "B-PER");
  CHECK(tags.tags[5] == "B-LOC");
  const float expected = float(std::exp(2.0) / (std::exp(2.0) + 3.0));
  CHECK(tags.scores[0] == Approx(expected));
}

TEST_CASE("ner data: entities of raw text with code-point spans", "[ner]") {
  const std::string text = "Zürich ist schön, sagt Anna Kowalski.";
  const auto tokens = bert().tokenize(text);
  const auto spans = text::token_word_spans(bert(), tokens);
  REQUIRE(spans.size() == 8);  // zurich ist schon , sagt anna kowalski . (a word of several pieces is one)
  WordTags words;
  words.tags = {"B-LOC", "O", "O", "O", "O", "B-PER", "I-PER", "O"};
  words.scores = {0.9f, 1, 1, 1, 1, 0.8f, 0.6f, 1};
  const auto found = found_entities(text, spans, words);
  REQUIRE(found.size() == 2);
  CHECK(found[0].type == "LOC");
  CHECK(found[0].text == "Zürich");
  CHECK((found[0].start == 0 && found[0].end == 6));
  CHECK(found[0].score == Approx(0.9));
  CHECK(found[1].text == "Anna Kowalski");
  CHECK((found[1].start == 23 && found[1].end == 36));
  CHECK(found[1].score == Approx(0.7));
}

TEST_CASE("ner data: the predictions file keeps the input's scheme", "[ner]") {
  TempFile f("EU S-ORG\nrejects O\nGerman S-MISC\n\nPeter B-PER\nBlackburn E-PER\n");
  const std::vector<std::string> labels{"O", "B-MISC", "B-ORG", "B-PER", "I-PER"};
  const NerSet set = encode_conll(f.path, {}, bert(), labels, {});
  CHECK(set.scheme == text::TagScheme::BIOES);
  TempFile out("", "xgrad_ner_predictions");
  write_conll_predictions(out.path, set, {{"B-ORG", "O", "O"}, {"I-PER", "I-PER"}});
  std::ifstream in(out.path);
  std::stringstream s;
  s << in.rdbuf();
  CHECK(s.str() == "EU S-ORG S-ORG\nrejects O O\nGerman S-MISC O\n\nPeter B-PER B-PER\nBlackburn E-PER E-PER\n\n");
}
