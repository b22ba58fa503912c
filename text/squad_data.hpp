#pragma once
// Extractive question answering data: SQuAD v1.1 and v2.0 JSON files
// (data[].paragraphs[].{context, qas[].{id, question, answers[{text, answer_start}], is_impossible,
// plausible_answers}]}), and the model's features as transformers' run_qa.py prepares them: the
// question, then the context cut into windows of max_len tokens that overlap by doc_stride
// tokens, the answer mapped to its first and last token through the tokenizer's offsets, and an
// answer outside a window (or no answer, v2.0) pointed at the first token ([CLS], <s>).
// Character positions are code points, as Python counts answer_start.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer.hpp"

namespace xg::text {

struct SquadAnswer {
  std::string text;
  size_t start = 0;  // answer_start: code points into the context
};

struct SquadQuestion {
  std::string id, question;
  std::shared_ptr<const std::string> context;  // shared by the questions of a paragraph
  std::vector<SquadAnswer> answers;            // empty for an unanswerable question (v2.0)
  std::vector<SquadAnswer> plausible_answers;  // v2.0's answers an unanswerable question tempts
  bool is_impossible = false;
};

// Every question of a SQuAD file, in file order. Throws std::invalid_argument
// "[squad] path: ..." naming the question id and field: not JSON, a missing or mistyped field, an
// answer_start that does not point at the answer's text, an answerable question without answers
// (or an unanswerable one with some), a repeated id, no questions at all.
std::vector<SquadQuestion> read_squad(const std::string& path);

struct SquadFeatureOptions {
  size_t max_len = 384;           // tokens per window, special tokens included
  size_t doc_stride = 128;        // tokens shared by consecutive windows of a context
  size_t max_query_length = 64;   // question tokens kept (longer questions are cut)
};

// One window of one question's context.
struct SquadFeature {
  size_t question = 0;            // index into the questions
  Encoding encoding;              // ids, type ids, offsets (code points into the context)
  size_t context_begin = 0, context_end = 0;  // token positions of the context in the window
  // The answer's (answers[0]'s) first and last token; 0 (the first token) for no answer or one
  // that is not wholly inside this window.
  int64_t start_position = 0, end_position = 0;
};

// The features of every question, in question order (a question's windows in context order).
// Throws naming the question when its window leaves no room for the context or doc_stride is not
// smaller than that room.
std::vector<SquadFeature> squad_features(const std::vector<SquadQuestion>& questions, const Tokenizer& tokenizer,
                                         const SquadFeatureOptions& options);

// The code points [start, end) of `text`, as UTF-8 (text[start:end] in Python).
std::string code_point_slice(const std::string& text, size_t start, size_t end);

}  // namespace xg::text
