// util/cli: numbers CLI11 alone would narrow silently (negative sizes, overflow, octal, NaN,
// infinity, 1e99 for a float) are refused naming the flag; unknown flags are refused; defaults
// show in --help.
#include <catch2/catch.hpp>

#include <sstream>
#include <utility>

#include "util/cli.hpp"

using Catch::Matchers::Contains;

namespace {

struct Options {
  size_t count = 5;
  int offset = -2;
  uint64_t seed = 12345;
  float lr = 0.01f;
  double scale = 1.5;
  bool verbose = false;
};

// A program with one option of each numeric type; `run(args)` parses them.
struct Program {
  Options opt;
  CLI::App app{"test program", "prog"};
  std::ostringstream out, err;
  Program() {
    xg::cli::show_defaults(app);
    xg::cli::add_number(app, "--count", opt.count, "a size");
    xg::cli::add_number(app, "--offset", opt.offset, "an int");
    xg::cli::add_number(app, "--seed", opt.seed, "a seed");
    xg::cli::add_number(app, "--lr", opt.lr, "a float");
    xg::cli::add_number(app, "--scale", opt.scale, "a double");
    app.add_flag("--verbose", opt.verbose, "a switch");
  }
  std::optional<int> run(std::vector<std::string> args) {
    args.insert(args.begin(), "prog");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    return xg::cli::parse_or_exit(app, int(argv.size()), argv.data(), out, err);
  }
};

// Parses `flag value` and returns the error text (empty when it was accepted).
std::string refusal(const std::string& flag, const std::string& value) {
  Program p;
  const auto code = p.run({flag, value});
  if (!code) return "";
  CHECK(*code == 2);
  return p.err.str();
}

}  // namespace

TEST_CASE("cli numbers: valid values are parsed exactly", "[cli]") {
  Program p;
  CHECK_FALSE(p.run({"--count", "18446744073709551615", "--offset", "-2147483648", "--seed", "7", "--lr", "1e-3",
                     "--scale", "-2.25", "--verbose"}));
  CHECK(p.opt.count == std::numeric_limits<size_t>::max());
  CHECK(p.opt.offset == std::numeric_limits<int>::min());
  CHECK(p.opt.seed == 7);
  CHECK(p.opt.lr == 1e-3f);
  CHECK(p.opt.scale == -2.25);
  CHECK(p.opt.verbose);
  Program decimal;  // CLI11 alone reads "010" as octal 8
  CHECK_FALSE(decimal.run({"--count", "010", "--offset=-010"}));
  CHECK(decimal.opt.count == 10);
  CHECK(decimal.opt.offset == -10);
  Program untouched;
  CHECK_FALSE(untouched.run({}));
  CHECK(untouched.opt.count == 5);
  CHECK(untouched.opt.lr == 0.01f);
}

TEST_CASE("cli numbers: out of range, malformed, NaN and infinity are refused naming the flag", "[cli]") {
  CHECK_THAT(refusal("--count", "-1"), Contains("prog: --count: '-1': must be a whole number >= 0 without a sign"));
  CHECK_THAT(refusal("--count", "18446744073709551616"), Contains("--count: '18446744073709551616': out of range"));
  CHECK_THAT(refusal("--count", "1e3"), Contains("--count: '1e3': not a whole number"));
  CHECK_THAT(refusal("--count", "0x10"), Contains("--count: '0x10'"));
  CHECK_THAT(refusal("--count", "12abc"), Contains("--count: '12abc'"));
  CHECK_THAT(refusal("--count", " 5"), Contains("--count: ' 5'"));
  CHECK_THAT(refusal("--offset", "1e99"), Contains("--offset: '1e99': not a whole number"));
  CHECK_THAT(refusal("--offset", "2147483648"), Contains("--offset: '2147483648'"));
  CHECK_THAT(refusal("--offset", "-2147483649"), Contains("--offset: '-2147483649'"));
  CHECK_THAT(refusal("--seed", "-5"), Contains("--seed: '-5'"));
  CHECK_THAT(refusal("--lr", "nan"), Contains("--lr: 'nan': not a finite number"));
  CHECK_THAT(refusal("--lr", "inf"), Contains("--lr: 'inf': not a finite number"));
  CHECK_THAT(refusal("--lr", "-infinity"), Contains("--lr: '-infinity'"));
  CHECK_THAT(refusal("--lr", "1e99"), Contains("--lr: '1e99': not a finite number in range"));
  CHECK_THAT(refusal("--lr", "0.1x"), Contains("--lr: '0.1x'"));
  CHECK_THAT(refusal("--lr", ""), Contains("--lr: ''"));
  CHECK_THAT(refusal("--scale", "1e400"), Contains("--scale: '1e400': not a finite number in range"));
  CHECK(refusal("--scale", "1e300").empty());
  CHECK(refusal("--lr", "1e-50").empty());  // underflows to zero: a number, not an error
}

