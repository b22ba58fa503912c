// SQuAD data: the reader on hostile files (errors naming file, question id and field), and the
// features against transformers' run_qa.py on a file whose contexts need many windows
// (tests/data/squad_feature_goldens.json, tools/gen_squad_goldens.py).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "tests/golden.hpp"
#include "tests/temp_path.hpp"
#include "text/load_tokenizer.hpp"
#include "text/squad_data.hpp"

using namespace xg;
using namespace xg::text;
using Catch::Matchers::Contains;

namespace {
const std::string kData = std::string(XGRAD_TEST_DATA_DIR) + "/";

struct TempFile {
  explicit TempFile(const std::string& content) : path(temp_path("xgrad_squad") + ".json") {
    std::ofstream(path, std::ios::binary) << content;
  }
  ~TempFile() { std::filesystem::remove(path); }
  std::string path;
};

std::vector<SquadQuestion> read(const std::string& content) {
  TempFile f(content);
  return read_squad(f.path);
}

// A one-paragraph file with `qas` (a JSON array's text) over `context`.
std::string file_with(const std::string& context, const std::string& qas) {
  return R"({"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": ")" + context + R"(", "qas": )" + qas + "}]}]}";
}

std::unique_ptr<Tokenizer> uncased() { return open_tokenizer(kData + "../../data/bert-base-uncased-vocab.txt"); }
}  // namespace

TEST_CASE("squad data: v1.1 and v2.0 questions with answers, plausible answers and a shared context", "[squad]") {
  const auto q = read("\xEF\xBB\xBF" + file_with("Caf\u00e9 Bleu opened in 1999.",
                                                 R"([{"id": "a", "question": "When?", "answers": [{"text": "1999", "answer_start": 20},
                                                      {"text": "in 1999", "answer_start": 17}]},
                                                     {"id": "b", "question": "Who?", "answers": [], "is_impossible": true,
                                                      "plausible_answers": [{"text": "Caf\u00e9 Bleu", "answer_start": 0}]}])"));
  REQUIRE(q.size() == 2);
  CHECK(q[0].id == "a");
  CHECK(q[0].answers.size() == 2);
  CHECK(q[0].answers[0].start == 20);  // code points: é is one, though two bytes
  CHECK(!q[0].is_impossible);
  CHECK(q[1].is_impossible);
  CHECK(q[1].plausible_answers[0].text == "Caf\u00e9 Bleu");
  CHECK(q[0].context.get() == q[1].context.get());
  CHECK(code_point_slice(*q[0].context, 20, 24) == "1999");
  CHECK(code_point_slice(*q[0].context, 0, 4) == "Caf\u00e9");
}

TEST_CASE("squad data: hostile files fail naming the file, the question and the field", "[squad]") {
  const std::string ctx = "The bridge was finished in 1789.";
  auto fails = [](const std::string& content, const std::string& message) {
    TempFile f(content);
    CHECK_THROWS_WITH(read_squad(f.path), Contains("[squad] " + f.path) && Contains(message));
  };
  fails("{\"data\": [", "not valid JSON");
  fails("", "not valid JSON");
  fails("[1, 2]", "expected an object");
  fails("{\"version\": \"1.1\"}", "no field 'data'");
  fails("{\"data\": []}", "no questions");
  fails("{\"data\": [{\"paragraphs\": [{\"context\": \"x\", \"qas\": []}]}]}", "no questions");
  fails("{\"data\": [{\"title\": \"t\"}]}", "data[0]: no field 'paragraphs'");
  fails("{\"data\": [{\"paragraphs\": [{\"qas\": []}]}]}", "data[0].paragraphs[0]: no field 'context'");
  fails(file_with("  ", R"([{"id": "a", "question": "Q?", "answers": []}])"), "the context is empty");
  fails(file_with(ctx, R"([{"question": "Q?", "answers": []}])"), "qas[0]: no field 'id'");
  fails(file_with(ctx, R"([{"id": 7, "question": "Q?", "answers": []}])"), "'id' must be a string, got 7");
  fails(file_with(ctx, R"([{"id": "q1", "answers": []}])"), "question 'q1': no field 'question'");
  fails(file_with(ctx, R"([{"id": "q1", "question": " ", "answers": []}])"), "question 'q1': the question is empty");
  fails(file_with(ctx, R"([{"id": "q1", "question": "When?"}])"), "question 'q1': no field 'answers'");
  fails(file_with(ctx, R"([{"id": "q1", "question": "When?", "answers": []}])"), "question 'q1': no answers (and is_impossible is not true)");
  fails(file_with(ctx, R"([{"id": "q1", "question": "When?", "answers": [{"text": "1789"}]}])"), "question 'q1': answers[0]: no field 'answer_start'");
  fails(file_with(ctx, R"([{"id": "q1", "question": "When?", "answers": [{"text": "1789", "answer_start": -1}]}])"),
        "answer_start' must be an integer >= 0, got -1");
  fails(file_with(ctx, R"([{"id": "q1", "question": "When?", "answers": [{"text": "1789", "answer_start": 26}]}])"),
        "question 'q1': answers[0]: answer_start 26 points at ' 178', not at the answer text '1789'");
  fails(file_with(ctx, R"([{"id": "q1", "question": "When?", "answers": [{"text": "1789", "answer_start": 30}]}])"),
        "answer_start 30 points at '(past the end of the context)'");
  fails(file_with(ctx, R"([{"id": "q1", "question": "When?", "answers": [{"text": "", "answer_start": 0}]}])"), "answers[0]: the answer text is empty");
  fails(file_with(ctx, R"([{"id": "q1", "question": "Who?", "answers": [], "is_impossible": true,
                           "plausible_answers": [{"text": "bridge", "answer_start": 0}]}])"),
        "question 'q1': plausible_answers[0]: answer_start 0 points at 'The br'");
  fails(file_with(ctx, R"([{"id": "q1", "question": "When?", "answers": [{"text": "1789", "answer_start": 27}], "is_impossible": true}])"),
        "question 'q1': is_impossible is true but it has answers");
  fails(file_with(ctx, R"([{"id": "q1", "question": "When?", "answers": [], "is_impossible": "yes"}])"), "'is_impossible' must be true or false");
  fails(file_with(ctx, R"([{"id": "q1", "question": "When?", "answers": [{"text": "1789", "answer_start": 27}]},
                           {"id": "q1", "question": "Again?", "answers": [{"text": "1789", "answer_start": 27}]}])"),
        "question 'q1': the id is repeated");
  fails(file_with("bad \xff byte", R"([{"id": "q1", "question": "Q?", "answers": []}])"), "not valid JSON");  // JSON must be UTF-8
  CHECK_THROWS_WITH(read_squad("/nonexistent/squad.json"), Contains("[squad] /nonexistent/squad.json: cannot open"));
}

