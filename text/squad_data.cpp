#include "text/squad_data.hpp"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "text/unicode.hpp"
#include "util/json_input.hpp"

namespace xg::text {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::invalid_argument(fmt::format("[squad] {}: {}", path, what));
}

// `where` names the place in errors: "data[0].paragraphs[2]" or "question 'id'".
const json& field(const json& object, const char* key, json::value_t type, const std::string& path, const std::string& where) {
  if (!object.is_object()) fail(path, fmt::format("{}: expected an object, got {}", where, json_summary(object)));
  const auto it = object.find(key);
  if (it == object.end()) fail(path, fmt::format("{}: no field '{}'", where, key));
  const bool ok = type == json::value_t::number_unsigned ? it->is_number_unsigned() || (it->is_number_integer() && it->get<int64_t>() >= 0)
                                                          : it->type() == type;
  if (!ok) {
    const char* wanted = type == json::value_t::string ? "a string" : type == json::value_t::array ? "an array"
                         : type == json::value_t::boolean ? "true or false" : "an integer >= 0";
    fail(path, fmt::format("{}: '{}' must be {}, got {}", where, key, wanted, json_summary(*it)));
  }
  return *it;
}

json parse_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("[squad] {}: cannot open", path));
  std::ostringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // a UTF-8 BOM
  try {
    return parse_json_bounded(text);
  } catch (const json::exception& e) {
    fail(path, fmt::format("not valid JSON ({})", e.what()));
  }
}

// The answers of `key`, each checked against the context: context[answer_start:][:len(text)] == text.
std::vector<SquadAnswer> read_answers(const json& qa, const char* key, const std::vector<char32_t>& context,
                                      const std::string& path, const std::string& where) {
  std::vector<SquadAnswer> out;
  const json& list = field(qa, key, json::value_t::array, path, where);
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = fmt::format("{}: {}[{}]", where, key, i);
    SquadAnswer a;
    a.text = field(list[i], "text", json::value_t::string, path, at).get<std::string>();
    a.start = json_integer<size_t>(field(list[i], "answer_start", json::value_t::number_unsigned, path, at), at + ": answer_start");
    const std::vector<char32_t> answer = decode_utf8(a.text, InvalidUtf8::Error, path + ": " + at + ": text");
    if (answer.empty()) fail(path, fmt::format("{}: the answer text is empty", at));
    const bool fits = a.start <= context.size() && answer.size() <= context.size() - a.start;
    if (!fits || !std::equal(answer.begin(), answer.end(), context.begin() + long(a.start)))
      fail(path, fmt::format("{}: answer_start {} points at '{}', not at the answer text '{}'", at, a.start,
                             fits ? encode_utf8(std::u32string(context.begin() + long(a.start), context.begin() + long(a.start + answer.size())))
                                  : "(past the end of the context)",
                             a.text));
    out.push_back(std::move(a));
  }
  return out;
}

SquadQuestion read_question(const json& qa, const std::shared_ptr<const std::string>& context,
                            const std::vector<char32_t>& context_cps, const std::string& path, const std::string& where) {
  SquadQuestion q;
  const json& id = field(qa, "id", json::value_t::string, path, where);
  q.id = id.get<std::string>();
  const std::string named = fmt::format("question '{}'", q.id);
  q.question = field(qa, "question", json::value_t::string, path, named).get<std::string>();
  if (q.question.find_first_not_of(" \t\r\n") == std::string::npos) fail(path, named + ": the question is empty");
  q.context = context;
  if (qa.contains("is_impossible")) q.is_impossible = field(qa, "is_impossible", json::value_t::boolean, path, named).get<bool>();
  q.answers = read_answers(qa, "answers", context_cps, path, named);
  if (qa.contains("plausible_answers")) q.plausible_answers = read_answers(qa, "plausible_answers", context_cps, path, named);
  if (q.is_impossible && !q.answers.empty()) fail(path, named + ": is_impossible is true but it has answers");
  if (!q.is_impossible && q.answers.empty()) fail(path, named + ": no answers (and is_impossible is not true)");
  return q;
}

}  // namespace

