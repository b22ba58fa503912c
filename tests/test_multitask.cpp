// Multi-task fine-tuning: the task sampler's proportions (proportional, temperature, round-robin),
// seeded and resumable; one encoder shared by a classifier and a tagger, trained together on the
// bundled sentiment and NER data, each task's model exported as a standalone checkpoint that
// scores as the multi-task model does, a resumed run ending with the same weights; and tasks.json
// mistakes named with the file and the value.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "models/bert/bert_heads.hpp"
#include "models/core/checkpoint.hpp"
#include "tests/finetune_fixtures.hpp"
#include "tests/run_files.hpp"
#include "tests/temp_path.hpp"
#include "training/tasks/multitask.hpp"
#include "training/tasks/task_sampler.hpp"

using namespace xg;
using namespace xg::training;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

std::vector<double> frequencies(TaskSampler& s, size_t tasks, size_t draws) {
  std::vector<double> f(tasks, 0.0);
  for (size_t i = 0; i < draws; ++i) f.at(s.next()) += 1.0 / double(draws);
  return f;
}

std::string write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

// A classification task on sentiment lines and an NER task on the bundled CoNLL data.
std::string write_two_tasks(const std::string& dir) {
  const std::string train = test::write_split(dir + "/train.tsv", 7, 0), dev = test::write_split(dir + "/dev.tsv", 10, 5);
  const nlohmann::json tasks = {
      {{"name", "sentiment"}, {"task", "classification"}, {"train", train}, {"dev", dev}},
      {{"name", "entities"}, {"task", "ner"}, {"train", test::kData + "ner_example_train.conll"},
       {"dev", test::kData + "ner_example_dev.conll"}, {"args", {"--tag-scheme", "auto"}}}};
  return write_file(dir + "/tasks.json", tasks.dump(2));
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

Tensor parameter(const nn::Module& m, const std::string& name) {
  for (const auto& [n, p] : m.named_parameters())
    if (n == name) return p;
  FAIL("no parameter " << name);
  return Tensor();
}

double grad_norm(const Tensor& p) {
  const Tensor g = p.grad();
  if (!g.defined()) return 0;
  double s = 0;
  for (float v : g.to_vector()) s += double(v) * double(v);
  return std::sqrt(s);
}

}  // namespace

TEST_CASE("multi-task sampling proportions", "[multitask]") {
  const std::vector<size_t> sizes = {100, 300, 600};
  const size_t draws = 200000;  // a frequency's standard error is at most 0.0011
  SECTION("proportional: n_i / sum(n)") {
    TaskSampler s(sizes, Sampling::Proportional, 2.0, 7);
    const auto f = frequencies(s, 3, draws);
    CHECK(s.probabilities() == std::vector<double>{0.1, 0.3, 0.6});
    for (size_t i = 0; i < 3; ++i) CHECK(f[i] == Approx(s.probabilities()[i]).margin(0.006));
  }
  SECTION("temperature: n_i^(1/T), normalised") {
    TaskSampler s(sizes, Sampling::Temperature, 2.0, 7);
    const double z = std::sqrt(100.0) + std::sqrt(300.0) + std::sqrt(600.0);
    const std::vector<double> want = {std::sqrt(100.0) / z, std::sqrt(300.0) / z, std::sqrt(600.0) / z};
    const auto f = frequencies(s, 3, draws);
    for (size_t i = 0; i < 3; ++i) {
      CHECK(s.probabilities()[i] == Approx(want[i]));
      CHECK(f[i] == Approx(want[i]).margin(0.006));
    }
    // T = 1 is proportional; a large T is nearly uniform
    CHECK(sampling_probabilities(sizes, Sampling::Temperature, 1.0)[2] == Approx(0.6));
    CHECK(sampling_probabilities(sizes, Sampling::Temperature, 1e6)[0] == Approx(1.0 / 3).epsilon(1e-4));
    // a small T gives the largest task everything (600^500 overflowed: inf / inf was NaN)
    const auto cold = sampling_probabilities(sizes, Sampling::Temperature, 0.002);
    CHECK(cold[2] == 1.0);
    CHECK((cold[0] >= 0.0 && cold[0] < 1e-100 && cold[1] >= 0.0 && cold[1] < 1e-100));
  }
  SECTION("round-robin: each task in turn") {
    TaskSampler s(sizes, Sampling::RoundRobin, 2.0, 7);
    for (size_t i = 0; i < 30; ++i) CHECK(s.next() == i % 3);
  }
  SECTION("the same seed draws the same tasks; a restored state goes on with the same sequence") {
    TaskSampler a(sizes, Sampling::Proportional, 2.0, 11), b(sizes, Sampling::Proportional, 2.0, 11),
        other(sizes, Sampling::Proportional, 2.0, 12);
    std::vector<size_t> sa, sb, so;
    for (size_t i = 0; i < 500; ++i) sa.push_back(a.next()), sb.push_back(b.next()), so.push_back(other.next());
    CHECK(sa == sb);
    CHECK(sa != so);
    TaskSampler resumed(sizes, Sampling::Proportional, 2.0, 11);
    resumed.restore(nlohmann::json::parse(a.state().dump()));
    for (size_t i = 0; i < 200; ++i) CHECK(resumed.next() == a.next());
    CHECK_THROWS_WITH(resumed.restore({{"position", 3}}), Contains("bad sampler state {\"position\":3}"));
  }
  SECTION("bad settings are named") {
    CHECK_THROWS_WITH(parse_sampling("uniform"), Contains("--sampling uniform"));
    CHECK_THROWS_WITH(TaskSampler(sizes, Sampling::Temperature, 0.0, 1), Contains("--sampling-temperature 0"));
    CHECK_THROWS_WITH(TaskSampler({5, 0}, Sampling::Proportional, 1.0, 1), Contains("task 1 has no training examples"));
  }
}