TEST_CASE("squad features: windows, offsets and answer positions equal run_qa.py's", "[squad]") {
  const auto g = test::load_golden("squad_feature_goldens.json");
  const auto questions = read_squad(kData + g["file"].get<std::string>());
  SquadFeatureOptions o;
  o.max_len = g["max_len"];
  o.doc_stride = g["doc_stride"];
  o.max_query_length = g["max_query_length"];
  const auto features = squad_features(questions, *uncased(), o);
  REQUIRE(features.size() == g["features"].size());
  size_t past_context = 0;
  for (size_t i = 0; i < features.size(); ++i) {
    const auto& want = g["features"][i];
    const SquadFeature& f = features[i];
    INFO("feature " << i << " of question " << want["question"]);
    CHECK(questions[f.question].id == want["question"]);
    CHECK(std::vector<int64_t>(f.encoding.ids.begin(), f.encoding.ids.end()) == want["input_ids"].get<std::vector<int64_t>>());
    CHECK(std::vector<int64_t>(f.encoding.type_ids.begin(), f.encoding.type_ids.end()) == want["token_type_ids"].get<std::vector<int64_t>>());
    CHECK(f.context_begin == want["context_begin"]);
    CHECK(f.context_end == want["context_end"]);
    for (size_t k = f.context_begin; k < f.context_end; ++k) {
      const auto& off = want["context_offsets"][k - f.context_begin];
      CHECK(f.encoding.offsets[k] == std::pair<size_t, size_t>(off[0], off[1]));
    }
    CHECK(f.end_position == want["end_position"]);
    if (want["start_past_context"]) {  // run_qa's walk past the context; here the last context token
      ++past_context;
      CHECK(f.start_position == int64_t(f.context_end) - 1);
    } else {
      CHECK(f.start_position == want["start_position"]);
    }
  }
  CHECK(past_context == 0);  // the goldens have none; the next test covers that case
}

TEST_CASE("squad features: an answer in a window's last context token, long questions, bad window settings", "[squad]") {
  // "one two ... nine": each word one token. With max_len 10 and a 2-token question, a window
  // holds 5 context tokens: [CLS] q q [SEP] c c c c c [SEP].
  const auto q = read(file_with("one two three four five six seven eight nine",
                                R"([{"id": "five", "question": "which one", "answers": [{"text": "five", "answer_start": 19}]},
                                    {"id": "long", "question": "one two three four five six", "answers": [{"text": "nine", "answer_start": 40}]}])"));
  SquadFeatureOptions o;
  o.max_len = 10;
  o.doc_stride = 2;
  o.max_query_length = 2;
  const auto tok = uncased();
  const auto f = squad_features(q, *tok, o);
  // windows start at context tokens 0, 3, 6: "five" (token 4) is the last token of the first window
  REQUIRE(f.size() == 6);
  CHECK(f[0].context_begin == 4);
  CHECK(f[0].context_end == 9);
  CHECK(f[0].start_position == 8);  // run_qa would walk on to the [SEP] after it
  CHECK(f[0].end_position == 8);
  CHECK(f[1].start_position == 5);  // the second window starts at "four"
  CHECK(f[2].start_position == 0);  // not in the third window: [CLS]
  // the long question was cut to 2 tokens, so its windows are the same shape
  CHECK(f[3].encoding.size() == 10);
  CHECK(f[5].start_position == 6);
  CHECK(f[5].end_position == 6);
  o.doc_stride = 5;
  CHECK_THROWS_WITH(squad_features(q, *tok, o), Contains("[squad] question 'five'") && Contains("stride 5 must be smaller than the 5 tokens"));
  o.max_len = 5;
  o.doc_stride = 1;
  CHECK_THROWS_WITH(squad_features(q, *tok, o), Contains("max_length 5 leaves no room for the second text"));
  o.max_len = 64;  // the whole context fits: one window each, however large the stride
  o.doc_stride = 100;
  CHECK(squad_features(q, *tok, o).size() == 2);
}
