#pragma once
// Program options declared once. Each table entry names the flag, the struct member it fills (whose
// initializer is the default), the help text, the allowed range and what a resumed run does with
// it. The one table then drives the command line (CLI11, defaults shown in --help, unknown flags
// refused), the range checks, the JSON saved with a checkpoint and the restore on --resume.
// CLI11 itself is included only where a command line is parsed (options.cpp and the programs).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "util/checksums.hpp"
#include "util/json_input.hpp"

namespace CLI {
class App;
}

namespace xg {

// --help's option groups, shown in this order: the everyday ones first, a program's own groups
// (a task's flags) after them, and the rarely needed ones last.
inline const char* const kModelAndDataGroup = "Model and data";
inline const char* const kTrainingGroup = "Training";
inline const char* const kOutputGroup = "Evaluation and output";
inline const char* const kPerformanceGroup = "Performance";
inline const char* const kDistributedGroup = "Distributed (under mpirun)";
inline const char* const kAdvancedGroup = "Advanced";

// What a resumed run does with an option.
enum class OnResume {
  UseNew,   // run control (output, cadence, threads): not saved; each run's own value is used
  Restore,  // shapes the data or the updates: saved with each checkpoint and restored from it
  // A data file or directory (text): saved as an absolute path, so that a run resumed from another
  // working directory finds it, with the data's fingerprint beside it (KEY_fingerprint). Restored
  // like Restore, except that a path given for the resumed run replaces the saved one (the data
  // moved) when it holds the same data; other data is refused, since the run's position in the
  // data would mean nothing in it.
  DataPath,
  // A file the task reads and checks on resume itself (multi-task's tasks.json: its check names the
  // task and flags that changed): restored like DataPath, except that a change where it is is
  // left to that check.
  TaskFile,
};
inline bool is_data_path(OnResume r) { return r == OnResume::DataPath || r == OnResume::TaskFile; }

// Allowed values of a number option, inclusive; NaN and infinities are always refused.
struct Range {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
};
inline Range at_least(double min) { return {min, std::numeric_limits<double>::infinity()}; }
inline Range between(double min, double max) { return {min, max}; }

// Allowed values of a text option that names one of a few things (--schedule linear): refused on
// the command line (exit status 2) and in a restored run, naming the flag, the value and these.
struct Choices {
  std::vector<std::string> names;
};

// The base of a struct whose options a resumed run restores: the flags its command line gave
// (filled while parsing; each as the table declares it, e.g. "--tokenizer,--vocab"). restore()
// refuses a given flag whose value differs from the checkpoint's even when it equals the default:
// `--resume DIR --precision fp32` of a bf16 run must not go on in bf16 without a word.
struct ResumableOptions {
  std::set<std::string> flags_given;
};

namespace option_detail {
// `text` as a T: the whole text, in T's range, finite, no sign on unsigned types, decimal only.
// Throws std::invalid_argument naming `flag` and the text.
template <class T>
T parse(const std::string& text, const std::string& flag);
// Throws std::invalid_argument naming `flag` and `value` when it is outside `range` or not finite.
void check_range(double value, const Range& range, const std::string& flag, const std::string& shown);
// "--max-predictions" -> "max_predictions": the key in saved JSON (of the first name of "--a,--b").
std::string json_key(const std::string& flag);
// The key a checkpoint's saved options (`saved`) hold an option's value under: its canonical
// name's, else an alias's (saved when that alias was the option's name); "" when none.
std::string saved_key(const nlohmann::json& saved, const std::string& flag, const std::vector<std::string>& aliases);
// Whether two paths name the same place (relative ones from the working directory; a trailing
// separator aside), existing or not.
bool same_place(const std::string& a, const std::string& b);
// The DataPath restore: `current` (this run's value) when it names another place than `saved`
// and holds the same data per `fingerprint`, else `saved`; throws naming `flag`, both paths and
// `where` when the data differ (with `check_in_place`, also when the data at `saved` changed), when
// that cannot be told, or when the saved path is gone and no new one is given.
std::string restore_data_path(const std::string& flag, const std::string& current, bool given, const std::string& saved,
                              const nlohmann::json& fingerprint, const std::string& where, bool check_in_place);
// Whether `j` is a value of T: a string, a boolean, a number (floating T), or an integer within T's
// range (integral T).
template <class T>
bool holds(const nlohmann::json& j) {
  if constexpr (std::is_same_v<T, std::string>) return j.is_string();
  else if constexpr (std::is_same_v<T, bool>) return j.is_boolean();
  else if constexpr (std::is_floating_point_v<T>) return j.is_number();
  else if (j.is_number_unsigned()) return j.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max());
  else if (j.is_number_integer()) return std::is_signed_v<T> && j.get<int64_t>() >= int64_t(std::numeric_limits<T>::min());
  else return false;
}

template <class Owner>
bool given_on_command_line(const Owner& o, const std::string& flag) {
  if constexpr (std::is_base_of_v<ResumableOptions, Owner>) return o.flags_given.count(flag) > 0;
  else return false;
}
template <class Owner>
void note_given(Owner& o, const std::string& flag) {
  if constexpr (std::is_base_of_v<ResumableOptions, Owner>) o.flags_given.insert(flag);
}

template <class T>
std::string show(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) return v.empty() ? "\"\"" : v;
  else return fmt::format("{}", v);
}

