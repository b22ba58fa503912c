// Classification data on hostile small files: TSV with and without a header, CSV quoting and
// embedded newlines, JSONL, BOM and CRLF, numbered columns; errors naming file, line and field.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "tests/temp_path.hpp"
#include "text/classification_data.hpp"

using namespace xg::text;
using Catch::Matchers::Contains;

namespace {
// Writes `content` to a temporary file with the given extension, removed at the end of the scope.
struct TempFile {
  TempFile(const std::string& ext, const std::string& content) : path(temp_path("xgrad_data") + ext) {
    std::ofstream(path, std::ios::binary) << content;
  }
  ~TempFile() { std::filesystem::remove(path); }
  std::string path;
};

std::vector<TextExample> read(const std::string& ext, const std::string& content, const TextColumns& c = {}) {
  TempFile f(ext, content);
  return read_text_examples(f.path, c);
}
}  // namespace

TEST_CASE("classification data: TSV with a header needs no column options", "[data]") {
  const auto e = read(".tsv", "source\tlabel\ttext\namazon\t1\tGood case, \"Excellent\" value.\n\nyelp\t0\tBad.\n");
  REQUIRE(e.size() == 2);
  CHECK(e[0].label == "1");
  CHECK(e[0].text_a == "Good case, \"Excellent\" value.");  // TSV has no quoting: quotes are text
  CHECK(e[0].text_b.empty());
  CHECK(e[1].line == 4);  // the blank line is skipped but counted
  // pairs: text_b is picked up by its name
  const auto p = read(".tsv", "label\ttext\ttext_b\nentailment\tA man sleeps.\tSomeone rests.\nneutral\tA man sleeps.\t\n");
  CHECK(p[0].text_b == "Someone rests.");
  CHECK(p[0].label == "entailment");
  CHECK(!e[0].pair);
  // an empty second text is still a pair (transformers' batches encode it [CLS] a [SEP] [SEP])
  CHECK(p[1].text_b.empty());
  CHECK((p[0].pair && p[1].pair));
  const auto j = read(".jsonl", "{\"label\": 1, \"text\": \"a\", \"text_b\": \"\"}\n{\"label\": 0, \"text\": \"b\"}\n");
  CHECK((j[0].pair && !j[1].pair));
  // the repository's data file reads as it is
  const auto uci = read_text_examples(std::string(XGRAD_TEST_DATA_DIR) + "/../../data/sentiment_uci.tsv");
  CHECK(uci.size() == 3000);
  CHECK(label_list(uci) == std::vector<std::string>{"0", "1"});
}

TEST_CASE("classification data: BOM and CRLF are accepted", "[data]") {
  const auto e = read(".tsv", "\xEF\xBB\xBFlabel\ttext\r\npos\tfine\r\nneg\tnot fine\r\n");
  REQUIRE(e.size() == 2);
  CHECK(e[0].label == "pos");
  CHECK(e[1].text_a == "not fine");
  const auto c = read(".csv", "\xEF\xBB\xBFtext,label\r\n\"a, b\",x\r\nc,y\r\n");
  REQUIRE(c.size() == 2);
  CHECK(c[0].text_a == "a, b");
  CHECK(c[1].label == "y");
}

TEST_CASE("classification data: CSV quoting, doubled quotes and embedded newlines", "[data]") {
  const auto e = read(".csv", "id,text,label\n1,\"He said \"\"hi\"\",\nthen left.\",pos\n2,\"\",neg\n3,plain,pos");
  REQUIRE(e.size() == 3);
  CHECK(e[0].text_a == "He said \"hi\",\nthen left.");
  CHECK(e[0].line == 2);
  CHECK(e[1].text_a.empty());
  CHECK(e[1].line == 4);  // after the record that spans two lines
  CHECK(e[2].label == "pos");  // no newline at the end
  CHECK_THROWS_WITH(read(".csv", "text,label\n\"open,pos\nmore\n"), Contains(":2: a quoted field is never closed"));
  CHECK_THROWS_WITH(read(".csv", "text,label\nab\"c,pos\n"), Contains(":2: a quote inside the unquoted field 1"));
  CHECK_THROWS_WITH(read(".csv", "text,label\n\"ab\"c,pos\n"), Contains(":2: text after the closing quote of field 1"));
}

TEST_CASE("classification data: numbered columns, with or without a header row", "[data]") {
  TextColumns c;
  c.label = "1";
  c.text = "3";
  c.text_b = "2";
  const auto e = read(".tsv", "0\tfirst\tsecond\n1\tthird\tfourth\n", c);
  REQUIRE(e.size() == 2);
  CHECK(e[0].text_a == "second");
  CHECK(e[0].text_b == "first");
  c.skip_header = true;
  CHECK(read(".tsv", "y\ta\tb\n0\tfirst\tsecond\n", c).size() == 1);
  c.skip_header = false;
  c.text = "4";
  CHECK_THROWS_WITH(read(".tsv", "0\ta\tb\n", c), Contains(":1: no column 4 (the rows have 3)"));
  c.text = "0";
  CHECK_THROWS_WITH(read(".tsv", "0\ta\tb\n", c), Contains("numbered from 1"));
}