TEST_CASE("multi-task tasks.json mistakes are refused, naming the file and the value", "[multitask]") {
  const std::string dir = temp_path("xgrad_multitask_json");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string data = test::kData + "ner_example_dev.conll";
  auto task = [&](const std::string& name, const std::string& kind) {
    return nlohmann::json{{"name", name}, {"task", kind}, {"train", data}, {"dev", data}};
  };
  auto refused = [&](const nlohmann::json& tasks) {
    const std::string path = write_file(dir + "/tasks.json", tasks.dump());
    try {
      prepare_multitask(path, FinetuneOptions{});
    } catch (const std::invalid_argument& e) {
      CHECK_THAT(e.what(), Contains(path));
      return std::string(e.what());
    }
    FAIL("accepted " << tasks.dump());
    return std::string();
  };
  CHECK_THROWS_WITH(read_multitask_file(dir + "/missing.json"), Contains(dir + "/missing.json") && Contains("cannot open"));
  CHECK_THAT(refused(nlohmann::json::array()), Contains("the list of tasks is empty"));
  CHECK_THAT(refused({{"tasks", nlohmann::json::array()}}), Contains("the list of tasks is empty"));
  CHECK_THAT(refused(nlohmann::json::array({task("a", "sentiment_analysis")})), Contains("task 'a'") && Contains("--task sentiment_analysis: not a task"));
  CHECK_THAT(refused(nlohmann::json::array({task("a", "ner"), task("a", "classification")})), Contains("two tasks are named 'a'"));
  CHECK_THAT(refused(nlohmann::json::array({task("a b", "ner")})), Contains("name 'a b' must be letters, digits"));
  CHECK_THAT(refused(nlohmann::json::array({task("mean", "ner")})), Contains("the name 'mean' is taken"));
  CHECK_THAT(refused({{"tasks", nlohmann::json::array({task("a", "ner")})}, {"sampling", "round_robin"}}),
             Contains("unknown key \"sampling\" beside \"tasks\""));
  nlohmann::json no_dev = task("a", "ner");
  no_dev.erase("dev");
  CHECK_THAT(refused(nlohmann::json::array({no_dev})), Contains("task 'a' has no \"dev\""));
  nlohmann::json extra = task("a", "ner");
  extra["lr"] = 0.1;
  CHECK_THAT(refused(nlohmann::json::array({extra})), Contains("unknown key \"lr\""));
  nlohmann::json bad_args = task("a", "ner");
  bad_args["args"] = {"--text-column", "2"};  // a classification flag given to an NER task
  CHECK_THAT(refused(nlohmann::json::array({bad_args})), Contains("task 'a': args [\"--text-column\",\"2\"]") && Contains("--text-column"));
  fs::remove_all(dir);
}

