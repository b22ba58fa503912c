#pragma once
// Entity-level scores of tag sequences, equal to seqeval 1.2.2 (checked against its goldens,
// tools/gen_seqeval_goldens.py): an entity counts as found when its type, start and end all match.
// Default mode reads entities as seqeval's get_entities does (lenient: an I- after O opens an
// entity, a type change closes one; B-, I-, E-, S- tags); strict IOB2 (seqeval mode="strict",
// scheme=IOB2) takes only B-X followed by I-X as an entity, and ignores an I- that does not follow
// its B-. Tags are "O" or PREFIX-TYPE; any other throws std::invalid_argument naming the sentence,
// position and tag.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace xg::metrics {

using TagSequences = std::vector<std::vector<std::string>>;

enum class EntityMode { Default, StrictIOB2 };

struct Entity {
  std::string type;
  size_t sentence = 0, start = 0, end = 0;  // words [start, end) of sentence
  bool operator<(const Entity& o) const;
  bool operator==(const Entity& o) const;
};

// The entities of each sequence, in order.
std::vector<Entity> extract_entities(const TagSequences& tags, EntityMode mode = EntityMode::Default);

struct EntityScores {
  double precision = 0, recall = 0, f1 = 0;  // 0 where undefined (seqeval's zero_division default)
  size_t support = 0;                         // true entities
};

// seqeval's classification_report: per type, and the micro, macro and weighted averages over the
// types (macro is NaN when there is no entity type at all, as numpy's mean of nothing).
struct EntityReport {
  std::map<std::string, EntityScores> types;
  EntityScores micro, macro, weighted;
};

// Scores `predicted` against `truth`; both must hold the same number of sequences of the same
// lengths (std::invalid_argument "[seqeval] ..." otherwise).
EntityReport entity_report(const TagSequences& truth, const TagSequences& predicted, EntityMode mode = EntityMode::Default);

}  // namespace xg::metrics