TEST_CASE("classification data: JSONL with string, integer, boolean and float labels", "[data]") {
  const auto e = read(".jsonl", "{\"text\": \"a\", \"label\": \"pos\"}\r\n\n{\"text\": \"b\", \"text_b\": \"c\", \"label\": 1}\n"
                                "{\"text\": \"d\", \"label\": true}\n{\"text\": \"e\", \"label\": 3.75}\n");
  REQUIRE(e.size() == 4);
  CHECK(e[0].label == "pos");
  CHECK(e[1].label == "1");
  CHECK(e[1].text_b == "c");
  CHECK(e[1].line == 3);
  CHECK(e[2].label == "true");
  CHECK(label_values({e[3]}, "f")[0] == 3.75);
  TextColumns c;
  c.text = "sentence";
  c.label = "y";
  CHECK(read(".jsonl", "{\"sentence\": \"s\", \"y\": 0}\n", c)[0].text_a == "s");
  CHECK_THROWS_WITH(read(".jsonl", "{\"text\": \"a\"}\n"), Contains(":1: no label (key 'label')"));
  CHECK_THROWS_WITH(read(".jsonl", "{\"text\": 5, \"label\": 1}\n"), Contains(":1: key 'text' must be a string"));
  CHECK_THROWS_WITH(read(".json", "[{\"text\": \"a\", \"label\": 1},\n {\"text\": \"b\", \"label\": 0}]\n"),
                    Contains(":1: not valid JSON") && Contains("a JSON array? the file must be JSON Lines: one object per line"));
  CHECK_THROWS_WITH(read(".jsonl", "{\"text\": \"a\", \"label\": 1}\n{oops\n"), Contains(":2: not valid JSON"));
  CHECK_THROWS_WITH(read(".jsonl", "[1, 2]\n"), Contains(":1: expected a JSON object"));
  CHECK_THROWS_WITH(read(".jsonl", "{\"text\": \"a\", \"label\": [1]}\n"), Contains("must be a string, number or boolean"));
  c.text = "2";
  CHECK_THROWS_WITH(read(".jsonl", "{}\n", c), Contains("keys, not numbers"));
}

TEST_CASE("classification data: errors name the file, the line and the field", "[data][errors]") {
  TempFile f(".tsv", "label\ttext\npos\tok\n\tno label here\n");
  CHECK_THROWS_WITH(read_text_examples(f.path), Contains(f.path + ":3: the label (field 'label') is empty"));
  CHECK_THROWS_WITH(read(".tsv", "label\ttext\npos\tok\textra\n"), Contains(":2: 3 fields where the header has 2"));
  CHECK_THROWS_WITH(read(".tsv", "label\ttext\npos\n"), Contains(":2: 1 fields where the header has 2"));
  CHECK_THROWS_WITH(read(".tsv", "y\tsentence\n1\tok\n"), Contains(":1: no label column 'label' in the header (y, sentence)"));
  CHECK_THROWS_WITH(read(".tsv", "label\ttext\n"), Contains("no examples"));
  CHECK_THROWS_WITH(read(".tsv", ""), Contains("no examples"));
  CHECK_THROWS_WITH(read(".txt", "x"), Contains("unknown format '.txt'"));
  // invalid UTF-8 named where it is, not later by the tokenizer as "first text"
  CHECK_THROWS_WITH(read(".tsv", "label\ttext\npos\tok\npos\tgood \xff movie\n"),
                    Contains(":3: the text has invalid UTF-8 at byte 5 (0xff)"));
  CHECK_THROWS_WITH(read(".csv", "label,text,text_b\npos,a,\"b\nc \xc3\x28\"\n"),
                    Contains(":2: the second text has invalid UTF-8 at byte 4 (0xc3)"));
  CHECK_THROWS_WITH(read(".jsonl", "{\"label\": \"pos\", \"text\": \"a \xff\"}\n"), Contains(":1"));
  CHECK_THROWS_WITH(read_text_examples("/nonexistent/x.tsv"), Contains("/nonexistent/x.tsv: cannot open"));
  // unknown labels against the model's map, and labels that are not numbers for regression
  const auto e = read(".tsv", "label\ttext\npos\ta\nmeh\tb\n");
  CHECK(label_ids({e[0]}, {"neg", "pos"}, "d.tsv") == std::vector<int64_t>{1});
  CHECK_THROWS_WITH(label_ids(e, {"neg", "pos"}, "d.tsv"), Contains("d.tsv:3: unknown label 'meh' (the model's labels: neg, pos)"));
  CHECK_THROWS_WITH(label_values(e, "d.tsv"), Contains("d.tsv:2: the label 'pos' is not a number"));
}

