#pragma once
// Siemens twix raw data (.dat): VB (syngo MR B17/B19, one measurement) and VD/VE (D11, E11, XA: a
// multi-raid file of several measurements, of which the last, the imaging scan, is read). docs/twix.md
// says what is read and how it maps to the Dataset; engine/src/io/twix_format.hpp has the byte layout.
//
// Cartesian (no trajectory given): k-space [readout, pe1, pe2, coils, slices] from the scans' line,
// partition and slice counters; readouts of a line that was acquired more than once (averages, and
// nothing else) are averaged; echoes, phases, repetitions and sets are frames (io/series.hpp), read one
// at a time (TwixOptions::frame). Lines are placed with
// the scan headers' k-space centre (KSpaceCentreLineNo at pe1 = encoded/2) in the protocol's matrix
// (sKSpace.lPhaseEncodingLines, lPartitions for 3D); when the protocol's matrix cannot hold the
// counters (Pulseq and other sequences whose protocol is a placeholder) the counters are taken as the
// indices themselves. Noise-adjust scans are kept apart (TwixRead::noise), navigator, phase-correction,
// feedback and dummy scans are skipped; PATREFSCAN lines are calibration lines (used as k-space only
// where no imaging readout of that line exists), PATREFANDIMASCAN lines imaging and calibration.
//
// Non-Cartesian (a trajectory given, twix does not store one): every imaging readout is a profile,
// profile index = its line counter, k-space [readout, profiles, 1, coils, slices].
#include <cstdint>
#include <string>
#include <vector>

#include "larmor/data/dataset.hpp"
#include "larmor/io/series.hpp"

namespace larmor::io {

/// What the file's headers say, for `larmor-cli info` and the tests.
struct TwixSummary {
  std::string format;              ///< "VB" or "VD/VE"
  std::uint32_t measurements = 1;  ///< in the file; the last one is read
  std::uint64_t scans = 0;         ///< readouts of the measurement (without sync data and ACQEND)
  std::uint64_t imagingScans = 0, referenceScans = 0, noiseScans = 0, skippedScans = 0, syncScans = 0;
  bool acqEnd = false;  ///< the measurement ends with an ACQEND scan (else it was cut short)
  int channels = 0, samples = 0;  ///< of the imaging scans
  int echoes = 1, phases = 1, repetitions = 1, sets = 1, averages = 1;  ///< counter ranges (max + 1)
  std::string sequence, protocol, software, model;
  std::vector<std::string> buffers;  ///< header text buffers ("Config", "Meas", "MeasYaps", ...)
  /// The protocol's partial Fourier (sKSpace.ucPhase/Slice/ReadoutPartialFourier: 1 = 4/8, 2 = 5/8,
  /// 4 = 6/8, 8 = 7/8, 16 = off) as fractions; 1 where off or absent. The reconstruction goes by the data
  /// (docs/data.md); a claim the data do not show is a warning.
  double phasePartialFourier = 1, slicePartialFourier = 1, readoutPartialFourier = 1;
};

struct TwixOptions {
  /// Non-Cartesian: the trajectory [3, readout, profiles] (cycles per FOV) and its name for messages;
  /// nullptr reads Cartesian k-space.
  const RArray* trajectory = nullptr;
  std::string trajectoryName;
  long matrix[3] = {0, 0, 0};  ///< non-Cartesian recon matrix; 0 = implied by the trajectory
  int repetition = -1;         ///< >= 0 keeps only that repetition's readouts
  /// The frame (Eco, Phs, Rep, Set counters) to read; nullptr: the file must hold one frame (or
  /// `repetition` selects one).
  const FrameKey* frame = nullptr;
  /// A measurement without ACQEND (cut short: a truncated file, an aborted scan) is an Error; with this
  /// (a description, `info`) it is read with a warning instead.
  bool allowCutShort = false;
};

struct TwixRead {
  Dataset dataset;      ///< validated
  CArray noise;         ///< noise-adjust readouts [samples, scans, coils]; empty when there are none
  TwixSummary summary;
  index_t skipped = 0;  ///< navigator, phase-correction, feedback and dummy readouts skipped
  /// The frame's trigger time: the mean PMU time stamp (mdh ulPMUTimeStamp, 2.5 ms ticks) of its
  /// imaging readouts in ms; NaN when all of them are 0 or any exceeds 10 s (4000 ticks: the free-running
  /// PMU clock of an ungated scan; docs/data.md).
  double triggerTimeMs = 0;
};

/// Reads a twix file. Throws Error (one line naming the file and what is wrong).
TwixRead readTwix(const std::string& path, const TwixOptions& options = {});

/// The frames (Eco, Phs, Rep, Set of the imaging readouts) of a file, in FrameKey order.
std::vector<FrameKey> twixFrames(const std::string& path);

/// The protocol's echo time alTE[contrast] in ms; NaN when absent.
double twixEchoTimeMs(const std::string& path, int contrast);

/// The headers only (no samples are read): for `info`. Throws Error like readTwix.
TwixSummary inspectTwix(const std::string& path);

/// "key: value" lines describing a summary (info's twix section).
std::vector<std::string> describeTwix(const TwixSummary& s);

/// A 2D radial trajectory [3, readout, spokes]: spoke p at angle p * arc / spokes (arc = pi or 2 pi),
/// sample n at k = (n - readout/2) (cos, sin) cycles per FOV (the echo at sample readout/2).
RArray uniformRadialTrajectory(index_t readout, index_t spokes, double arc);

/// "radial:180" -> pi, "radial:360" -> 2 pi; 0 when `name` is not such a keyword (but a file).
double radialTrajectoryKeyword(const std::string& name);

}  // namespace larmor::io
