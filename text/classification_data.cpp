#include "text/classification_data.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "text/unicode.hpp"
#include "util/json_input.hpp"
#include "util/lines.hpp"

namespace xg::text {

namespace {

[[noreturn]] void fail(const std::string& path, size_t line, const std::string& what) {
  throw std::invalid_argument(fmt::format("[data] {}:{}: {}", path, line, what));
}

struct Record {
  std::vector<std::string> fields;
  size_t line = 0;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("[data] {}: cannot open", path));
  std::ostringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // a UTF-8 BOM, as Excel writes
  return text;
}

// TSV: one record per line, fields split at tabs, no quoting. Blank lines are skipped.
std::vector<Record> tsv_records(const std::string& text) {
  std::vector<Record> out;
  size_t line = 0, pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string row = text.substr(pos, end - pos);
    pos = end + 1;
    ++line;
    drop_cr(row);
    if (row.empty()) continue;
    Record r{{}, line};
    size_t start = 0;
    for (size_t tab; (tab = row.find('\t', start)) != std::string::npos; start = tab + 1) r.fields.push_back(row.substr(start, tab - start));
    r.fields.push_back(row.substr(start));
    out.push_back(std::move(r));
  }
  return out;
}

// CSV (RFC 4180): fields in double quotes may hold commas, newlines and "" for a quote.
std::vector<Record> csv_records(const std::string& text, const std::string& path) {
  std::vector<Record> out;
  Record r;
  std::string field;
  size_t line = 1;
  bool in_quotes = false, quoted_field = false, any = false;
  size_t quote_line = 0;
  auto end_field = [&] {
    r.fields.push_back(std::move(field));
    field.clear();
    quoted_field = false;
  };
  auto end_record = [&] {
    end_field();
    const bool blank = r.fields.size() == 1 && r.fields[0].empty() && !any;
    if (!blank) out.push_back(std::move(r));
    r = Record{};
    any = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (r.fields.empty() && field.empty() && !any) r.line = line;
    if (in_quotes) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        in_quotes = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      continue;
    }
    if (c == '"') {
      if (!field.empty() || quoted_field)
        fail(path, line, fmt::format("a quote inside the unquoted field {} (quote the whole field and double the quote)", r.fields.size() + 1));
      in_quotes = quoted_field = any = true;
      quote_line = line;
    } else if (c == ',') {
      end_field();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_record();
      ++line;
    } else {
      if (quoted_field) fail(path, line, fmt::format("text after the closing quote of field {}", r.fields.size() + 1));
      field += c;
      any = true;
    }
  }
  if (in_quotes) fail(path, quote_line, "a quoted field is never closed");
  if (any || !field.empty() || !r.fields.empty()) end_record();
  return out;
}

bool is_number(const std::string& s) { return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }); }

// The columns a text spec joins ("word+sentence1"); one for a plain name or number.
std::vector<std::string> spec_parts(const std::string& spec) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t plus; (plus = spec.find('+', start)) != std::string::npos; start = plus + 1) parts.push_back(spec.substr(start, plus - start));
  parts.push_back(spec.substr(start));
  return parts;
}

// Fields joined with a space, as the texts of a joined spec read; `parts` are column indices or keys.
template <class Part, class FieldOf>
std::string joined(const std::vector<Part>& parts, FieldOf field_of) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? " " : "") + field_of(parts[i]);
  return out;
}

constexpr size_t kNone = std::string::npos;

// Where each wanted column sits in a record: indices, or kNone / empty for "none".
struct ColumnIndex {
  size_t label = kNone, id = kNone;
  std::vector<size_t> text, text_b;
};

size_t find_column(const std::string& spec, const std::vector<std::string>* header, const std::string& path, const char* role) {
  if (is_number(spec)) {
    const size_t n = std::stoul(spec);
    if (n == 0) throw std::invalid_argument(fmt::format("[data] {}: {} column 0: columns are numbered from 1", path, role));
    return n - 1;
  }
  if (!header)
    throw std::invalid_argument(fmt::format("[data] {}: {} column '{}' is a name, which needs a header row", path, role, spec));
  const auto it = std::find(header->begin(), header->end(), spec);
  if (it == header->end())
    throw std::invalid_argument(fmt::format("[data] {}:1: no {} column '{}' in the header ({})", path, role, spec, fmt::join(*header, ", ")));
  return size_t(it - header->begin());
}

std::vector<size_t> find_columns(const std::string& spec, const std::vector<std::string>* header, const std::string& path, const char* role) {
  std::vector<size_t> at;
  for (const auto& part : spec_parts(spec)) at.push_back(find_column(part, header, path, role));
  return at;
}

bool names_a_column(const TextColumns& c) {
  for (const std::string* spec : {&c.label, &c.text, &c.text_b, &c.id})
    for (const auto& part : spec->empty() ? std::vector<std::string>{} : spec_parts(*spec))
      if (!is_number(part)) return true;
  return false;
}