// One flag as the command line sees it, bound to the struct it fills.
struct CommandLineOption {
  std::string flag, help;
  bool is_switch = false;                    // a bool: `--flag`, or `--flag=false`
  std::function<void(bool)> set_switch;      // is_switch: on or off
  std::function<void(const std::string&)> set;  // the value's text; throws std::invalid_argument naming the flag
  std::string type_name;                     // "TEXT", "INT", "FLOAT" in --help
  std::optional<std::string> default_shown;  // in --help
  // Why a value's text is refused ("" when it is not), checked before `set`; CLI11 names the flag.
  std::function<std::string(const std::string&)> validate;
};
// Declares `option` on `app` in --help's `group` (options.cpp: the one place options meet CLI11).
void add_to_app(CLI::App& app, const CommandLineOption& option, const std::string& group);
}  // namespace option_detail

template <class Owner>
class OptionTable {
 public:
  // Declares `flag` (e.g. "--seed", or "--max-seq-length,--seq-len": the first name is the
  // canonical one, which --help shows, messages use and checkpoints save the value under; the others
  // are aliases that parse too, and a checkpoint that saved the value under an alias's key restores
  // it) filling `member`; `help` without the default (it is added).
  template <class T>
  OptionTable& add(const std::string& flag, T Owner::*member, const std::string& help,
                   OnResume on_resume = OnResume::UseNew, Range range = {});
  // A text option whose value must be one of `choices`.
  OptionTable& add(const std::string& flag, std::string Owner::*member, const std::string& help, OnResume on_resume,
                   Choices choices);
  // A switch that sets text option `target` (declared before it, filling `member`) to `value`, as if
  // it had been given so (transformers' `--bf16` for `--precision bf16`); not saved itself.
  OptionTable& add_shorthand(const std::string& flag, const std::string& target, std::string Owner::*member,
                             const std::string& value, const std::string& help);
  // The last option added, as checkpoints written before it existed restore it: the value their
  // runs behaved as. Without it, such a checkpoint leaves the option at this run's value, which
  // suits an option whose default behaves as runs did before it.
  template <class T>
  OptionTable& older_checkpoints_ran_with(const T& value) {
    Entry& e = entries_.back();
    const nlohmann::json j = value;
    // caught where the table is declared: an int for a size_t option would be saved signed and
    // refused by every restore
    if (e.on_resume != OnResume::Restore || !e.holds(j))
      throw std::logic_error(fmt::format("[options] {}: older_checkpoints_ran_with needs a Restore option and a value of its type",
                                         e.flag));
    e.before_it_existed = j;
    return *this;
  }

  // The options added after this call show under --help's `group` (e.g. "Performance") instead of
  // the one add_to() names.
  OptionTable& group(const std::string& name) {
    group_ = name;
    return *this;
  }

