#pragma once
// A DICOM series (the scanner's images retrieved from a PACS, or any series on disk) as the Compare tab's
// reference B of the shown reconstruction, image by image as `larmor-cli compare --test DIR --ref DIR` pairs
// them: the reconstruction is written as Larmor's DICOM export writes it (its geometry and frame tags) into a
// scratch folder, both series are read by io::readDicomSeries and paired by io::matchDicomSeries (the same
// matrix, pixel spacing, orientation, position and frame; by order only when either has no positions).
#include <QString>
#include <cstddef>

#include "exporter.hpp"
#include "larmor/array/array.hpp"

namespace larmor::ui {

struct MatchedReference {
  CArray image;          ///< the reference's images of the shown frame, [columns, rows, planes] in the reconstruction's order
  bool byOrder = false;  ///< paired by order (no ImagePositionPatient in one of the series), not by geometry
  QString how;           ///< "matched 3 images of 3 in the reference by position and frame", as the CLI says it
};

/// `shown`: the reconstruction as an export writes it (every frame of a series, or the frame on screen), `frame`
/// the frame on screen (its index among `shown`'s frames when there are several). A series of every frame is
/// matched first; when that fails, the frame on screen alone. Throws Error: the match's one line (the first
/// image without a partner and why, or the matrices that differ), or a folder that holds no DICOM image.
MatchedReference matchReferenceSeries(const QString& referencePath, const ExportImages& shown, std::size_t frame);

}  // namespace larmor::ui