TEST_CASE("cli positive(): zero and negatives refused, naming the flag", "[cli]") {
  const std::pair<const char*, const char*> refused[] = {{"--batch", "0"}, {"--lr", "0"}, {"--lr", "-0.5"}, {"--lr", "-1e-30"}};
  for (const auto& [flag, value] : refused) {
    Options opt;
    CLI::App app{"test program", "prog"};
    xg::cli::add_number(app, "--batch", opt.count, "a size")->check(xg::cli::positive());
    xg::cli::add_number(app, "--lr", opt.lr, "a rate")->check(xg::cli::positive());
    const char* argv[] = {"prog", flag, value};
    std::ostringstream out, err;
    CHECK(xg::cli::parse_or_exit(app, 3, argv, out, err) == 2);
    CHECK_THAT(err.str(), Contains(std::string("prog: ") + flag + ": " + value + " is not above zero"));
  }
  Options opt;
  CLI::App app{"test program", "prog"};
  xg::cli::add_number(app, "--lr", opt.lr, "a rate")->check(xg::cli::positive());
  const char* argv[] = {"prog", "--lr", "1e-30"};
  std::ostringstream out, err;
  CHECK_FALSE(xg::cli::parse_or_exit(app, 3, argv, out, err));
  CHECK(opt.lr == 1e-30f);
}

TEST_CASE("cli: unknown flags and missing values are refused, --help shows defaults", "[cli]") {
  Program unknown;
  CHECK(unknown.run({"--count", "3", "--bogus"}) == 2);
  CHECK_THAT(unknown.err.str(), Contains("prog: unknown flag --bogus"));
  Program missing;
  CHECK(missing.run({"--count"}) == 2);
  CHECK_THAT(missing.err.str(), Contains("--count"));
  Program help;
  CHECK(help.run({"--help"}) == 0);
  CHECK_THAT(help.out.str(), Contains("--count UINT=5") && Contains("--lr FLOAT=0.01") && Contains("--seed UINT=12345"));
  CHECK(help.err.str().empty());
}

TEST_CASE("cli: a misspelt flag or command is named with the nearest real one; snake_case spellings are taken", "[cli]") {
  Program p;
  CHECK(p.run({"--cout", "3"}) == 2);
  CHECK_THAT(p.err.str(), Contains("prog: unknown flag --cout (did you mean --count?)"));
  Program far;
  CHECK(far.run({"--zzzzzz", "3"}) == 2);
  CHECK_THAT(far.err.str(), Contains("unknown flag --zzzzzz") && !Contains("did you mean"));
  // a value that looks like a flag after an option that takes one is the option's value
  CLI::App app{"test", "prog"};
  std::string text;
  bool snake = false;
  app.add_option("--text", text);
  app.add_flag("--snake-case", snake);
  std::ostringstream out, err;
  const char* argv[] = {"prog", "--text", "--not-a-flag", "--snake_case"};
  CHECK_FALSE(xg::cli::parse_or_exit(app, 4, argv, out, err));
  CHECK(text == "--not-a-flag");
  CHECK(snake);
  // subcommands: a misspelt one, and a flag of another subcommand
  CLI::App tool{"test", "tool"};
  std::string model;
  tool.add_subcommand("fill-mask", "")->add_option("--model", model);
  tool.add_subcommand("classify", "")->add_flag("--jsonl");
  tool.require_subcommand(1);
  std::ostringstream o2, e2;
  const char* typo[] = {"tool", "fillmask", "--model", "x"};
  CHECK(xg::cli::parse_or_exit(tool, 4, typo, o2, e2) == 2);
  CHECK_THAT(e2.str(), Contains("tool: unknown command 'fillmask' (did you mean fill-mask?); the commands are fill-mask, classify"));
  std::ostringstream o3, e3;
  const char* other[] = {"tool", "fill-mask", "--modle", "x"};
  CHECK(xg::cli::parse_or_exit(tool, 4, other, o3, e3) == 2);
  CHECK_THAT(e3.str(), Contains("unknown flag --modle (did you mean --model?)"));
  std::ostringstream o4, e4;
  const char* version[] = {"tool", "--version"};
  CHECK(xg::cli::parse_or_exit(tool, 2, version, o4, e4) == 0);
  CHECK_THAT(o4.str(), Contains("tool (xgrad "));
}