  // Adds every flag to `app` under `group` (or the group() it was declared in), each showing `o`'s
  // current value as its default.
  void add_to(CLI::App& app, Owner& o, const std::string& group) const {
    for (const auto& e : entries_) option_detail::add_to_app(app, e.command_line(o), e.group.empty() ? group : e.group);
  }
  // Sets each Restore and DataPath option its command line did not give back to Owner{}'s value.
  // For a program with defaults of its own (bert_finetune's rate, batch, epochs): on resume they
  // would otherwise read as flags given anew, differing from the checkpoint's.
  void reset_not_given(Owner& o) const {
    static_assert(std::is_base_of_v<ResumableOptions, Owner>, "restored options derive from ResumableOptions");
    const Owner fresh{};
    for (const auto& e : entries_)
      if (e.on_resume != OnResume::UseNew && !option_detail::given_on_command_line(o, e.flag)) e.reset(o, fresh);
  }
  // Throws naming the flag and value for any value outside its range (values set in code).
  void check(const Owner& o) const {
    for (const auto& e : entries_) e.check(o);
  }
  // The Restore and DataPath options' values, keyed by json_key(flag) (and the data's fingerprints).
  nlohmann::json saved(const Owner& o) const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& e : entries_)
      if (e.on_resume != OnResume::UseNew) e.save(o, j);
    return j;
  }
  // Every option's value as given (run control included), keyed by json_key(flag); no fingerprints.
  nlohmann::json given(const Owner& o) const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& e : entries_) e.save_given(o, j);
    return j;
  }
  // Sets each Restore option from `saved` (a checkpoint's options; `source` names it in errors).
  // A value given on the command line, or set for this run to other than the default, that
  // differs from the saved one is refused, naming the flag and both values: a resumed run keeps
  // what shaped its data and updates (a DataPath may name the same data in a new place). An
  // option missing from `saved` (added after that checkpoint was written) is restored as
  // older_checkpoints_ran_with() says, or else keeps its value.
  void restore(Owner& o, const nlohmann::json& saved, const std::string& source) const {
    static_assert(std::is_base_of_v<ResumableOptions, Owner>, "restored options derive from ResumableOptions");
    for (const auto& e : entries_) {
      if (e.on_resume == OnResume::UseNew) continue;
      const std::string key = e.saved_key(saved);
      if (!key.empty()) e.restore(o, saved, source + " options." + key);
      else if (!e.before_it_existed.is_null()) e.restore(o, older_checkpoint(option_detail::json_key(e.flag), e.before_it_existed), source + ", written before " + e.flag);
    }
    check(o);
  }

 private:
  struct Entry {
    std::string flag;                  // the canonical name
    std::vector<std::string> aliases;  // the other names
    std::string group;                 // in --help; empty: add_to's
    OnResume on_resume;
    std::string saved_key(const nlohmann::json& saved) const { return option_detail::saved_key(saved, flag, aliases); }
    std::function<option_detail::CommandLineOption(Owner&)> command_line;
    std::function<void(const Owner&)> check;
    std::function<void(const Owner&, nlohmann::json&)> save;        // into the saved options
    std::function<void(const Owner&, nlohmann::json&)> save_given;  // the value as given, whatever on_resume
    std::function<void(Owner&, const Owner& from)> reset;     // to from's value
    // from the saved options (its key is there); `where` names it in errors
    std::function<void(Owner&, const nlohmann::json& saved, const std::string& where)> restore;
    std::function<bool(const nlohmann::json&)> holds;  // whether a saved value is of the option's type
    nlohmann::json before_it_existed;                   // null: an older checkpoint keeps the run's value
  };
  std::vector<Entry> entries_;
  std::string group_;  // of the options added next

  static nlohmann::json older_checkpoint(const std::string& key, const nlohmann::json& value) {
    nlohmann::json j = nlohmann::json::object();
    j[key] = value;
    return j;
  }
};