TEST_CASE("classification data: label lists sort integers as numbers", "[data]") {
  std::vector<TextExample> e(4);
  for (const auto& [i, l] : {std::pair{0, "10"}, {1, "2"}, {2, "-1"}, {3, "2"}}) e[size_t(i)].label = l;
  CHECK(label_list(e) == std::vector<std::string>{"-1", "2", "10"});
  e[0].label = "b";
  CHECK(label_list(e) == std::vector<std::string>{"-1", "2", "b"});
}

TEST_CASE("classification data: unlabelled files with ids, and texts joining columns", "[data]") {
  TextColumns c;
  c.label = "";
  c.id = "index";
  c.text = "sentence";
  const auto e = read(".tsv", "index\tsentence\n7\tno label\n", c);
  REQUIRE(e.size() == 1);
  CHECK(e[0].id == "7");
  CHECK(e[0].label.empty());
  CHECK_THROWS_WITH(read(".tsv", "idx\tsentence\n7\tx\n", c), Contains(":1: no id column 'index' in the header (idx, sentence)"));
  // numbered columns joined: "3+2" reads the third field, a space, the second
  TextColumns n;
  n.label = "1";
  n.text = "3+2";
  const auto j = read(".tsv", "0\tfirst\tsecond\n", n);
  CHECK(j[0].text_a == "second first");
  n.text = "3+5";
  CHECK_THROWS_WITH(read(".tsv", "0\ta\tb\n", n), Contains(":1: no column 5 (the rows have 3)"));
  // numbered columns and a header row: the header is named, not trained on as a class of its own
  TextColumns numbered;
  numbered.label = "1";
  numbered.text = "2";
  CHECK_THROWS_WITH(read(".tsv", "label\ttext\n1\tgood\n0\tbad\n", numbered),
                    Contains(":1: the label 'label' looks like a header") && Contains("--skip-header"));
  numbered.skip_header = true;
  CHECK(read(".tsv", "label\ttext\n1\tgood\n0\tbad\n", numbered).size() == 2);
  numbered.skip_header = false;
  CHECK(read(".tsv", "pos\tgood\nneg\tbad\n", numbered).size() == 2);  // word labels throughout: no header
  // JSONL: numeric and string ids, keys joined, a missing joined key named
  TextColumns k;
  k.label = "";
  k.id = "idx";
  k.text = "word+sentence1";
  const auto w = read(".jsonl", "{\"word\": \"bank\", \"sentence1\": \"by the bank\", \"idx\": 3}\n{\"word\": \"w\", \"sentence1\": \"s\", \"idx\": \"a-1\"}\n", k);
  CHECK(w[0].text_a == "bank by the bank");
  CHECK(w[0].id == "3");
  CHECK(w[1].id == "a-1");
  CHECK_THROWS_WITH(read(".jsonl", "{\"word\": \"bank\", \"idx\": 3}\n", k), Contains(":1: no key 'sentence1'"));
  CHECK_THROWS_WITH(read(".jsonl", "{\"word\": \"a\", \"sentence1\": \"b\", \"idx\": [3]}\n", k), Contains(":1: the id (key 'idx') must be a string"));
}

TEST_CASE("labels spelt two ways are refused naming both lines; an unknown label's message stays short", "[data][errors]") {
  auto examples = [](std::vector<std::string> labels) {
    std::vector<TextExample> e;
    for (size_t i = 0; i < labels.size(); ++i) {
      TextExample x;
      x.text_a = "text";
      x.label = labels[i];
      x.line = i + 2;
      e.push_back(x);
    }
    return e;
  };
  CHECK_THROWS_WITH(label_list(examples({"1", "0", "01"}), "train.tsv"),
                    Contains("train.tsv:4") && Contains("label '01' is label '1' (line 2) spelt another way"));
  CHECK_THROWS_WITH(label_list(examples({"1.0", "1"})), Contains("label '1' is label '1.0'"));
  CHECK_THROWS_WITH(label_list(examples({"1 ", "1"})), Contains("label '1' is label '1 '"));
  CHECK_THROWS_WITH(label_list(examples({"true", "True"})), Contains("label 'True' is label 'true'"));
  CHECK(label_list(examples({"pos", "neg", "pos"})) == std::vector<std::string>{"neg", "pos"});
  CHECK(label_list(examples({"-0", "1"})).size() == 2);
  std::vector<std::string> many;
  for (int i = 0; i < 500; ++i) many.push_back("label" + std::to_string(i));
  try {
    label_ids(examples({"nope"}), many, "dev.tsv");
    FAIL("no error");
  } catch (const std::exception& e) {
    CHECK_THAT(e.what(), Contains("... 500 in all"));
    CHECK(std::string(e.what()).size() < 400);
  }
}
