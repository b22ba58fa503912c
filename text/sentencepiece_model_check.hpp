#pragma once
// What libsentencepiece leaves unchecked when it loads a model file, checked before any text
// reaches it: the library validates the sizes of the normalizer's precompiled character map but
// not the double-array trie inside it, which it then walks with the input's bytes as indices (a
// corrupted trie reads outside the table: a crash on the first encode); and it accepts pieces that
// are not UTF-8 and scores that are NaN or infinite.
#include <cmath>
#include <string>
#include <string_view>

namespace xg::text {

// `serialized`: the model file's bytes (a ModelProto), checked before libsentencepiece loads them.
// Throws std::runtime_error naming `where` and what is wrong when a precompiled character map
// holds a trie transition or a replacement outside its tables (check_sentencepiece_charsmaps), or
// a piece is empty or holds a NUL byte (the library's trie builder would end the process) or is not
// UTF-8.
void check_sentencepiece_model(std::string_view serialized, const std::string& where);

// The normalizer's and the denormalizer's precompiled character maps alone.
void check_sentencepiece_charsmaps(std::string_view serialized, const std::string& where);

// Throws std::runtime_error naming `where` and the piece when `score` is not finite.
void check_sentencepiece_score(int id, std::string_view piece, float score, const std::string& where);

}  // namespace xg::text