std::vector<TextExample> table_examples(std::vector<Record> records, const TextColumns& c, const std::string& path) {
  const bool header_row = names_a_column(c) || c.skip_header;
  if (records.empty() || (header_row && records.size() == 1))
    throw std::invalid_argument(fmt::format("[data] {}: no examples", path));
  const std::vector<std::string>* header = header_row ? &records.front().fields : nullptr;
  ColumnIndex at;
  if (!c.label.empty()) at.label = find_column(c.label, header, path, "label");
  if (!c.id.empty()) at.id = find_column(c.id, header, path, "id");
  at.text = find_columns(c.text, header, path, "text");
  if (!c.text_b.empty()) at.text_b = find_columns(c.text_b, header, path, "text_b");
  else if (header && std::find(header->begin(), header->end(), "text_b") != header->end()) at.text_b = find_columns("text_b", header, path, "text_b");
  const size_t width = header ? header->size() : records.front().fields.size();
  std::vector<size_t> used = at.text;
  used.insert(used.end(), at.text_b.begin(), at.text_b.end());
  for (size_t k : {at.label, at.id})
    if (k != kNone) used.push_back(k);
  std::vector<TextExample> out;
  for (size_t i = header_row ? 1 : 0; i < records.size(); ++i) {
    Record& r = records[i];
    if (r.fields.size() != width)
      fail(path, r.line, fmt::format("{} fields where the {} has {}", r.fields.size(), header ? "header" : "first row", width));
    for (size_t k : used)
      if (k >= width) fail(path, r.line, fmt::format("no column {} (the rows have {})", k + 1, width));
    auto field = [&](size_t k) { return r.fields[k]; };
    TextExample e;
    e.line = r.line;
    e.text_a = joined(at.text, field);
    e.pair = !at.text_b.empty();
    if (e.pair) e.text_b = joined(at.text_b, field);
    if (at.id != kNone) e.id = r.fields[at.id];
    if (at.label != kNone) {
      e.label = r.fields[at.label];
      const std::string label_name = header ? (*header)[at.label] : fmt::format("column {}", at.label + 1);
      if (e.label.empty()) fail(path, r.line, fmt::format("the label (field '{}') is empty", label_name));
    }
    out.push_back(std::move(e));
  }
  // Numbered columns read every row as an example: a header row would become one, its label a
  // class of its own. Seen when the first row's label is a word and every other row's a number.
  if (!header_row && at.label != kNone && out.size() > 1 && !is_number(out.front().label) &&
      std::all_of(out.begin() + 1, out.end(), [](const TextExample& e) { return is_number(e.label); }))
    fail(path, out.front().line, fmt::format("the label '{}' looks like a header (every other row's label is a number): pass "
                                             "--skip-header, or name the columns", out.front().label));
  return out;
}

// A JSON label or id as text: strings as they are, integers and booleans as written, other
// numbers as the shortest text that reads back the same.
std::string field_text(const nlohmann::json& v, const std::string& path, size_t line, const char* role, const std::string& key) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return v.dump();
  fail(path, line, fmt::format("the {} (key '{}') must be a string, number or boolean, got {}", role, key, json_summary(v)));
}

std::vector<TextExample> jsonl_examples(const std::string& text, const TextColumns& c, const std::string& path) {
  for (const std::string* spec : {&c.label, &c.text, &c.text_b, &c.id})
    if (is_number(*spec)) throw std::invalid_argument(fmt::format("[data] {}: JSON Lines columns are keys, not numbers ('{}')", path, *spec));
  std::vector<TextExample> out;
  std::istringstream in(text);
  std::string row;
  for (size_t line = 1; getline_lf(in, row); ++line) {
    if (row.find_first_not_of(" \t") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = parse_json_bounded(row);
    } catch (const nlohmann::json::exception& e) {
      const bool array = row.find_first_not_of(" \t") != std::string::npos && row[row.find_first_not_of(" \t")] == '[';
      fail(path, line, fmt::format("not valid JSON ({}){}", e.what(),
                                   array ? "; a JSON array? the file must be JSON Lines: one object per line" : ""));
    }
    if (!j.is_object()) fail(path, line, fmt::format("expected a JSON object, got {}", json_summary(j)));
    auto text_of = [&](const std::string& key, bool required) -> std::string {
      if (!j.contains(key)) {
        if (required) fail(path, line, fmt::format("no key '{}'", key));
        return "";
      }
      if (!j[key].is_string()) fail(path, line, fmt::format("key '{}' must be a string, got {}", key, json_summary(j[key])));
      return j[key].get<std::string>();
    };
    TextExample e;
    e.line = line;
    e.text_a = joined(spec_parts(c.text), [&](const std::string& key) { return text_of(key, true); });
    e.pair = !c.text_b.empty() || j.contains("text_b");
    if (c.text_b.empty()) e.text_b = text_of("text_b", false);
    else e.text_b = joined(spec_parts(c.text_b), [&](const std::string& key) { return text_of(key, true); });
    if (!c.id.empty()) {
      if (!j.contains(c.id) || j[c.id].is_null()) fail(path, line, fmt::format("no id (key '{}')", c.id));
      e.id = field_text(j[c.id], path, line, "id", c.id);
    }
    if (!c.label.empty()) {
      if (!j.contains(c.label) || j[c.label].is_null()) fail(path, line, fmt::format("no label (key '{}')", c.label));
      e.label = field_text(j[c.label], path, line, "label", c.label);
      if (e.label.empty()) fail(path, line, fmt::format("the label (key '{}') is empty", c.label));
    }
    out.push_back(std::move(e));
  }
  if (out.empty()) throw std::invalid_argument(fmt::format("[data] {}: no examples", path));
  return out;
}

