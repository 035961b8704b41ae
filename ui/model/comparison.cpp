// Which runs can be compared, and which reference stays chosen (comparison.hpp).
#include "comparison.hpp"

#include <algorithm>

namespace larmor::model {

const CompareCandidate* ComparisonState::chosen() const {
  for (const auto& c : candidates)
    if (c.run == reference) return &c;
  return nullptr;
}

bool canCompare(const CArray& a, const CArray& b) {
  return a.size() > 0 && a.size() == b.size() && a.shape()[0] == b.shape()[0] && a.shape()[1] == b.shape()[1];
}

std::vector<CompareCandidate> compareCandidates(const RunRecord* shown, const RunHistory& runs,
                                                const std::shared_ptr<const CArray>& truth, const std::string& truthLabel) {
  std::vector<CompareCandidate> out;
  if (!shown || !shown->result) return out;
  const CArray& a = shown->result->image;
  if (truth && canCompare(a, *truth)) out.push_back({kTruth, truthLabel, truth});
  for (const RunRecord& r : runs.runs())
    if (r.number != shown->number && r.result && canCompare(a, r.result->image))
      out.push_back({r.number, r.label, r.image()});
  return out;
}

int keepReference(const std::vector<CompareCandidate>& candidates, int current) {
  if (std::any_of(candidates.begin(), candidates.end(), [&](const auto& c) { return c.run == current; }))
    return current;
  return candidates.empty() ? kNoReference : candidates.front().run;
}

}  // namespace larmor::model