TEST_CASE("multi-task fine-tuning shares one encoder between a classifier and a tagger", "[multitask][finetune]") {
  const std::string dir = temp_path("xgrad_multitask");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string tasks = write_two_tasks(dir);
  const FinetuneOptions shared = test::tiny_finetune(dir, "", "", "", 48);
  MultiTaskOptions m;
  m.file = tasks;

  {  // the encoder is one set of tensors; both heads' gradients reach it
    TaskContext ctx;
    ctx.out = dir + "/probe";
    ctx.seed = 42;
    ctx.quiet = true;
    MultiTask mt(prepare_multitask(tasks, shared), m, shared, ctx);
    REQUIRE(mt.size() == 2);
    const std::string word = "bert.embeddings.word_embeddings.weight", layer = "bert.encoder.layer.0.attention.self.query.weight";
    for (const auto& name : {word, layer})
      CHECK(parameter(mt.task(0).head_model(), name).impl() == parameter(mt.task(1).head_model(), name).impl());
    // the multi-task model lists the encoder once: all of the classifier, plus the tagger's own head
    const auto all = mt.model().named_parameters();
    const size_t classifier = mt.task(0).head_model().named_parameters().size();
    const size_t tagger_head = mt.task(1).head_model().named_parameters().size() - mt.task(1).head_model().base_model().named_parameters().size();
    CHECK(all.size() == classifier + tagger_head);
    CHECK(all.front().first == "sentiment." + word);
    CHECK(std::count_if(all.begin(), all.end(), [](const auto& p) { return p.first.rfind("entities.classifier.", 0) == 0; }) == 2);
    const Tensor shared_query = parameter(mt.task(0).head_model(), layer);
    for (size_t t = 0; t < 2; ++t) {
      mt.model().zero_grad();
      mt.task(t).next_batch_loss(4).loss.backward();
      INFO("task " << mt.task_name(t));
      CHECK(grad_norm(shared_query) > 0);
    }
    CHECK(mt.train_examples_per_epoch() == 429 + 400);
    CHECK(mt.sampler().probabilities()[0] == Approx(429.0 / 829));
  }

  // 3 epochs of the 829 examples of both, 16 a batch, evaluated each epoch
  TrainerOptions t = test::quiet_trainer(dir + "/run", 3, 16, 4e-3f, 829);
  const MultiTaskResult r = run_multitask(t, shared, m);
  REQUIRE(!r.scores.is_null());
  INFO(r.scores.dump());
  const double accuracy = r.scores.at("sentiment").at("dev").at("accuracy").get<double>();
  const double f1 = r.scores.at("entities").at("dev").at("f1").get<double>();
  CHECK(accuracy > 0.65);  // measured: 0.717 (the majority class: 0.5)
  CHECK(f1 > 0.65);  // measured: 0.799

  // the loss went down; every evaluation scored every task
  const std::vector<nlohmann::json> rows = metrics_rows(dir + "/run");
  std::vector<double> losses;
  size_t evals = 0;
  for (const auto& row : rows) {
    if (row.contains("loss")) losses.push_back(row.at("loss").get<double>());
    if (!row.contains("eval_mean_score")) continue;
    ++evals;
    for (const char* name : {"eval_sentiment_accuracy", "eval_sentiment_f1", "eval_entities_f1", "eval_entities_precision"})
      CHECK(row.contains(name));
  }
  CHECK(evals == 3);
  REQUIRE(losses.size() >= 4);
  CHECK(losses.back() < 0.7 * losses.front());

  // each task's exported model is a standalone checkpoint of its kind, without the other's head
  const auto sentiment = models::load_pretrained(dir + "/run/tasks/sentiment/best");
  CHECK(sentiment.model->architecture() == "BertForSequenceClassification");
  const auto entities = models::load_pretrained(dir + "/run/tasks/entities/best");
  CHECK(entities.model->architecture() == "BertForTokenClassification");
  CHECK(entities.notes.empty());
  CHECK(fs::exists(dir + "/run/tasks/entities/best/vocab.txt"));

  // the tasks in OUT/best score as the multi-task model they were saved from does
  TaskContext from_best;
  from_best.checkpoint = dir + "/run/best";
  from_best.out = dir + "/rescored";
  from_best.seed = 42;
  from_best.quiet = true;
  MultiTask reloaded(prepare_multitask(tasks, shared), m, shared, from_best);
  Scalars in_model;
  {
    NoGradGuard no_grad;
    reloaded.model().eval();
    in_model = reloaded.evaluate(32).metrics;
  }
  auto value = [&](const std::string& name) {
    for (const auto& [n, v] : in_model)
      if (n == name) return v;
    FAIL("no " << name);
    return 0.0;
  };
  const auto& at_best = r.scores.at("sentiment").at("dev_at_best_mean");
  CHECK(at_best.at("accuracy").get<double>() == Approx(value("sentiment_accuracy")));
  CHECK(r.scores.at("entities").at("dev_at_best_mean").at("f1").get<double>() == Approx(value("entities_f1")));
  CHECK(parameter(reloaded.task(0).head_model(), "bert.embeddings.word_embeddings.weight").impl() ==
        parameter(reloaded.task(1).head_model(), "bert.embeddings.word_embeddings.weight").impl());

  // stopped at step 70 and resumed, the run ends with the same weights (the sampler and each task's data order go on)
  TrainerOptions stopped = t;
  stopped.out = dir + "/run2";
  stopped.stop_at = 70;
  REQUIRE(run_multitask(stopped, shared, m).scores.is_null());
  TrainerOptions resumed;
  resumed.quiet = true;
  resumed.resume = dir + "/run2";
  resumed.eval_every = t.eval_every;
  resumed.save_every = 0;
  // a task's data changed since the run stopped: refused, naming the task and file; put back, the run goes on
  const std::string dev_file = dir + "/dev.tsv", dev_bytes = read_bytes(dev_file);
  write_file(dev_file, dev_bytes + "1\tone more line\n");
  CHECK_THROWS_WITH(run_multitask(resumed, shared, m), Contains("task 'sentiment': dev " + dev_file + " is not the data"));
  write_file(dev_file, dev_bytes);
  // a task's flags changed since the run stopped: refused, naming the task and both settings
  const std::string tasks_bytes = read_bytes(tasks);
  nlohmann::json edited = nlohmann::json::parse(tasks_bytes);
  nlohmann::json& list = edited.is_array() ? edited : edited.at("tasks");
  for (auto& entry : list)
    if (entry.at("name") == "entities") entry["args"] = {"--label-all-tokens"};
  write_file(tasks, edited.dump());
  CHECK_THROWS_WITH(run_multitask(resumed, shared, m), Contains("task 'entities': tasks.json now says") && Contains("--label-all-tokens"));
  write_file(tasks, tasks_bytes);
  REQUIRE(!run_multitask(resumed, shared, m).scores.is_null());
  for (const char* task : {"sentiment", "entities"}) {
    const std::string weights = std::string("/checkpoint-000156/tasks/") + task + "/model.safetensors";
    INFO(weights);
    REQUIRE(fs::exists(dir + "/run" + weights));
    CHECK(read_bytes(dir + "/run" + weights) == read_bytes(dir + "/run2" + weights));
  }
  fs::remove_all(dir);
}

