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

}  // namespace larmor::io
