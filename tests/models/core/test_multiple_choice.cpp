// Multiple choice on the fine-tuning seam: SWAG's CSV layout read with the default columns, a
// learnable choice rule fine-tuned end to end (dev accuracy far above chance), predictions, and
// labels that are not a choice index refused naming file and line.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "models/core/checkpoint.hpp"
#include "tests/finetune_fixtures.hpp"
#include "tests/temp_path.hpp"
#include "training/tasks/multiple_choice.hpp"

using namespace xg;
using namespace xg::training;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
// n examples of three choices: the right one always names a fruit, the others a thing.
std::string write_choices(const std::string& path, size_t n, size_t seed) {
  const char* fruits[] = {"apple", "banana", "cherry", "grape", "lemon"};
  const char* things[] = {"stone", "cloud", "table", "river", "window", "chair", "road"};
  std::ofstream out(path);
  for (size_t i = 0; i < n; ++i) {
    const size_t right = (i * 7 + seed) % 3;
    out << R"({"context": "she picked the", "label": )" << right;
    for (size_t c = 0; c < 3; ++c)
      out << ", \"" << char('a' + c) << "\": \"" << (c == right ? fruits[(i + seed) % 5] : things[(i * 3 + c + seed) % 7]) << '"';
    out << "}\n";
  }
  return path;
}
}  // namespace

TEST_CASE("multiple choice: a choice rule is learnt end to end and predicted", "[finetune][multiple_choice]") {
  const std::string dir = temp_path("xgrad_multiple_choice");
  fs::create_directories(dir);
  // seconds, the same result every run
  FinetuneOptions o = test::tiny_finetune(dir, "multiple_choice", write_choices(dir + "/train.jsonl", 60, 0),
                                          write_choices(dir + "/dev.jsonl", 30, 1), 16);
  o.predictions = dir + "/predictions.tsv";
  MultipleChoiceKind kind;
  kind.settings().context_column = "context";
  kind.settings().choice_columns = "a,b,c";
  const nlohmann::json report = run_finetuning(test::quiet_trainer(dir + "/run", 8, 10, 3e-3f, 60), o, kind).scores;
  INFO(report.dump());
  CHECK(report.at("dev").at("examples") == 30);
  CHECK(report.at("dev").at("accuracy").get<double>() > 0.8);  // chance: 1/3
  CHECK(models::load_pretrained(dir + "/run/best").model->architecture() == "BertForMultipleChoice");
  std::ifstream in(o.predictions);
  std::string line;
  std::getline(in, line);
  CHECK(line == "index\tprediction");
  size_t rows = 0;
  for (; std::getline(in, line); ++rows) CHECK(line.rfind(std::to_string(rows) + "\t", 0) == 0);
  CHECK(rows == 30);
  fs::remove_all(dir);
}

TEST_CASE("multiple choice reads SWAG's CSV with the default columns and refuses bad labels", "[finetune][multiple_choice]") {
  const std::string dir = temp_path("xgrad_multiple_choice_swag");
  fs::create_directories(dir);
  const std::string header = "video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label\n";
  std::ofstream(dir + "/train.csv") << header
                                    << "v1,0,\"A man sits. He\",A man sits.,He,gold,\"stands up, smiling.\",eats a cloud.,flies.,sings,0\n"
                                    << "v2,1,x,The dog runs.,It,gold,barks.,reads.,\"writes a \"\"poem\"\".\",sleeps.,3\n";
  std::ofstream(dir + "/bad.csv") << header << "v1,0,x,A man sits.,He,gold,a,b,c,d,4\n";
  const FinetuneOptions o = test::tiny_finetune(dir, "swag", dir + "/train.csv", dir + "/bad.csv", 24, 16, /*dropout=*/true);
  MultipleChoiceKind kind;
  TaskContext ctx;
  ctx.quiet = true;
  FinetuneOptions train_only = o;
  train_only.dev.clear();
  CHECK(kind.make_task(train_only, ctx)->train_examples_per_epoch() == 2);
  CHECK_THROWS_WITH(kind.make_task(o, ctx), Contains(dir + "/bad.csv:2: label '4' is not a choice index 0..3"));
  kind.settings().choice_columns = "sent2+ending0";
  CHECK_THROWS_WITH(kind.make_task(train_only, ctx), Contains("name at least two choices"));
  CHECK(&finetune_kind("swag") == &finetune_kind("multiple_choice"));
  fs::remove_all(dir);
}
