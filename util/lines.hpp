#pragma once
// Text read a line at a time, Windows line ends (CRLF) read as LF: one place for what every
// reader of user files (corpora, datasets, vocabularies, stdin) does.
#include <istream>
#include <string>

namespace xg {

// Drops one trailing '\r' (a line split from CRLF text by other means than getline_lf).
inline void drop_cr(std::string& line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
}

// std::getline, then drop_cr: a CRLF file reads as its LF twin.
inline std::istream& getline_lf(std::istream& in, std::string& line) {
  if (std::getline(in, line)) drop_cr(line);
  return in;
}

}  // namespace xg