bool is_integer(const std::string& s) {
  const size_t start = !s.empty() && s[0] == '-' ? 1 : 0;
  return s.size() > start && s.size() < 19 && is_number(s.substr(start));
}

}  // namespace

std::vector<TextExample> read_text_examples(const std::string& path, const TextColumns& columns) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext != ".tsv" && ext != ".csv" && ext != ".jsonl" && ext != ".json")
    throw std::invalid_argument(fmt::format("[data] {}: unknown format '{}' (.tsv, .csv, .jsonl or .json for JSON Lines)", path, ext));
  const std::string text = read_all(path);
  if (ext == ".jsonl" || ext == ".json") return jsonl_examples(text, columns, path);  // the JSON parser checks UTF-8
  std::vector<TextExample> examples = table_examples(ext == ".tsv" ? tsv_records(text) : csv_records(text, path), columns, path);
  // Checked here, where the file and line are known, not by the tokenizer later.
  for (const auto& e : examples)
    for (const auto& [field, value] : {std::pair{"text", &e.text_a}, {"second text", &e.text_b}, {"label", &e.label}, {"id", &e.id}})
      if (const size_t at = invalid_utf8_at(*value); at != std::string_view::npos)
        throw std::invalid_argument(fmt::format("[data] {}:{}: the {} has {}", path, e.line, field,
                                                invalid_utf8_message(*value, at)));
  return examples;
}

namespace {
// A label's spelling-free form: trimmed; a number as its value; true/false in lower case.
std::string label_key(const std::string& label) {
  const size_t a = label.find_first_not_of(" \t"), b = label.find_last_not_of(" \t");
  std::string s = a == std::string::npos ? "" : label.substr(a, b - a + 1);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(v)) return fmt::format("{}", v == 0 ? 0.0 : v);
  std::string lower = s;
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  return lower == "true" || lower == "false" ? lower : s;
}
}  // namespace

std::vector<std::string> label_list(const std::vector<TextExample>& examples, const std::string& path) {
  std::set<std::string> distinct;
  std::map<std::string, std::pair<std::string, size_t>> first_of;  // spelling-free form -> (label, line)
  for (const auto& e : examples) {
    distinct.insert(e.label);
    const auto [it, fresh] = first_of.try_emplace(label_key(e.label), e.label, e.line);
    if (!fresh && it->second.first != e.label)
      fail(path, e.line, fmt::format("label '{}' is label '{}' (line {}) spelt another way: write each label one way, or they "
                                     "become two classes", e.label, it->second.first, it->second.second));
  }
  std::vector<std::string> labels(distinct.begin(), distinct.end());
  if (std::all_of(labels.begin(), labels.end(), is_integer))
    std::sort(labels.begin(), labels.end(), [](const std::string& a, const std::string& b) { return std::stoll(a) < std::stoll(b); });
  return labels;
}

std::vector<int64_t> label_ids(const std::vector<TextExample>& examples, const std::vector<std::string>& id2label,
                               const std::string& path) {
  std::vector<int64_t> ids;
  for (const auto& e : examples) {
    const auto it = std::find(id2label.begin(), id2label.end(), e.label);
    if (it == id2label.end())
      fail(path, e.line, fmt::format("unknown label '{}' (the model's labels: {}{})", e.label,
                                     fmt::join(id2label.begin(), id2label.begin() + long(std::min<size_t>(id2label.size(), 20)), ", "),
                                     id2label.size() > 20 ? fmt::format(", ... {} in all", id2label.size()) : ""));
    ids.push_back(int64_t(it - id2label.begin()));
  }
  return ids;
}

std::vector<double> label_values(const std::vector<TextExample>& examples, const std::string& path) {
  std::vector<double> values;
  for (const auto& e : examples) {
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(e.label.c_str(), &end);
    if (end != e.label.c_str() + e.label.size() || errno == ERANGE || !std::isfinite(v))
      fail(path, e.line, fmt::format("the label '{}' is not a number (regression needs numbers)", e.label));
    values.push_back(v);
  }
  return values;
}

}  // namespace xg::text
