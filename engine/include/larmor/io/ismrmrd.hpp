#pragma once
// ISMRMRD (HDF5) raw data: read into a Dataset and write one back. Built only with LARMOR_IO; callers
// that may run without it go through io::loadDataset, which checks io::ismrmrdSupported().
//
// Reading places Cartesian lines at pe = kspace_encode_step + (encoded/2 - center), keeps contrast,
// phase, repetition and set apart as frames (io/series.hpp) and averages the repeats of a line within a
// frame (averages), collects noise scans into Dataset::noise, skips navigator/phase-correction/feedback
// scans, uses separate reference scans as calibration lines, and converts a stored non-Cartesian
// trajectory to cycles per FOV. docs/data.md has the details. Every failure is an Error whose text is one
// line naming the file.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "larmor/data/dataset.hpp"
#include "larmor/io/series.hpp"
#include "larmor/util/progress.hpp"

namespace larmor::io {

/// The user parameter that says the stored trajectory is already in cycles per FOV (Larmor writes it);
/// without it, a trajectory with max |k| <= 0.5 is taken as normalised (-0.5..0.5) and scaled by the
/// recon matrix.
inline constexpr const char* kTrajectoryUnitsParameter = "larmor_trajectory_units";
/// The user parameter with the simulator settings (JSON text) of a simulated file.
inline constexpr const char* kSimulatorParameter = "larmor_simulator";
/// The user parameter with Larmor's own trajectory name (finer than ISMRMRD's enumeration).
inline constexpr const char* kTrajectoryKindParameter = "larmor_trajectory";

/// Every frame the selection keeps (io/series.hpp), e.g. the R shifted undersampled repetitions of
/// ismrmrd_generate_cartesian_shepp_logan -a R. `beforeData` (when set) sees a Dataset with only the
/// header, after the crash sandbox and before the samples are read (io::LoadOptions::beforeData).
/// `structureOnly`: io::LoadOptions::structureOnly.
Series readIsmrmrdSeries(const std::string& path, const std::string& group = "dataset", const Progress& progress = {},
                         const FrameSelection& select = {},
                         const std::function<void(const Dataset&)>& beforeData = {}, bool structureOnly = false);

/// One frame: `repetition` >= 0 keeps only that repetition. A file (or selection) of several frames is
/// refused with an Error that says how to select one (frames are never merged).
Dataset readIsmrmrd(const std::string& path, const std::string& group = "dataset", const Progress& progress = {},
                    int repetition = -1, const std::function<void(const Dataset&)>& beforeData = {});

/// What the crash sandbox (larmor-h5check) reads: the file's structure (group, XML header and its heap
/// collection, the side arrays' shapes, types and first chunks, the acquisition dataset's type, layout
/// and every chunk's place) and the first and last block of acquisition records, not the samples.
/// Throws Error like readIsmrmrd.
void checkIsmrmrdStructure(const std::string& path, const std::string& group = "dataset");

/// How the acquisitions of `path` are read: "direct" (records and global heaps parsed by Larmor, without
/// libhdf5's conversion) or "libhdf5: REASON" (the fallback, e.g. "libhdf5: filters (compressed
/// chunks)"; LARMOR_ISMRMRD_HDF5_READ=1 forces it). Throws Error like readIsmrmrd.
std::string ismrmrdAcquisitionRead(const std::string& path, const std::string& group = "dataset");

/// Writes `d` (validated first) as an ISMRMRD file, atomically. `simulatorSettings` (when not null)
/// goes into the user parameter larmor_simulator.
void writeIsmrmrd(const Dataset& d, const std::string& path, const nlohmann::json& simulatorSettings = {});

/// Writes a series (phantom::simulateSeries, io::Series::frames) as one ISMRMRD file whose frames are
/// repetitions 0 .. N-1, atomically. The frames must share trajectory kind, matrices, coils, slices and k-space
/// shape (one XML header) and each have a reference or none; frame r's reference is the NDArray at index r of
/// "reference" (readIsmrmrdSeries gives it back to repetition r), the coil maps are frame 0's. One frame is
/// written as writeIsmrmrd writes it.
void writeIsmrmrdSeries(const std::vector<Dataset>& frames, const std::string& path,
                        const nlohmann::json& simulatorSettings = {});

/// The larmor_simulator user parameter of a file ("" when absent). Cheap: reads only the header.
std::string readIsmrmrdSimulatorSettings(const std::string& path, const std::string& group = "dataset");

/// Precedes the Error text in the output of larmor-h5check, the reader's crash sandbox (docs/dicom.md).
inline constexpr const char* kH5CheckErrorMarker = "larmor-h5check error: ";

}  // namespace larmor::io
