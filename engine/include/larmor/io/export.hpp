#pragma once
// Image output, chosen by the path (what `larmor-cli recon --output` and the GUI's export call):
//   DIR/ (ends with '/', or an existing directory)   DICOM series, MR Image Storage (needs LARMOR_IO)
//   OUT.nii                                          NIfTI-1, magnitude float32 (or complex64)
//   OUT.cfl                                          BART image, slices at BART dimension 13
//   OUT.png                                          magnitude, 8-bit grey; a mosaic of the slices,
//                                                    the middle partition of a 3D volume (frame 0 of a series)
// Every output appears whole or not at all (atomic files; DICOM: a temporary directory renamed).
#include <string>
#include <vector>

#include "larmor/data/dataset.hpp"
#include "larmor/io/series.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/util/progress.hpp"

namespace larmor::io {

/// DICOM tags of one frame of a series (writeSeriesOutput fills them; docs/dicom.md).
struct FrameTags {
  int temporalPosition = 1;  ///< TemporalPositionIdentifier: 1 + rank of (set, phase, repetition)
  int temporalPositions = 1; ///< NumberOfTemporalPositions
  int echoNumber = 1;        ///< EchoNumbers: 1 + contrast
  double echoTimeMs = 0, triggerTimeMs = 0;  ///< NaN when unknown (the tag stays empty / absent)
};

struct ExportOptions {
  /// DICOM SeriesDescription (empty: "Larmor <method>"); the component is appended for non-magnitude series.
  std::string seriesDescription;
  /// DICOM: basic de-identification (docs/dicom.md): no names, IDs, dates; provenance paths and host removed.
  /// It overrides the patient and study fields below.
  bool anonymize = false;
  /// DICOM PatientName / PatientID / AccessionNumber / StudyDescription; empty: the header's (placeholders
  /// for name and ID when it has none, no accession).
  std::string patientName, patientId, accessionNumber, studyDescription;
  /// DICOM StudyInstanceUID: exports of one study share it (empty: a new study per export).
  std::string studyInstanceUid;
  /// DICOM SeriesNumber of the first component's series, the next components counting on (0: 1 + component).
  int seriesNumber = 0;
  /// DICOM: one series per component, of magnitude | phase | real | imaginary.
  std::vector<std::string> components = {"magnitude"};
  /// Display window of the magnitude in image units (DICOM WindowCenter/Width, NIfTI cal_min/cal_max).
  /// windowWidth 0 = automatic: [0, 99.5th percentile] of the magnitude, as the PNG writer does.
  float windowCenter = 0, windowWidth = 0;
  /// NIfTI: complex64 voxels instead of float32 magnitude.
  bool niftiComplex = false;
  /// Print warnings (e.g. "the data carry no geometry") to stderr, once per export. They are also
  /// returned in ExportReport::warnings.
  bool printWarnings = true;
  /// Set by writeSeriesOutput: the image holds these frames one after another along its last dimension
  /// (empty: one frame).
  std::vector<FrameTags> frames;
};

enum class OutputKind { Dicom, Nifti, Bart, Png };
std::string toString(OutputKind k);

struct ExportReport {
  OutputKind kind = OutputKind::Png;
  std::string path;                  ///< the file or directory written
  std::vector<std::string> files;    ///< every file written (DICOM: each instance; .cfl: .hdr and .cfl)
  std::vector<std::string> warnings; ///< geometry defaults and the like
};

/// The kind of output `path` names. Throws Error listing the supported outputs for anything else.
OutputKind outputKind(const std::string& path);

/// Fails fast, before a reconstruction, when `path` cannot be written: unsupported extension, missing
/// parent directory, an existing non-directory where a DICOM directory should go, a non-empty directory
/// that is not a previous Larmor DICOM export, DICOM in a build without LARMOR_IO, and invalid options
/// (unknown component, negative window width). Writes nothing.
void checkOutputPath(const std::string& path, const ExportOptions& options = {});

/// Writes `r.image` ([x, y, z, 1, slices], complex) reconstructed from `d` to `path`. Progress is
/// reported per file written and a cancelled token (or a throwing callback) aborts the export, leaving
/// nothing behind. Throws Error (one line naming the path) on failure.
ExportReport writeImageOutput(const std::string& path, const recon::ReconResult& r, const Dataset& d,
                              const ExportOptions& options = {}, const Progress& progress = {});

/// Several frames of a series (io/series.hpp): `results[i].image` ([x, y, z, 1, slices], all alike) is frame
/// `series.keys[i]`. .cfl: frames at BART's dims (contrast TE 5, repetition TIME 10, phase TIME2 11, set
/// BATCH 15; a missing combination is zero, with a warning); NIfTI: a 4th dimension of the frames in
/// FrameKey order (repetition fastest, then contrast, phase, set); DICOM: one instance per slice and
/// frame with temporal and echo tags (FrameTags), InstanceNumber = 1 + plane + planes x frame; PNG: frame
/// 0 only (a warning says so). One frame goes through writeImageOutput unchanged.
ExportReport writeSeriesOutput(const std::string& path, const std::vector<recon::ReconResult>& results,
                               const Series& series, const ExportOptions& options = {}, const Progress& progress = {});

/// [x, y, z, coils, slices] -> BART layout: trailing size-1 dims dropped, slices at SLICE_DIM (13).
CArray toBartImage(const CArray& image);

/// Parses a component name; throws Error naming the valid ones.
enum class ImageComponent { Magnitude, Phase, Real, Imaginary };
ImageComponent componentFromString(const std::string& s);
std::string toString(ImageComponent c);
/// The component of every voxel of `image` (phase in radians, (-pi, pi]).
RArray extractComponent(const CArray& image, ImageComponent c);

/// Automatic display window [lo, hi] of a component: magnitude [0, p99.5], phase [-pi, pi], real and
/// imaginary [p0.5, p99.5]. Non-finite values are ignored.
void automaticWindow(const RArray& values, ImageComponent c, double& lo, double& hi);

}  // namespace larmor::io
