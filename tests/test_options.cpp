// Options declared once (util/options.hpp): the command line they make (defaults in --help,
// unknown flags and bad numbers refused naming the flag), the JSON they save and the restore on
// resume. Also run under AddressSanitizer: command lines are untrusted text.
#include <catch2/catch.hpp>
#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>

#include "tests/temp_path.hpp"
#include "util/checksums.hpp"
#include "util/options.hpp"

using namespace xg;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
struct Demo : ResumableOptions {
  size_t size = 4;
  int64_t offset = -1;
  int small = 3;
  float rate = 0.5f;
  std::string name = "demo";
  bool flag = false;
  std::string out;

  static const OptionTable<Demo>& table() {
    static const OptionTable<Demo> t = OptionTable<Demo>()
        .add("--size", &Demo::size, "a size", OnResume::Restore, at_least(1))
        .add("--offset", &Demo::offset, "an offset", OnResume::Restore, at_least(-1))
        .add("--small", &Demo::small, "a small int", OnResume::UseNew, between(0, 100))
        .add("--rate", &Demo::rate, "a rate", OnResume::Restore, between(0, 1))
        .add("--name", &Demo::name, "a name", OnResume::Restore)
        .add("--flag", &Demo::flag, "a switch", OnResume::Restore)
        .add("--out", &Demo::out, "run control");
    return t;
  }
};

// Parses `args` into a fresh Demo; returns it, or throws CLI11's error.
Demo parse(const std::string& args) {
  Demo d;
  CLI::App app("demo", "demo");
  Demo::table().add_to(app, d, "Demo");
  app.parse(args, /*program_name_included=*/false);
  return d;
}

