#include "metrics/entity_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>
#include <stdexcept>
#include <tuple>

#include "text/conll_data.hpp"

namespace xg::metrics {

bool Entity::operator<(const Entity& o) const {
  return std::tie(type, sentence, start, end) < std::tie(o.type, o.sentence, o.start, o.end);
}
bool Entity::operator==(const Entity& o) const {
  return std::tie(type, sentence, start, end) == std::tie(o.type, o.sentence, o.start, o.end);
}

namespace {

struct Tag {
  char prefix;       // O, B, I, E, S
  std::string type;  // "" for O
};

Tag parse(const std::string& tag, size_t sentence, size_t position, EntityMode mode) {
  std::string why;
  if (!text::valid_tag(tag, &why))
    throw std::invalid_argument(fmt::format("[seqeval] sentence {}, position {}: tag '{}': {}", sentence, position, tag, why));
  if (mode == EntityMode::StrictIOB2 && (tag[0] == 'E' || tag[0] == 'S'))
    throw std::invalid_argument(fmt::format("[seqeval] sentence {}, position {}: tag '{}': strict IOB2 has no {}- tags", sentence,
                                            position, tag, tag[0]));
  return tag == "O" ? Tag{'O', ""} : Tag{tag[0], tag.substr(2)};
}

// seqeval's end_of_chunk and start_of_chunk: whether a chunk ends before / starts at `tag`.
bool ends_before(const Tag& prev, const Tag& tag) {
  const char p = prev.prefix, t = tag.prefix;
  if (p == 'E' || p == 'S') return true;
  if ((p == 'B' || p == 'I') && (t == 'B' || t == 'S' || t == 'O')) return true;
  return p != 'O' && prev.type != tag.type;
}
bool starts_at(const Tag& prev, const Tag& tag) {
  const char p = prev.prefix, t = tag.prefix;
  if (t == 'B' || t == 'S') return true;
  if ((p == 'E' || p == 'S' || p == 'O') && (t == 'E' || t == 'I')) return true;
  return t != 'O' && prev.type != tag.type;
}

void default_entities(const std::vector<Tag>& tags, size_t sentence, std::vector<Entity>& out) {
  Tag prev{'O', ""};
  size_t begin = 0;
  for (size_t i = 0; i <= tags.size(); ++i) {  // one O past the end closes the last chunk
    const Tag tag = i < tags.size() ? tags[i] : Tag{'O', ""};
    if (ends_before(prev, tag)) out.push_back({prev.type, sentence, begin, i});
    if (starts_at(prev, tag)) begin = i;
    prev = tag;
  }
}

// seqeval.scheme.IOB2 via Tokens.entities: B-X opens, I-X of the same type continues.
void strict_iob2_entities(const std::vector<Tag>& tags, size_t sentence, std::vector<Entity>& out) {
  for (size_t i = 0; i < tags.size();) {
    if (tags[i].prefix != 'B') {
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < tags.size() && tags[end].prefix == 'I' && tags[end].type == tags[i].type) ++end;
    out.push_back({tags[i].type, sentence, i, end});
    i = end;
  }
}

EntityScores scores(double tp, double predicted, double actual) {
  EntityScores s;
  s.precision = predicted == 0 ? 0.0 : tp / predicted;
  s.recall = actual == 0 ? 0.0 : tp / actual;
  const double denominator = s.precision + s.recall;
  s.f1 = denominator == 0 ? 0.0 : 2 * s.precision * s.recall / denominator;
  s.support = size_t(actual);
  return s;
}

}  // namespace

std::vector<Entity> extract_entities(const TagSequences& tags, EntityMode mode) {
  std::vector<Entity> out;
  for (size_t s = 0; s < tags.size(); ++s) {
    std::vector<Tag> parsed;
    for (size_t i = 0; i < tags[s].size(); ++i) parsed.push_back(parse(tags[s][i], s, i, mode));
    if (mode == EntityMode::Default) default_entities(parsed, s, out);
    else strict_iob2_entities(parsed, s, out);
  }
  return out;
}

EntityReport entity_report(const TagSequences& truth, const TagSequences& predicted, EntityMode mode) {
  if (truth.size() != predicted.size())
    throw std::invalid_argument(fmt::format("[seqeval] {} true sequences but {} predicted", truth.size(), predicted.size()));
  for (size_t s = 0; s < truth.size(); ++s)
    if (truth[s].size() != predicted[s].size())
      throw std::invalid_argument(
          fmt::format("[seqeval] sentence {}: {} true tags but {} predicted", s, truth[s].size(), predicted[s].size()));
  const std::vector<Entity> t = extract_entities(truth, mode), p = extract_entities(predicted, mode);
  const std::set<Entity> true_set(t.begin(), t.end()), predicted_set(p.begin(), p.end());
  struct Counts {
    double tp = 0, predicted = 0, actual = 0;
  };
  std::map<std::string, Counts> counts;
  for (const Entity& e : true_set) counts[e.type].actual += 1;
  for (const Entity& e : predicted_set) {
    counts[e.type].predicted += 1;
    counts[e.type].tp += true_set.count(e);
  }
  EntityReport r;
  Counts total;
  double macro_p = 0, macro_r = 0, macro_f = 0, weighted_p = 0, weighted_r = 0, weighted_f = 0;
  for (const auto& [type, c] : counts) {
    const EntityScores s = scores(c.tp, c.predicted, c.actual);
    r.types[type] = s;
    total.tp += c.tp;
    total.predicted += c.predicted;
    total.actual += c.actual;
    macro_p += s.precision, macro_r += s.recall, macro_f += s.f1;
    weighted_p += s.precision * c.actual, weighted_r += s.recall * c.actual, weighted_f += s.f1 * c.actual;
  }
  r.micro = scores(total.tp, total.predicted, total.actual);
  const double n = double(counts.size());
  const double nan = std::numeric_limits<double>::quiet_NaN();
  r.macro = {n == 0 ? nan : macro_p / n, n == 0 ? nan : macro_r / n, n == 0 ? nan : macro_f / n, r.micro.support};
  // seqeval: with no true entity the weighted average is 0 (its zero_division value) throughout
  const double w = total.actual;
  r.weighted = {w == 0 ? 0.0 : weighted_p / w, w == 0 ? 0.0 : weighted_r / w, w == 0 ? 0.0 : weighted_f / w, r.micro.support};
  return r;
}

}  // namespace xg::metrics
