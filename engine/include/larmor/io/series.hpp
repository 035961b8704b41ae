#pragma once
// A raw-data file as a series of frames (series, not merges). A scanner keeps apart what a
// Dataset cannot hold in one k-space: ISMRMRD's contrast (echo), phase (cardiac), repetition (dynamic)
// and set indices, twix's Eco/Phs/Rep/Set counters, BART's TE (5) and TIME (10) dimensions. Each
// combination that the file holds is one frame, reconstructed on its own; a frame is a Dataset, so the
// reconstruction never sees the series. Averages are averaged within a frame; slices stay the Dataset's
// slice dimension. docs/data.md says what each format gives.
//
// Frame order (the series' vector, NIfTI's 4th dimension, DICOM's temporal positions): repetition runs
// fastest, then contrast, then phase, then set (FrameKey's operator<).
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "larmor/data/dataset.hpp"

namespace larmor::io {

struct FrameKey {
  int contrast = 0, phase = 0, repetition = 0, set = 0;
  bool operator==(const FrameKey&) const = default;
  /// Set, then phase, then contrast, then repetition (repetition fastest).
  bool operator<(const FrameKey& o) const;
  std::string str() const;  ///< "contrast 1, repetition 3" (the indices that are not 0; "frame 0" when none)
};

/// Which frames to read: each index >= 0 keeps only that value, -1 keeps all.
struct FrameSelection {
  int contrast = -1, phase = -1, repetition = -1, set = -1;
  bool keeps(const FrameKey& k) const {
    return (contrast < 0 || k.contrast == contrast) && (phase < 0 || k.phase == phase) &&
           (repetition < 0 || k.repetition == repetition) && (set < 0 || k.set == set);
  }
  bool selectsAll() const { return contrast < 0 && phase < 0 && repetition < 0 && set < 0; }
  std::string str() const;  ///< "repetition 5" / "contrast 1, set 0" ("" when all)
};

struct Series {
  std::vector<Dataset> frames;   ///< validated, one per key, in FrameKey order
  std::vector<FrameKey> keys;    ///< the frames' indices
  /// Distinct index values the file holds (before selection), ascending: what `info` lists.
  std::vector<int> contrasts{0}, phases{0}, repetitions{0}, sets{0};
  /// Per frame, in ms; NaN where the file does not say (ISMRMRD sequenceParameters TE by contrast,
  /// twix alTE[]).
  std::vector<double> echoTimeMs, triggerTimeMs;
  /// Every acquisition of the file, as read (a frame holds only its own).
  std::vector<AcquisitionInfo> acquisitions;
  /// Structure-only reads (io::LoadOptions::structureOnly): the shape [x, y, z, 1, slices] of the
  /// embedded reference image, whose values are not read (the frames' `reference` stays empty).
  std::optional<Shape> referenceShape;

  /// The frame dims with more than one value, e.g. "2 contrasts x 4 repetitions" ("1 frame" when none).
  std::string describeDims() const;
  /// Index of `k` in keys, or -1.
  int find(const FrameKey& k) const;
};

/// "--repetition N, --contrast N": the CLI flags that select among the frame dims `s` has.
std::string frameSelectionHint(const Series& s);

/// The one frame of `s`; several are refused with an Error naming `path` that says how to select one
/// (frames are never merged).
Dataset singleFrame(Series s, const std::string& path);

/// NaN: a time the file does not give.
inline double unknownTime() { return std::nan(""); }

}  // namespace larmor::io