std::string parse_error(const std::string& args) {
  try {
    parse(args);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("options: the command line fills the struct, defaults show in --help", "[options]") {
  const Demo d = parse("--size 7 --offset -1 --small 9 --rate 0.25 --name x --flag --out dir");
  CHECK(d.size == 7);
  CHECK(d.offset == -1);
  CHECK(d.small == 9);
  CHECK(d.rate == 0.25f);
  CHECK(d.name == "x");
  CHECK(d.flag);
  CHECK(d.out == "dir");
  CHECK(parse("").size == 4);  // untouched without the flag

  Demo d2;
  CLI::App app("demo", "demo");
  Demo::table().add_to(app, d2, "Demo");
  const std::string help = app.help();
  CHECK_THAT(help, Contains("--size INT=4"));
  CHECK_THAT(help, Contains("--rate FLOAT=0.5"));
  CHECK_THAT(help, Contains("--name TEXT=demo"));
  CHECK_THAT(help, Contains("a size"));
}

TEST_CASE("options: a program's own defaults give way to a checkpoint's values on resume", "[options][resume]") {
  Demo d;
  d.rate = 0.75f;  // a program's default, as bert_finetune sets its rate and batch
  d.size = 8;
  d.small = 9;
  CLI::App app("demo", "demo");
  Demo::table().add_to(app, d, "Demo");
  app.parse("--size 7 --flag", /*program_name_included=*/false);
  Demo::table().reset_not_given(d);
  CHECK(d.rate == Demo{}.rate);  // not given: the checkpoint's value wins on restore
  CHECK(d.size == 7);            // given: kept, and checked against the checkpoint's
  CHECK(d.flag);
  CHECK(d.small == 9);  // run control is each run's own
  Demo first;
  first.rate = 0.25f;
  first.size = 7;
  first.flag = true;
  Demo::table().restore(d, Demo::table().saved(first), "state.json");
  CHECK(d.rate == 0.25f);
}

TEST_CASE("options: bad values and unknown flags are refused, naming the flag", "[options][errors]") {
  CHECK_THAT(parse_error("--size -1"), Contains("--size '-1'") && Contains("without a sign"));
  CHECK_THAT(parse_error("--size 0"), Contains("--size '0': must be >= 1"));
  CHECK_THAT(parse_error("--size 99999999999999999999999"), Contains("--size") && Contains("out of range"));
  CHECK_THAT(parse_error("--small 3000000000"), Contains("--small '3000000000': out of range"));  // no narrowing to int
  CHECK_THAT(parse_error("--small 101"), Contains("--small '101': must be in [0, 100]"));
  CHECK_THAT(parse_error("--offset -2"), Contains("--offset '-2': must be >= -1"));
  CHECK_THAT(parse_error("--size 010x"), Contains("--size '010x': not a whole number"));
  CHECK_THAT(parse_error("--size 0x10"), Contains("not a whole number"));  // decimal only
  CHECK(parse("--size 010").size == 10);                                    // not octal
  CHECK_THAT(parse_error("--rate nan"), Contains("--rate 'nan'") && Contains("not a finite number"));
  CHECK_THAT(parse_error("--rate inf"), Contains("not a finite number"));
  CHECK_THAT(parse_error("--rate 1e99"), Contains("--rate '1e99'"));  // beyond float
  CHECK_THAT(parse_error("--rate 1.5"), Contains("--rate '1.5': must be in [0, 1]"));
  CHECK_THAT(parse_error("--rate half"), Contains("not a number"));
  CHECK_THAT(parse_error("--bogus 3"), Contains("--bogus"));
  CHECK_THAT(parse_error("--size"), Contains("--size"));  // a value is needed
}

TEST_CASE("options: values set in code are checked the same way", "[options][errors]") {
  Demo d;
  d.rate = std::nanf("");
  CHECK_THROWS_WITH(Demo::table().check(d), Contains("--rate 'nan': not a finite number"));
  d = Demo{};
  d.size = 0;
  CHECK_THROWS_WITH(Demo::table().check(d), Contains("--size '0': must be >= 1"));
  CHECK_NOTHROW(Demo::table().check(Demo{}));
}

TEST_CASE("options: saved JSON holds the Restore options, restore keeps the saved values", "[options]") {
  Demo d;
  d.size = 9;
  d.rate = 0.125f;
  d.out = "somewhere";
  const nlohmann::json saved = Demo::table().saved(d);
  CHECK(saved == nlohmann::json{{"size", 9}, {"offset", -1}, {"rate", 0.125}, {"name", "demo"}, {"flag", false}});

  Demo resumed;  // defaults: everything comes from the checkpoint
  resumed.out = "elsewhere";
  resumed.small = 50;
  Demo::table().restore(resumed, saved, "state.json");
  CHECK(resumed.size == 9);
  CHECK(resumed.rate == 0.125f);
  CHECK(resumed.out == "elsewhere");  // run control stays this run's
  CHECK(resumed.small == 50);

  Demo same;  // set to the saved value: fine
  same.size = 9;
  CHECK_NOTHROW(Demo::table().restore(same, saved, "state.json"));

  Demo changed;  // set to another value: refused, naming the flag, both values and the file
  changed.size = 5;
  CHECK_THROWS_WITH(Demo::table().restore(changed, saved, "state.json"),
                    Contains("--size 5 differs from the checkpoint's 9") && Contains("state.json options.size"));
  // Given on the command line at its default value: still the user's choice, still refused
  // (`--resume DIR --precision fp32` of a bf16 run)
  Demo given_default = parse("--size 4 --name demo");
  CHECK(given_default.flags_given == std::set<std::string>{"--size", "--name"});
  CHECK_THROWS_WITH(Demo::table().restore(given_default, saved, "state.json"), Contains("--size 4 differs from the checkpoint's 9"));
  nlohmann::json saved_on = saved;  // a switch turned off by name: refused too
  saved_on["flag"] = true;
  Demo switched_off = parse("--flag=false");
  CHECK_FALSE(switched_off.flag);
  CHECK_THROWS_WITH(Demo::table().restore(switched_off, saved_on, "state.json"), Contains("--flag false differs from the checkpoint's true"));
  Demo switch_left = parse("");
  Demo::table().restore(switch_left, saved_on, "state.json");
  CHECK(switch_left.flag);
  Demo given_same = parse("--size 9");
  CHECK_NOTHROW(Demo::table().restore(given_same, saved, "state.json"));
  CHECK(given_same.size == 9);

  Demo older;  // a key missing from an older checkpoint keeps its value
  nlohmann::json without_name = saved;
  without_name.erase("name");
  older.name = "new";
  Demo::table().restore(older, without_name, "state.json");
  CHECK(older.name == "new");

  nlohmann::json wrong_type = saved;
  wrong_type["size"] = "nine";
  Demo typed;
  CHECK_THROWS_WITH(Demo::table().restore(typed, wrong_type, "state.json"), Contains("state.json options.size") && Contains("--size"));
  nlohmann::json out_of_range = saved;
  out_of_range["rate"] = 7;
  Demo ranged;
  CHECK_THROWS_WITH(Demo::table().restore(ranged, out_of_range, "state.json"), Contains("--rate"));
  // Values of the wrong kind are refused, not converted: -1 would wrap into a huge size, 2.5 would be cut to 2.
  for (const auto& [key, value] : {std::pair{"size", nlohmann::json(-1)}, {"size", nlohmann::json(2.5)},
                                   {"offset", nlohmann::json(uint64_t(1) << 63)}, {"size", nlohmann::json(true)},
                                   {"rate", nlohmann::json("0.5")}}) {
    nlohmann::json bad = saved;
    bad[key] = value;
    Demo target;
    CHECK_THROWS_WITH(Demo::table().restore(target, bad, "state.json"),
                      Contains(std::string("state.json options.") + key) && Contains("is not a value for"));
  }
}

namespace {
// Two options added after some checkpoints were written: one whose default changed what a run
// does (older runs behaved as 1), one whose default behaves as runs did before it.
struct Grown : ResumableOptions {
  size_t held = 2;
  size_t width = 8;

  static const OptionTable<Grown>& table() {
    static const OptionTable<Grown> t = OptionTable<Grown>()
        .add("--held", &Grown::held, "held out", OnResume::Restore, at_least(1))
        .older_checkpoints_ran_with(size_t(1))
        .add("--width", &Grown::width, "a width", OnResume::Restore);
    return t;
  }
};
}  // namespace

TEST_CASE("options: an option added later restores from an older checkpoint as that run behaved", "[options][resume]") {
  const nlohmann::json older = nlohmann::json::object();  // written before both options
  Grown resumed;
  Grown::table().restore(resumed, older, "state.json");
  CHECK(resumed.held == 1);   // as the older run behaved, not the new default
  CHECK(resumed.width == 8);  // no older value declared: keeps this run's
  CHECK(Grown::table().saved(resumed) == nlohmann::json{{"held", 1}, {"width", 8}});  // and its next checkpoint says so

  Grown given;  // a value set for the resumed run that differs from the older run's is refused, naming why
  given.held = 2;
  given.flags_given.insert("--held");
  CHECK_THROWS_WITH(Grown::table().restore(given, older, "state.json"),
                    Contains("--held 2 differs from the checkpoint's 1") && Contains("state.json, written before --held"));
  Grown same;
  same.held = 1;
  CHECK_NOTHROW(Grown::table().restore(same, older, "state.json"));

  // declared wrong, refused where the table is made: an int for a size_t would be saved signed and
  // refused by every restore; a value for an option that is not restored means nothing
  CHECK_THROWS_WITH(OptionTable<Grown>().add("--held", &Grown::held, "held out", OnResume::Restore).older_checkpoints_ran_with(1),
                    Contains("--held") && Contains("a value of its type"));
  CHECK_THROWS_AS(OptionTable<Grown>().add("--held", &Grown::held, "held out").older_checkpoints_ran_with(size_t(1)), std::logic_error);

  Grown newer;  // a checkpoint that has the option: its value
  newer.held = 3;
  Grown from_newer;
  Grown::table().restore(from_newer, Grown::table().saved(newer), "state.json");
  CHECK(from_newer.held == 3);
}

namespace {
struct Data : ResumableOptions {
  std::string corpus = "default.txt";
  std::string dev;

  static const OptionTable<Data>& table() {
    static const OptionTable<Data> t = OptionTable<Data>()
        .add("--corpus", &Data::corpus, "data", OnResume::DataPath)
        .add("--dev", &Data::dev, "more data", OnResume::DataPath);
    return t;
  }
};

void write_file(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// The working directory is `dir` while in scope.
struct WorkingDirectory {
  explicit WorkingDirectory(const fs::path& dir) : before(fs::current_path()) { fs::current_path(dir); }
  ~WorkingDirectory() { fs::current_path(before); }
  fs::path before;
};

Data restored(Data d, const nlohmann::json& saved) {
  Data::table().restore(d, saved, "state.json");
  return d;
}
}  // namespace

TEST_CASE("options: a data path is saved whole with its fingerprint, and on resume the same data may move while other data is refused",
          "[options][resume]") {
  const fs::path dir = temp_path("xgrad_options_data");
  fs::remove_all(dir);
  fs::create_directories(dir / "run");
  write_file(dir / "run" / "corpus.txt", "one line\nanother\n");
  nlohmann::json saved;
  {
    WorkingDirectory in(dir / "run");  // a relative path, as typed in the first run's directory
    Data d;
    d.corpus = "corpus.txt";
    saved = Data::table().saved(d);
  }
  const std::string first = (dir / "run" / "corpus.txt").string();
  CHECK(saved["corpus"] == first);  // found from any working directory
  CHECK(saved["corpus_fingerprint"]["bytes"] == 17);
  CHECK(saved["corpus_fingerprint"]["crc32c"].get<std::string>().size() == 8);
  CHECK(saved["dev"] == "");  // not given: nothing to find
  CHECK(!saved.contains("dev_fingerprint"));

  CHECK(restored(Data{}, saved).corpus == first);  // not given: the saved place
  {
    WorkingDirectory in(dir / "run");
    Data same;
    same.corpus = "corpus.txt";  // the same place, relative
    CHECK(restored(same, saved).corpus == first);
  }

  // Changed where it is (a corpus edited): refused, not resumed at a position that means nothing in
  // the new data
  write_file(first, "one line\nAnother\n");
  CHECK_THROWS_WITH(restored(Data{}, saved), Contains("--corpus " + first + " (state.json options.corpus) has changed since the "
                                                      "checkpoint was written") && Contains("start a new run"));
  write_file(first, "one line\nanother\n");  // put back as it was: resumes
  CHECK(restored(Data{}, saved).corpus == first);

  // Moved: the saved place is gone and a resume has to be told the new one.
  fs::rename(first, dir / "moved.txt");
  CHECK_THROWS_WITH(restored(Data{}, saved), Contains("--corpus " + first + " (state.json options.corpus) no longer exists: "
                                                      "pass --corpus with the data's new place"));
  {  // the flag's default names the same data where the run resumes (a re-cloned checkout's bundled file)
    fs::create_directories(dir / "clone");
    fs::copy_file(dir / "moved.txt", dir / "clone" / "default.txt");
    WorkingDirectory in(dir / "clone");
    CHECK(restored(Data{}, saved).corpus == "default.txt");
  }
  Data moved;
  moved.corpus = (dir / "moved.txt").string();
  CHECK(restored(moved, saved).corpus == moved.corpus);
  CHECK(Data::table().saved(restored(moved, saved))["corpus"] == moved.corpus);  // the next checkpoint keeps the new place

  // Other data, even of the same size, is refused naming both paths; so is a path with nothing there.
  write_file(dir / "other.txt", "one line\nAnother\n");
  Data other;
  other.corpus = (dir / "other.txt").string();
  CHECK_THROWS_WITH(restored(other, saved), Contains("--corpus " + other.corpus + " is not the data the checkpoint was trained on (" +
                                                     first + ", state.json options.corpus)") &&
                                                Contains("start a new run"));
  Data missing;
  missing.corpus = (dir / "nothing.txt").string();
  CHECK_THROWS_WITH(restored(missing, saved), Contains("--corpus " + missing.corpus + ": no such file or directory"));
  // A checkpoint saved before fingerprints cannot tell: only its own place is accepted.
  nlohmann::json older = saved;
  older.erase("corpus_fingerprint");
  CHECK_THROWS_WITH(restored(moved, older), Contains("saved without a fingerprint of its data"));
  CHECK_THROWS_WITH(restored(Data{}, older), Contains("resume from the one the run started in"));
  // A folder (shards) is not checked in place: a note or another run's output in it changes its
  // listing, not the data training reads (shards check their own checksums.json when read)
  fs::create_directories(dir / "shards");
  write_file(dir / "shards" / "shard_00000.bin", "abc");
  Data folder;
  folder.corpus = (dir / "shards").string();
  const nlohmann::json folder_saved = Data::table().saved(folder);
  write_file(dir / "shards" / "notes.txt", "mine");
  CHECK(restored(Data{}, folder_saved).corpus == folder.corpus);
  fs::remove_all(dir);
}

TEST_CASE("options: a directory's fingerprint is its files' names and sizes", "[options][resume]") {
  const fs::path dir = temp_path("xgrad_options_shards");
  fs::remove_all(dir);
  fs::create_directories(dir / "a" / "part");
  write_file(dir / "a" / "shard-0.bin", "abc");
  write_file(dir / "a" / "part" / "shard-1.bin", "de");
  const nlohmann::json a = data_fingerprint((dir / "a").string());
  CHECK(a["files"] == 2);
  CHECK(a["bytes"] == 5);
  fs::copy(dir / "a", dir / "b", fs::copy_options::recursive);
  CHECK(data_fingerprint((dir / "b").string()) == a);
  write_file(dir / "b" / "shard-0.bin", "xyz");  // the files are not read: the same sizes are the same listing
  CHECK(data_fingerprint((dir / "b").string()) == a);
  fs::rename(dir / "b" / "shard-0.bin", dir / "b" / "shard-9.bin");
  CHECK(data_fingerprint((dir / "b").string()) != a);
  write_file(dir / "a" / "shard-2.bin", "");
  CHECK(data_fingerprint((dir / "a").string())["files"] == 3);
  CHECK(data_fingerprint((dir / "nothing").string()).is_null());
  fs::remove_all(dir);
}

namespace {
// An option renamed to the ecosystem's name, its old short name kept as an alias; and transformers'
// --bf16 shorthand.
struct Renamed : ResumableOptions {
  float lr = 0.5f;
  std::string precision = "fp32";

  static const OptionTable<Renamed>& table() {
    static const OptionTable<Renamed> t = OptionTable<Renamed>()
        .add("--learning-rate,--lr", &Renamed::lr, "a rate", OnResume::Restore, between(0, 1))
        .add("--precision", &Renamed::precision, "fp32 or bf16", OnResume::Restore, Choices{{"fp32", "bf16"}})
        .group("Elsewhere")
        .add_shorthand("--bf16", "--precision", &Renamed::precision, "bf16", "--precision bf16");
    return t;
  }
};

Renamed parse_renamed(const std::string& args, std::string* help = nullptr) {
  Renamed r;
  CLI::App app("renamed", "renamed");
  Renamed::table().add_to(app, r, "Training");
  app.parse(args, /*program_name_included=*/false);
  if (help) *help = app.help();
  return r;
}
}  // namespace

TEST_CASE("options: a renamed option parses under both names, saves under the new one and restores from either", "[options][resume]") {
  const Renamed by_old = parse_renamed("--lr 0.25");
  CHECK(by_old.lr == 0.25f);
  CHECK(by_old.flags_given == std::set<std::string>{"--learning-rate"});  // the canonical name, whichever was typed
  CHECK(parse_renamed("--learning-rate 0.125").lr == 0.125f);
  CHECK_THROWS_WITH(parse_renamed("--lr 2"), Contains("--learning-rate '2'"));  // messages use the canonical name

  const nlohmann::json saved = Renamed::table().saved(by_old);
  CHECK(saved == nlohmann::json{{"learning_rate", 0.25}, {"precision", "fp32"}});
  // a checkpoint written when the option was --lr
  const nlohmann::json old_checkpoint = {{"lr", 0.75}, {"precision", "bf16"}};
  Renamed resumed;
  Renamed::table().restore(resumed, old_checkpoint, "old/training_state.json");
  CHECK(resumed.lr == 0.75f);
  CHECK(resumed.precision == "bf16");
  Renamed differs = parse_renamed("--learning-rate 0.5");
  CHECK_THROWS_WITH(Renamed::table().restore(differs, old_checkpoint, "old/training_state.json"),
                    Contains("--learning-rate 0.5 differs from the checkpoint's 0.75") && Contains("options.lr"));
}

TEST_CASE("options: a shorthand switch sets its option as if given, and shows in its group", "[options]") {
  std::string help;
  const Renamed r = parse_renamed("--bf16", &help);
  CHECK(r.precision == "bf16");
  CHECK(r.flags_given.count("--precision"));
  CHECK(parse_renamed("").precision == "fp32");
  CHECK_THAT(help, Contains("Elsewhere") && Contains("--bf16"));
  CHECK(Renamed::table().saved(r) == nlohmann::json{{"learning_rate", 0.5}, {"precision", "bf16"}});
}
