#pragma once
// The reconstructions of the current data, newest first: each with its number, its label ("run 3: cg,
// fd λ 0.01") and the session settings that produced it. Numbers keep counting across data sets, so a
// label names one run in the log of the whole session.
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "larmor/recon/recon.hpp"
#include "session_settings.hpp"

namespace larmor::model {

struct RunRecord {
  int number = 0;
  std::string description;  ///< "cg, fd λ 0.01"
  std::string label;        ///< "run 3: cg, fd λ 0.01"
  SessionSettings settings;
  std::shared_ptr<const recon::ReconResult> result;
  /// A series run (recon::runFrames over every frame of a series at once, e.g. the joint reconstruction of
  /// --method cs): each frame's result, `result` being the current frame's (RunHistory::selectFrame). Empty
  /// for a run of one frame.
  std::vector<std::shared_ptr<const recon::ReconResult>> frames;
  bool isSeries() const { return !frames.empty(); }

  /// The combined image, sharing ownership with the result.
  std::shared_ptr<const CArray> image() const;
  /// "run 3: cg — 12.3 ms on cpu  |  1.20 % error, PSNR 30.00 dB, SSIM 0.9000" (status bar, log).
  std::string summary() const;
};

/// "FFT", "GRAPPA R4", "CG, fd λ 0.01": the method as the GUI names it, GRAPPA's acceleration (from the
/// data's header when given) and, for the iterative methods, the regularizer and λ.
std::string describeSettings(const recon::ReconSettings& settings, const Header* header = nullptr);

/// "4.20 ms", "164 ms", "1.41 s", "39.7 s", "2 min 05 s": a duration as people read it (never "1.41e+03").
std::string formatDuration(double ms);

class RunHistory {
 public:
  static constexpr std::size_t kKept = 8;  ///< older runs are dropped (their images are large)

  /// Numbers, labels and keeps the run; returns it (valid until the next add or clear).
  const RunRecord& add(std::shared_ptr<const recon::ReconResult> result, std::string description,
                       SessionSettings settings);
  /// A series run: `frames` one result per frame, `current` the frame shown now (its result is `result`).
  const RunRecord& addSeries(std::vector<std::shared_ptr<const recon::ReconResult>> frames, std::size_t current,
                             std::string description, SessionSettings settings);
  /// A live run's images again, grown (the live view's scan): `frames` one result per frame (one: a run of one
  /// frame), `current` the frame shown. Null when no kept run has that number.
  const RunRecord* update(int number, std::vector<std::shared_ptr<const recon::ReconResult>> frames, std::size_t current);
  /// Points every series run's `result` at frame `f` (another frame became current).
  void selectFrame(std::size_t f);
  /// Forgets the runs (new data); the numbering goes on.
  void clear() { runs_.clear(); }
  const std::deque<RunRecord>& runs() const { return runs_; }
  std::size_t size() const { return runs_.size(); }
  bool empty() const { return runs_.empty(); }
  /// Null when no kept run has that number.
  const RunRecord* find(int number) const;
  const RunRecord* newest() const { return runs_.empty() ? nullptr : &runs_.front(); }

 private:
  std::deque<RunRecord> runs_;
  int counter_ = 0;
};

/// The runs the Side by side tab shows (their numbers, left to right): those of `picked` still kept, in the
/// order given, at most `max`; when none of them is kept, the newest `max` runs, oldest first.
std::vector<int> sideBySideRuns(const RunHistory& runs, const std::vector<int>& picked, std::size_t max = 4);

}  // namespace larmor::model
