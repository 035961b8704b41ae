#pragma once
// The Dataset: what a file or the simulator gives the reconstruction. Array layouts (dimension 0 fastest):
//   kspace      [readout, pe1, pe2, coils, slices]   Cartesian: zeros where not sampled
//               [readout, profiles, 1, coils, slices] non-Cartesian (profiles = spokes/interleaves)
//   sampled     [pe1, pe2, slices]  1 where a Cartesian line was acquired (imaging or calibration)
//   calibration [pe1, pe2, slices]  1 where a line is an ACS (calibration) line
//   trajectory  [3, readout, profiles] in cycles per FOV (BART's unit), non-Cartesian only
//   reference   [x, y, z, 1, slices] complex truth image (phantom), optional
//   coilMaps    [x, y, z, coils, slices] true coil sensitivities (simulated data), optional
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "larmor/array/array.hpp"

namespace larmor {

enum class TrajectoryKind { Cartesian, Radial, GoldenAngle, Spiral, StackOfSpirals, Radial3D, Other };
std::string toString(TrajectoryKind k);
TrajectoryKind trajectoryKindFromString(const std::string& s);  // throws Error for unknown names

/// Patient position/orientation of the slice group (ISMRMRD's AcquisitionHeader geometry), in mm
/// and unit vectors in the patient coordinate system (LPS).
struct Geometry {
  bool present = false;  ///< false: defaults (identity orientation, centred) were used
  float position[3] = {0, 0, 0};
  float readDir[3] = {1, 0, 0};
  float phaseDir[3] = {0, 1, 0};
  float sliceDir[3] = {0, 0, 1};
  std::vector<float> slicePositions;  ///< position along sliceDir of each slice (mm), size = slices
};

struct Header {
  // Matrix sizes: `encoded` is what was sampled (readout oversampled), `recon` what is shown.
  index_t encoded[3] = {0, 0, 1};
  index_t recon[3] = {0, 0, 1};
  float encodedFovMm[3] = {256, 256, 5};
  float reconFovMm[3] = {256, 256, 5};
  index_t coils = 0;
  index_t slices = 1;
  TrajectoryKind trajectory = TrajectoryKind::Cartesian;
  // Cartesian: the acceleration and calibration the file states (or the simulator used); 1/0 when unknown.
  int accelerationPe1 = 1;
  int accelerationPe2 = 1;
  int calibrationLines = 0;
  /// Partial Fourier / asymmetric echo: the fraction of k-space acquired along readout, pe1, pe2 (1 = all),
  /// from the data (data/partial_fourier_region.hpp); the readers fill it, the reconstruction detects it again.
  float acquiredFraction[3] = {1, 1, 1};
  float systemFieldT = 0;  ///< 0 when unknown
  std::string patientName, patientId, studyDescription, protocolName;  ///< empty when unknown
  /// DICOM forms (DA "YYYYMMDD", TM "HHMMSS", sex "M"/"F"/"O"), empty when unknown or malformed.
  std::string patientBirthDate, patientSex, studyDate, studyTime;
  std::string deviceDescription;  ///< scanner or "Larmor simulator"
  Geometry geometry;
  bool is3D() const { return encoded[2] > 1 || trajectory == TrajectoryKind::Radial3D ||
                             trajectory == TrajectoryKind::StackOfSpirals; }
  float readoutOversampling() const {
    return recon[0] > 0 ? static_cast<float>(encoded[0]) / static_cast<float>(recon[0]) : 1.f;
  }
};

/// One acquisition's header, for display ("info", the GUI's acquisition table).
struct AcquisitionInfo {
  std::uint32_t scanCounter = 0;
  std::uint64_t flags = 0;  ///< ISMRMRD flag bits (bit n-1 for flag n)
  std::uint16_t samples = 0, channels = 0, trajectoryDims = 0;
  std::uint16_t pe1 = 0, pe2 = 0, slice = 0, repetition = 0;
  std::uint16_t contrast = 0, phase = 0, set = 0, average = 0;  ///< the other frame indices (io::FrameKey)
};
/// "first_in_slice|parallel_calibration" style names of the set ISMRMRD flags.
std::string describeAcquisitionFlags(std::uint64_t flags);

struct Dataset {
  std::string source;  ///< file it came from, or "simulated"
  Header header;
  CArray kspace;
  Array<std::uint8_t> sampled;
  Array<std::uint8_t> calibration;
  RArray trajectory;
  std::optional<CArray> reference;
  std::optional<CArray> coilMaps;
  std::vector<AcquisitionInfo> acquisitions;  ///< as read (empty for simulated data)
  index_t noiseScans = 0;                      ///< noise-measurement acquisitions found (not in kspace)
  std::optional<CArray> noise;  ///< noise-scan samples [samples_total, coils], for pre-whitening (recon/noise.hpp)
  /// What the loader dropped and the reconstruction can do without (a damaged embedded reference): one
  /// line each, shown as warnings.
  std::vector<std::string> warnings;
  /// Checks the arrays against the header: sizes, coil counts, finite samples. Throws Error naming
  /// `source` and the first problem.
  void validate() const;
  /// validate() without the pass over every k-space sample, for a reader that checked each sample as it
  /// read it (the ISMRMRD reader: a second pass over gigabytes costs as much as the read).
  void validateStructure() const;
  /// validate()'s pass over the samples alone: throws Error naming the first NaN or infinite sample ("sample N of
  /// coil C [in slice S] is NaN"), for a path that learnt elsewhere (on a device) that there is one.
  void requireFiniteSamples() const;
};

}  // namespace larmor
