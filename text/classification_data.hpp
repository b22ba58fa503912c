#pragma once
// Labelled text for classification and regression: TSV (tabs, no quoting, as GLUE ships it),
// CSV (RFC 4180: quoted fields with "" for a quote and embedded newlines) and JSONL (an object per
// line). Columns by name (the header row's names, the JSON keys) or by number (1-based, for files
// without a header). A TSV with a header row `label<TAB>text` (and `text_b` for pairs) needs no
// column options. A text may join several columns ("word+sentence1": their fields with a space
// between). Files without labels (a benchmark's test file) name no label column and usually an id
// column, under which predictions are written. A UTF-8 BOM and CRLF line ends are accepted; a row with another number of fields
// than the header, an empty label or an unknown one are errors naming the file, line and field.
#include <cstdint>
#include <string>
#include <vector>

namespace xg::text {

struct TextExample {
  std::string text_a, text_b;  // text_b empty for single sentences
  // Read from a text_b column or key, even an empty one: encoded as a pair ([CLS] a [SEP] [SEP]
  // for an empty one, as transformers' run_glue encodes its batches).
  bool pair = false;
  std::string label;           // as written ("positive", "1", "3.8", "true"); empty when the file has none
  std::string id;              // the id column's value ("17"), when one is named
  size_t line = 0;             // where the record starts (1-based), for errors
};

struct TextColumns {
  // A header name, or a 1-based column number ("2"); JSONL takes names only. The texts may join
  // several columns with '+'. An empty label: the file has no labels.
  std::string label = "label";
  std::string text = "text";
  // The second text of pairs; empty: the column "text_b" when the header has one, else none.
  std::string text_b;
  // With numbered columns only: whether the first row is a header to skip. Named columns always
  // read the first row as the header.
  bool skip_header = false;
  // The example's id (GLUE's "index", SuperGLUE's "idx"); empty: none.
  std::string id;
};

// Reads every example; the format from the extension (.tsv, .csv, .jsonl or .json for JSON Lines).
// Throws std::invalid_argument "[data] path:line: ..." naming the field.
std::vector<TextExample> read_text_examples(const std::string& path, const TextColumns& columns = {});

// The distinct labels in a stable order: numerically when all are integers, else by their text
// (as transformers' run_glue sorts them).
// Two labels that differ only in spelling ("1" and "01", "1.0" or " 1"; "true" and "True") are
// refused naming both, their lines and `path`: they would silently become two classes.
std::vector<std::string> label_list(const std::vector<TextExample>& examples, const std::string& path = "labels");

// Each example's label id in `id2label`; an unknown label throws naming the file, line and value.
std::vector<int64_t> label_ids(const std::vector<TextExample>& examples, const std::vector<std::string>& id2label,
                               const std::string& path);
// Each example's label as a number (regression); a label that is not a number throws likewise.
std::vector<double> label_values(const std::vector<TextExample>& examples, const std::string& path);

}  // namespace xg::text