TEST_CASE("multi-task: the mean score weighs each task out of 1, and encoders that differ are not shared", "[multitask]") {
  const std::string dir = temp_path("xgrad_multitask_qa");
  fs::remove_all(dir);
  fs::create_directories(dir);
  const nlohmann::json tasks = {
      {{"name", "sentiment"}, {"task", "classification"}, {"train", test::write_split(dir + "/train.tsv", 60, 0)},
       {"dev", test::write_split(dir + "/dev.tsv", 60, 30)}},
      {{"name", "qa"}, {"task", "squad_v2"}, {"train", test::kData + "qa_example_train.json"}, {"dev", test::kData + "qa_example_dev.json"}}};
  const std::string path = write_file(dir + "/tasks.json", tasks.dump());
  const FinetuneOptions shared = test::tiny_finetune(dir, "", "", "", 128);
  MultiTaskOptions m;
  m.file = path;
  TaskContext ctx;
  ctx.out = dir + "/out";
  ctx.seed = 5;
  ctx.quiet = true;
  MultiTask mt(prepare_multitask(path, shared), m, shared, ctx);
  CHECK(mt.task(1).head_model().architecture() == "BertForQuestionAnswering");
  Scalars metrics;
  {
    NoGradGuard no_grad;
    mt.model().eval();
    metrics = mt.evaluate(16).metrics;
  }
  std::map<std::string, double> by_name(metrics.begin(), metrics.end());
  REQUIRE(by_name.count("qa_f1"));
  // SQuAD's F1 is a percentage: it counts as F1 / 100 beside an accuracy
  CHECK(by_name.at("mean_score") == Approx((by_name.at("sentiment_accuracy") + by_name.at("qa_f1") / 100) / 2));
  CHECK(fs::exists(dir + "/out/best/tasks/qa/config.json"));
  CHECK(fs::exists(dir + "/out/tasks/qa/best/config.json"));

  // a classifier of another width cannot take this encoder
  models::BertConfig c;
  c.hidden_size = 16, c.num_hidden_layers = 1, c.num_attention_heads = 2, c.intermediate_size = 32;
  c.vocab_size = 30522;
  models::BertForSequenceClassification narrow(c, models::HeadConfig::with_num_labels(2));
  CHECK_THROWS_WITH(narrow.share_encoder_of(mt.task(0).head_model()), Contains("[share_encoder] BertModel: ") && Contains("in the encoder to share"));
  // a masked-LM model's decoder is its own word embeddings: taking another's would untie them
  models::BertForMaskedLM lm(c), other_lm(c);
  CHECK_THROWS_WITH(lm.share_encoder_of(other_lm), Contains("[share_encoder] BertForMaskedLM ties its language-model decoder"));
  fs::remove_all(dir);
}
