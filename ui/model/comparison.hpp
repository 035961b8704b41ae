#pragma once
// What A (the shown run, or any image of the session the user picked) can be compared with (B): the phantom's truth and the other kept runs whose
// images have its size, the reference chosen among them, and the metrics of the pair once computed.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/quality/metrics.hpp"
#include "run_history.hpp"

namespace larmor::model {

constexpr int kTruth = 0;        ///< the reference "run number" of the phantom's truth
constexpr int kNoReference = -1;

struct CompareCandidate {
  int run = kTruth;  ///< the run's number, or kTruth
  std::string label;
  std::shared_ptr<const CArray> image;
};

struct ComparisonState {
  int test = 0;                    ///< A: the chosen image's id (a run's number, a file's), else the shown run's (0: none)
  std::string testLabel;           ///< A's label
  std::shared_ptr<const CArray> testImage;  ///< A's image (null: nothing to compare)
  /// What A can be: every image of the session (this data's runs, then earlier data's runs and reference
  /// files, newest first); WorkstationModel::chooseTest picks one.
  std::vector<CompareCandidate> tests;
  int reference = kNoReference;    ///< B: a candidate's `run`
  std::vector<CompareCandidate> candidates;
  std::optional<quality::Metrics> metrics;  ///< of A against B, once the compare view computed them

  const CompareCandidate* chosen() const;
};

/// Two images can be compared voxel by voxel: the same number of voxels and the same in-plane matrix.
bool canCompare(const CArray& a, const CArray& b);

/// The references for `shown`: the truth first (when there is one of the right size), then the other
/// kept runs of the same size, newest first. Empty without a shown run.
std::vector<CompareCandidate> compareCandidates(const RunRecord* shown, const RunHistory& runs,
                                                const std::shared_ptr<const CArray>& truth,
                                                const std::string& truthLabel = "phantom truth");

/// The reference after the candidates changed: `current` while it is still offered, else the first
/// candidate, else kNoReference.
int keepReference(const std::vector<CompareCandidate>& candidates, int current);

}  // namespace larmor::model
