// Options declared once (util/options.hpp): the command line they make (defaults in --help,
// unknown flags and bad numbers refused naming the flag), the JSON they save and the restore on
// resume. Also run under AddressSanitizer: command lines are untrusted text.
#include <catch2/catch.hpp>

#include "util/options.hpp"

using namespace xg;
using Catch::Matchers::Contains;

namespace {
struct Demo {
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
