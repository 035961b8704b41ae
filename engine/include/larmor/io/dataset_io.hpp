#pragma once
// One entry point for every input format, chosen by the file's extension:
//   .h5 .mrd .ismrmrd   ISMRMRD (needs LARMOR_IO)
//   .cfl .hdr (or a base path whose .hdr exists)   BART k-space [readout, pe1|spokes, pe2, coils, ...,
//                       TE 5, TIME 10, slices at dimension 13]; non-Cartesian with LoadOptions::trajectoryPath
//                       (k-space that looks non-Cartesian without one is refused)
//   .ra                 RawArray complex float32 in BART's k-space layout (same rules as .cfl)
//   .dat                Siemens twix, VB and VD/VE (io/twix.hpp): Cartesian, or non-Cartesian with
//                       LoadOptions::trajectoryPath (a BART trajectory, or "radial:180" / "radial:360")
#include <functional>
#include <string>

#include "larmor/data/dataset.hpp"
#include "larmor/io/series.hpp"
#include "larmor/util/progress.hpp"

namespace larmor::io {

struct LoadOptions {
  /// BART trajectory (.cfl or .ra, dims [3, readout, spokes], cycles per FOV) for non-Cartesian .cfl/.ra k-space
  /// and twix .dat files; for twix also "radial:180" or "radial:360" (uniform spoke angles, twix.hpp). BART
  /// k-space with TIME (dim 10) may have one trajectory per time point along the trajectory's own dimension 10.
  std::string trajectoryPath;
  /// Recon matrix for formats without a header (BART .cfl); 0 = what the data imply (Cartesian: the
  /// k-space size; non-Cartesian: 2*ceil(max |k|) per dimension). ISMRMRD files keep their header's
  /// matrix (ReconSettings::matrix changes the output size).
  long matrix[3] = {0, 0, 0};
  /// Frame selectors (io/series.hpp): >= 0 keeps only that index, -1 all (loadSeries reads every frame
  /// kept; loadDataset needs exactly one). BART files: contrast = TE dim 5, repetition = TIME dim 10.
  int repetition = -1, contrast = -1, phase = -1, set = -1;
  FrameSelection selection() const { return FrameSelection{contrast, phase, repetition, set}; }
  /// Called once the header is known and before the samples are read (ISMRMRD), with a Dataset that
  /// holds only `source` and `header`: a caller may refuse there (recon's memory estimate, cheaply,
  /// before a large file is read). Not called for .cfl/.ra, whose header is the array's shape.
  std::function<void(const Dataset& headerOnly)> beforeData;
  /// ISMRMRD Cartesian files: every acquisition is read and checked as usual, but no samples are kept
  /// (kspace stays empty: its shape is [encoded, coils, slices] of the header) and the coil maps' values
  /// are not read. For `info`, which describes the structure (holding the whole k-space of a large file would
  /// cost gigabytes).
  /// Twix: a measurement without ACQEND is read with a warning instead of refused.
  bool structureOnly = false;
};

/// Reads every frame the options select (io/series.hpp). Throws Error (one line naming the file).
Series loadSeries(const std::string& path, const LoadOptions& options = {}, const Progress& progress = {});

/// Reads a one-frame file (or the one frame the options select) into a validated Dataset; a file of
/// several frames is refused with an Error that says how to select one. Throws Error (one line naming
/// the file).
Dataset loadDataset(const std::string& path, const LoadOptions& options = {}, const Progress& progress = {});

/// False when the engine was built without LARMOR_IO (then .h5 input is refused with a clear Error).
bool ismrmrdSupported();

}  // namespace larmor::io