std::vector<SquadQuestion> read_squad(const std::string& path) {
  const json root = parse_file(path);
  const json& data = field(root, "data", json::value_t::array, path, "the file");
  std::vector<SquadQuestion> out;
  std::set<std::string> ids;
  for (size_t a = 0; a < data.size(); ++a) {
    const json& paragraphs = field(data[a], "paragraphs", json::value_t::array, path, fmt::format("data[{}]", a));
    for (size_t p = 0; p < paragraphs.size(); ++p) {
      const std::string where = fmt::format("data[{}].paragraphs[{}]", a, p);
      auto context = std::make_shared<const std::string>(field(paragraphs[p], "context", json::value_t::string, path, where).get<std::string>());
      const std::vector<char32_t> cps = decode_utf8(*context, InvalidUtf8::Error, path + ": " + where + ".context");
      if (context->find_first_not_of(" \t\r\n") == std::string::npos) fail(path, where + ": the context is empty");
      const json& qas = field(paragraphs[p], "qas", json::value_t::array, path, where);
      for (size_t k = 0; k < qas.size(); ++k) {
        SquadQuestion q = read_question(qas[k], context, cps, path, fmt::format("{}.qas[{}]", where, k));
        if (!ids.insert(q.id).second) fail(path, fmt::format("question '{}': the id is repeated", q.id));
        out.push_back(std::move(q));
      }
    }
  }
  if (out.empty()) fail(path, "no questions");
  return out;
}

std::string code_point_slice(const std::string& text, size_t start, size_t end) {
  const std::vector<char32_t> cps = decode_utf8(text, InvalidUtf8::Replace);
  end = std::min(end, cps.size());
  start = std::min(start, end);
  return encode_utf8(std::u32string(cps.begin() + long(start), cps.begin() + long(end)));
}

namespace {

// The question without the whitespace on its left, as run_qa strips it (some SQuAD questions
// start with many spaces, which would waste the window).
std::string lstripped(const std::string& s) {
  const std::vector<char32_t> cps = decode_utf8(s, InvalidUtf8::Replace);
  size_t i = 0;
  while (i < cps.size() && is_whitespace(cps[i])) ++i;
  return encode_utf8(std::u32string(cps.begin() + long(i), cps.end()));
}

// run_qa's mapping of the answer's characters [start_char, end_char) to tokens of one window.
void map_answer(SquadFeature& f, const SquadQuestion& q) {
  if (q.answers.empty() || f.context_begin == f.context_end) return;  // [CLS]
  const auto& off = f.encoding.offsets;
  const size_t start_char = q.answers[0].start;
  const size_t end_char = start_char + decode_utf8(q.answers[0].text, InvalidUtf8::Replace).size();
  if (!(off[f.context_begin].first <= start_char && off[f.context_end - 1].second >= end_char)) return;  // not inside
  size_t s = f.context_begin;
  // run_qa walks on past the context here; an answer that starts in the window's last context
  // token would then start at [SEP] or padding, so the walk stops at the context's end
  while (s < f.context_end && off[s].first <= start_char) ++s;
  size_t e = f.context_end - 1;
  while (e > f.context_begin && off[e].second >= end_char) --e;
  if (off[e].second >= end_char) --e;  // the answer ends in the first context token
  f.start_position = int64_t(s - 1);
  f.end_position = int64_t(e + 1);
}

}  // namespace

std::vector<SquadFeature> squad_features(const std::vector<SquadQuestion>& questions, const Tokenizer& tokenizer,
                                         const SquadFeatureOptions& o) {
  std::vector<SquadFeature> out;
  const std::string* last_context = nullptr;
  std::vector<Token> context_tokens;
  for (size_t i = 0; i < questions.size(); ++i) {
    const SquadQuestion& q = questions[i];
    if (q.context.get() != last_context) {  // a paragraph's questions share its tokens
      context_tokens = tokenizer.tokenize(*q.context, fmt::format("context of question '{}'", q.id));
      last_context = q.context.get();
    }
    std::vector<Token> question = tokenizer.tokenize(lstripped(q.question), fmt::format("question '{}'", q.id));
    if (o.max_query_length > 0 && question.size() > o.max_query_length) question.resize(o.max_query_length);
    std::vector<PairWindow> windows;
    try {
      windows = tokenizer.encode_pair_windows(question, context_tokens, o.max_len, o.doc_stride);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("[squad] question '{}' (--max-seq-length {}, --doc-stride {}, --max-query-length {}): {}", q.id,
                                              o.max_len, o.doc_stride, o.max_query_length, e.what()));
    }
    for (auto& w : windows) {
      SquadFeature f;
      f.question = i;
      f.encoding = std::move(w.encoding);
      f.context_begin = w.second_begin;
      f.context_end = w.second_end;
      map_answer(f, q);
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace xg::text
