#include "inference/qa.hpp"

#include <algorithm>
#include <stdexcept>

namespace xg::inference {

models::Sequence feature_sequence(const text::SquadFeature& f) {
  return {std::vector<int64_t>(f.encoding.ids.begin(), f.encoding.ids.end()),
          std::vector<int64_t>(f.encoding.type_ids.begin(), f.encoding.type_ids.end())};
}

std::vector<text::SpanLogits> span_logits(models::PretrainedModel& model, const std::vector<text::SquadFeature>& features,
                                          int64_t pad_id, size_t batch) {
  if (batch == 0) throw std::invalid_argument("[qa] the batch size must be positive");
  std::vector<text::SpanLogits> out;
  for (size_t start = 0; start < features.size(); start += batch) {
    std::vector<models::Sequence> seqs;
    for (size_t i = start; i < std::min(features.size(), start + batch); ++i) seqs.push_back(feature_sequence(features[i]));
    const models::ModelInputs in = models::pad_sequences(seqs, pad_id);
    const auto outputs = model.forward_named(in);
    const std::vector<float> s = outputs.at("start_logits").to_vector(), e = outputs.at("end_logits").to_vector();
    const size_t T = in.input_ids.size(1);
    for (size_t b = 0; b < seqs.size(); ++b) {
      const size_t n = seqs[b].ids.size();  // the window's own tokens; padding is not a candidate
      out.push_back({std::vector<float>(s.begin() + long(b * T), s.begin() + long(b * T + n)),
                     std::vector<float>(e.begin() + long(b * T), e.begin() + long(b * T + n))});
    }
  }
  return out;
}

}  // namespace xg::inference