namespace option_detail {
// Throws std::invalid_argument naming `flag`, `value` and the choices when value is not one of them.
void check_choice(const std::string& value, const Choices& choices, const std::string& flag);
}  // namespace option_detail

template <class Owner>
OptionTable<Owner>& OptionTable<Owner>::add(const std::string& names, std::string Owner::*member, const std::string& help,
                                            OnResume on_resume, Choices choices) {
  add<std::string>(names, member, help, on_resume);
  const std::string flag = names.substr(0, names.find(','));
  Entry& e = entries_.back();
  e.check = [=](const Owner& o) { option_detail::check_choice(o.*member, choices, flag); };
  e.command_line = [=, plain = e.command_line](Owner& o) {
    option_detail::CommandLineOption c = plain(o);
    c.validate = [=](const std::string& text) {
      try {
        option_detail::check_choice(text, choices, "");  // CLI11 names the flag
        return std::string();
      } catch (const std::invalid_argument& err) {
        return std::string(err.what());
      }
    };
    return c;
  };
  return *this;
}

// An option table bound to one struct: what code that does not know the struct's type (the
// Trainer, for a task's options) needs to save, restore and check it.
class BoundOptions {
 public:
  template <class Owner>
  BoundOptions(const OptionTable<Owner>& table, Owner& o)
      : saved_([&table, &o] { return table.saved(o); }),
        restore_([&table, &o](const nlohmann::json& j, const std::string& source) { table.restore(o, j, source); }),
        check_([&table, &o] { table.check(o); }) {}
  // Several tables as one (e.g. the options common to all fine-tuning tasks and one task's own):
  // their saved values merged (keys come from distinct flags), each restored and checked.
  static BoundOptions join(std::vector<BoundOptions> parts) {
    BoundOptions all(std::move(parts));
    return all;
  }
  nlohmann::json saved() const { return saved_(); }
  void restore(const nlohmann::json& saved, const std::string& source) const { restore_(saved, source); }
  void check() const { check_(); }

 private:
  explicit BoundOptions(std::vector<BoundOptions> parts)
      : saved_([parts] {
          nlohmann::json j = nlohmann::json::object();
          for (const auto& p : parts) j.update(p.saved());
          return j;
        }),
        restore_([parts](const nlohmann::json& j, const std::string& source) {
          for (const auto& p : parts) p.restore(j, source);
        }),
        check_([parts] {
          for (const auto& p : parts) p.check();
        }) {}

  std::function<nlohmann::json()> saved_;
  std::function<void(const nlohmann::json&, const std::string&)> restore_;
  std::function<void()> check_;
};

