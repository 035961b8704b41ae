#pragma once
// DICOM export (DCMTK; built with LARMOR_IO): MR Image Storage, one file per 2D slice or 3D partition,
// one series per image component. What goes where is documented in docs/dicom.md; callers normally go
// through io::writeImageOutput, which also makes the series directory appear atomically.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "larmor/io/export.hpp"
#include "larmor/io/image_geometry.hpp"

namespace larmor::io {

/// MR Image Storage (PS3.4 B.5).
inline constexpr const char* kMrImageStorageUid = "1.2.840.10008.5.1.4.1.1.4";
/// The provenance JSON lives in a private block: creator "LARMOR" at (0019,0010), which reserves
/// elements (0019,1000)-(0019,10FF); the JSON (UT, UTF-8 JSON text) is (0019,1000).
inline constexpr std::uint16_t kLarmorPrivateGroup = 0x0019;
inline constexpr const char* kLarmorPrivateCreator = "LARMOR";
inline constexpr std::uint16_t kLarmorPrivateCreatorElement = 0x0010;
inline constexpr std::uint16_t kLarmorProvenanceElement = 0x1000;

/// A new UID under the root 2.25 (a UUID as one decimal number, ISO/IEC 9834-8 and PS3.5 B.2): unique
/// without a registered organisation root. 128 random bits (UUID version 4).
std::string newDicomUid();

/// The file name of instance `number` (1-based) of a component's series, e.g. "magnitude_0001.dcm".
std::string dicomFileName(ImageComponent c, index_t number, index_t count);

/// Writes the series (one per component of `options.components`) into the existing, empty directory
/// `dir` and returns the paths written. Not atomic by itself: writeImageOutput writes into a
/// temporary directory with this and renames it. Throws Error naming the file on failure.
std::vector<std::string> writeDicomSeriesFiles(const std::string& dir, const recon::ReconResult& r, const Dataset& d,
                                               const ExportOptions& options, const ImageGeometry& geometry,
                                               const Progress& progress = {});

/// One DICOM file as read back (checks, `info`, tests): every top-level element other than the pixel
/// data as text (DCMTK's rendering, multiple values joined with '\\'), keyed by (group << 16 | element),
/// and the stored pixel words.
struct DicomInstance {
  std::map<std::uint32_t, std::string> values;
  index_t rows = 0, columns = 0;
  bool signedPixels = false;
  std::vector<std::uint16_t> pixels;  ///< stored values, row by row (reinterpret as int16 when signed)
  std::string provenanceJson;         ///< (0019,1000) of the LARMOR private block, "" when absent

  /// The value of (group, element), "" when absent.
  std::string get(std::uint16_t group, std::uint16_t element) const;
  /// Pixel i in image units: stored value x RescaleSlope + RescaleIntercept.
  double value(index_t i) const;
};

/// Reads a DICOM file (any transfer syntax DCMTK decodes without extra codecs). Throws Error naming the file.
DicomInstance readDicomFile(const std::string& path);

/// The image of one DICOM series as a real-valued volume [columns, rows, slices] (in image units, as
/// CArray with zero imaginary part): `path` is one file of the series (every .dcm file in its folder with
/// the same SeriesInstanceUID is read) or the folder. Slices in InstanceNumber order. For a reference image
/// in comparisons (the GUI's "Reference file…"). Throws Error naming the path: no DICOM image, sizes that
/// differ between slices.
CArray readDicomSeriesImage(const std::string& path);

/// Where one image of a series is and which frame of the scan it is: what matches two series of the same scan.
struct DicomImageKey {
  std::string file;
  index_t rows = 0, columns = 0;
  std::vector<double> position;     ///< ImagePositionPatient (mm, 3 values), empty when absent
  std::vector<double> orientation;  ///< ImageOrientationPatient (6 values), empty when absent
  std::vector<double> spacing;      ///< PixelSpacing (mm, row then column), empty when absent
  std::string echo;                 ///< EchoNumbers, "" when absent
  std::string temporalPosition;     ///< TemporalPositionIdentifier, "" when absent
  double triggerTimeMs = -1;        ///< TriggerTime, -1 when absent
};

/// readDicomSeriesImage's volume and, in the same order, each image's key.
struct DicomSeries {
  CArray image;
  std::vector<DicomImageKey> images;
};
DicomSeries readDicomSeries(const std::string& path);

/// The reference's images matched to the test's, image by image: the same matrix (Rows, Columns), pixel
/// spacing (within 1e-4 mm), orientation (within 1e-4), position (within 0.05 mm) and frame (EchoNumbers,
/// TemporalPositionIdentifier and TriggerTime within 0.5 ms, each compared when both images carry it); in
/// InstanceNumber order among images that match alike. When either series has no ImagePositionPatient the
/// images are matched by order (then both must have as many). The reference may hold more images than the
/// test (only the matched ones are used).
struct DicomMatch {
  CArray reference;               ///< the matched reference images, [columns, rows, test images], in the test's order
  std::size_t referenceImages = 0;  ///< how many images the reference series has
  bool byOrder = false;           ///< matched by order (no positions), not by geometry
};
/// Throws one Error naming the first test image without a match and why (e.g. "no reference image at
/// position (0, 0, 5) with echo 1"), or the matrices that differ.
DicomMatch matchDicomSeries(const DicomSeries& test, const DicomSeries& reference, const std::string& testPath,
                            const std::string& referencePath);

}  // namespace larmor::io
