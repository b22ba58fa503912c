#pragma once
// The bundled data files the programs default to (data/bert-base-uncased-vocab.txt, the default
// corpus, ...), found wherever a program runs from, not only from the source tree's root.
#include <string>

namespace xg {

// `relative` (a path under the source tree, "data/...") as given when it exists from the working
// directory; else the same path beside the running program's tree: EXE_DIR/../../relative (a
// build's bin/ inside the source tree) or EXE_DIR/../share/xgrad/relative (an installation). The
// first that exists, else `relative` unchanged (its error then names it).
std::string bundled_data_path(const std::string& relative);

}  // namespace xg