TEST_CASE("cli: --help shows one name per option and the everyday groups first; aliases still parse", "[cli]") {
  CLI::App app{"test", "prog"};
  size_t batch = 8;
  float rate = 0.1f;
  int threads = 0;
  std::string task;
  xg::cli::add_number(app, "--threads", threads, "threads")->group(xg::kPerformanceGroup);
  app.add_option("--task", task, "a task")->group("Task's own");
  xg::cli::add_number(app, "--per-device-train-batch-size,--batch", batch, "examples per step")->group(xg::kTrainingGroup);
  xg::cli::add_number(app, "--learning-rate,--lr", rate, "peak rate")->group(xg::kTrainingGroup);
  std::ostringstream out, err;
  const char* help[] = {"prog", "--help"};
  CHECK(xg::cli::parse_or_exit(app, 2, help, out, err) == 0);
  const std::string text = out.str();
  CHECK_THAT(text, Contains("--per-device-train-batch-size") && Contains("--learning-rate") && !Contains("--batch") &&
                       !Contains("--lr"));
  // Training (an everyday group) before the program's own, Performance last, whatever the order added
  const size_t training = text.find("Training:"), own = text.find("Task's own:"), performance = text.find("Performance:");
  REQUIRE(training != std::string::npos);
  REQUIRE(own != std::string::npos);
  REQUIRE(performance != std::string::npos);
  CHECK(training < own);
  CHECK(own < performance);
  // the old short names parse, into the same option
  std::ostringstream o2, e2;
  const char* old[] = {"prog", "--batch", "16", "--lr", "0.5"};
  CHECK_FALSE(xg::cli::parse_or_exit(app, 5, old, o2, e2));
  CHECK(batch == 16);
  CHECK(rate == 0.5f);
  CHECK(app.count("--per-device-train-batch-size") == 1);
  // a bad value is named by the canonical name
  std::ostringstream o3, e3;
  const char* bad[] = {"prog", "--batch", "x"};
  CHECK(xg::cli::parse_or_exit(app, 3, bad, o3, e3) == 2);
  CHECK_THAT(e3.str(), Contains("--per-device-train-batch-size"));
}

TEST_CASE("cli: a program's error line has its name and no internal tags", "[cli]") {
  using xg::cli::error_line;
  CHECK(error_line("bert_pretrain", "[vocabulary] x.txt: cannot open") == "bert_pretrain: x.txt: cannot open");
  CHECK(error_line("bert_infer", "[Vocab] [my notes] vocab.txt: cannot open") == "bert_infer: [my notes] vocab.txt: cannot open");
  CHECK(error_line("bert_finetune", "[pretraining data] d: empty") == "bert_finetune: d: empty");
  // special tokens and text in brackets that is not a tag stay
  CHECK(error_line("bert_infer", "[MASK] not found") == "bert_infer: [MASK] not found");
  CHECK(error_line("bert_infer", "[1, 2] is not a shape") == "bert_infer: [1, 2] is not a shape");
  CHECK(error_line("p", "stdin line 2: [tokenizer] input: bad") == "p: stdin line 2: input: bad");  // a wrapped error's too
  CHECK(error_line("p", "got [MASK] twice: [1, 2]") == "p: got [MASK] twice: [1, 2]");
}