template <class Owner>
template <class T>
OptionTable<Owner>& OptionTable<Owner>::add(const std::string& names, T Owner::*member, const std::string& help,
                                            OnResume on_resume, Range range) {
  using option_detail::show;
  const std::string flag = names.substr(0, names.find(','));  // the first name: messages, given flags, the saved key
  Entry e;
  e.flag = flag;
  for (size_t at = names.find(','); at != std::string::npos;) {
    const size_t next = names.find(',', at + 1);
    e.aliases.push_back(names.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1));
    at = next;
  }
  e.group = group_;
  e.on_resume = on_resume;
  e.check = [=](const Owner& o) {
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
      option_detail::check_range(double(o.*member), range, flag, show(o.*member));
  };
  e.command_line = [=](Owner& o) {
    option_detail::CommandLineOption c;
    c.flag = names;  // every name: the aliases parse too
    c.help = help;
    if constexpr (std::is_same_v<T, bool>) {
      c.is_switch = true;
      c.set_switch = [=, &o](bool on) {
        o.*member = on;
        option_detail::note_given(o, flag);
      };
    } else {
      c.set = [=, &o](const std::string& text) {
        o.*member = option_detail::parse<T>(text, flag);
        option_detail::note_given(o, flag);
        if constexpr (std::is_arithmetic_v<T>) option_detail::check_range(double(o.*member), range, flag, text);
      };
      if constexpr (std::is_same_v<T, std::string>) c.type_name = "TEXT";
      else if constexpr (std::is_floating_point_v<T>) c.type_name = "FLOAT";
      else c.type_name = "INT";
      bool has_default = true;  // an empty text (e.g. --resume) shows none
      if constexpr (std::is_same_v<T, std::string>) has_default = !(o.*member).empty();
      if (has_default) c.default_shown = show(o.*member);
    }
    return c;
  };
  const std::string key = option_detail::json_key(flag), fingerprint_key = key + "_fingerprint";
  if constexpr (!std::is_same_v<T, std::string>) {
    if (is_data_path(on_resume)) throw std::logic_error(fmt::format("[options] {}: a DataPath option holds text", flag));
  }
  e.reset = [=](Owner& o, const Owner& from) { o.*member = from.*member; };
  e.holds = [](const nlohmann::json& j) { return option_detail::holds<T>(j); };
  e.save_given = [=](const Owner& o, nlohmann::json& j) { j[key] = o.*member; };
  e.save = [=](const Owner& o, nlohmann::json& j) {
    if constexpr (std::is_same_v<T, std::string>) {
      const std::string& path = o.*member;
      if (is_data_path(on_resume) && !path.empty()) {
        j[key] = std::filesystem::absolute(path).lexically_normal().string();
        j[fingerprint_key] = data_fingerprint(path);
        return;
      }
    }
    j[key] = o.*member;
  };
  e.restore = [=, aliases = e.aliases](Owner& o, const nlohmann::json& all, const std::string& where) {
    const std::string found = option_detail::saved_key(all, flag, aliases);
    const nlohmann::json& j = all.at(found);
    // Exactly T's kind of JSON value: get<T>() alone would wrap -1 into a huge size_t and cut 2.5
    // down to 2.
    if (!option_detail::holds<T>(j))
      throw std::runtime_error(fmt::format("[resume] {}: {} is not a value for {}", where, json_summary(j), flag));
    const T saved = j.get<T>();
    const T current = o.*member, fallback = Owner{}.*member;
    const bool given = current != fallback || option_detail::given_on_command_line(o, flag);
    if constexpr (std::is_same_v<T, std::string>) {
      if (is_data_path(on_resume) && !saved.empty()) {
        o.*member = option_detail::restore_data_path(flag, current, given, saved, all.value(found + "_fingerprint", nlohmann::json()),
                                                     where, /*check_in_place=*/on_resume == OnResume::DataPath);
        return;
      }
    }
    if (given && current != saved)
      throw std::invalid_argument(fmt::format(
          "[resume] {} {} differs from the checkpoint's {} ({}): a resumed run keeps the settings saved with it; "
          "leave the flag out, or start a new run",
          flag, show(current), show(saved), where));
    o.*member = saved;
  };
  entries_.push_back(std::move(e));
  return *this;
}

template <class Owner>
OptionTable<Owner>& OptionTable<Owner>::add_shorthand(const std::string& flag, const std::string& target,
                                                      std::string Owner::*member, const std::string& value,
                                                      const std::string& help) {
  if (std::none_of(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.flag == target; }))
    throw std::logic_error(fmt::format("[options] {}: declare {} first", flag, target));
  const std::string target_flag = target;
  Entry e;
  e.flag = flag;
  e.group = group_;
  e.on_resume = OnResume::UseNew;
  e.check = [](const Owner&) {};
  e.command_line = [=](Owner& o) {
    option_detail::CommandLineOption c;
    c.flag = flag;
    c.help = help;
    c.is_switch = true;
    c.set_switch = [=, &o](bool on) {
      if (!on) return;
      o.*member = value;
      option_detail::note_given(o, target_flag);
    };
    return c;
  };
  e.reset = [](Owner&, const Owner&) {};
  e.holds = [](const nlohmann::json&) { return false; };
  e.save_given = [](const Owner&, nlohmann::json&) {};
  e.save = [](const Owner&, nlohmann::json&) {};
  e.restore = [](Owner&, const nlohmann::json&, const std::string&) {};
  entries_.push_back(std::move(e));
  return *this;
}

}  // namespace xg
