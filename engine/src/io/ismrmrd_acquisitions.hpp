#pragma once
// ISMRMRD acquisitions into a Dataset (internal to the engine's ISMRMRD reader): Cartesian lines placed
// and averaged into k-space, non-Cartesian profiles with their trajectory, the slice geometry.
#include <map>
#include <string>
#include <vector>

#include "ismrmrd_header.hpp"
#include "ismrmrd_records.hpp"
#include "larmor/data/dataset.hpp"
#include "larmor/io/series.hpp"
#include "larmor/util/progress.hpp"

namespace larmor::io::detail {

struct AcquisitionFrames {
  /// One Dataset per frame that the selection keeps: `base`'s source and header with the coils, slices,
  /// geometry, calibration lines and (Cartesian) the acceleration of the frame's own mask; kspace,
  /// sampled, calibration, trajectory; the frame's acquisitions; the noise scans (count and samples,
  /// shared by every frame); warnings (acquisitions skipped).
  std::map<FrameKey, Dataset> frames;
  std::vector<AcquisitionInfo> all;  ///< every acquisition as read
  /// Index values of the imaging acquisitions of the whole file (before selection), ascending.
  std::vector<int> contrasts, phases, repetitions, sets;
  /// Per frame: the trigger time (ms) = the mean physiology_time_stamp[0] of its imaging acquisitions x
  /// 2.5 ms; absent for frames whose acquisitions all carry 0 (no physiology: unknown).
  std::map<FrameKey, double> triggerTimeMs;
};

/// Reads /group/data of `path` into frames (io/series.hpp). Noise scans are collected, navigator,
/// phase-correction, feedback and dummy scans skipped (counted in a warning), separate reference scans
/// (parallel_calibration without parallel_calibration_and_imaging) made calibration lines of the frame
/// of their own key, or, for a frame without any of its own, of every frame. Every index is checked against the
/// header's encoding limits.
/// keepSamples = false (Cartesian only; io::LoadOptions::structureOnly): every acquisition is read and
/// checked, the sampling mask, calibration lines and acquisitions kept, the k-space left empty.
AcquisitionFrames readAcquisitions(const std::string& path, const std::string& group, const EncodingFacts& facts,
                                   const FrameSelection& select, const Progress& progress, const Dataset& base,
                                   bool keepSamples = true);

/// The same pass over acquisitions held in memory (the streaming server's slices): records[i].data and .traj
/// point at the samples; `label` stands for the file name in errors. Every frame is kept.
AcquisitionFrames assembleAcquisitions(const std::vector<AcqRecord>& records, const std::string& label,
                                       const EncodingFacts& facts, const Dataset& base);

}  // namespace larmor::io::detail
