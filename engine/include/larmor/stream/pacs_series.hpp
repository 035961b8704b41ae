#pragma once
// One streamed scan's images as one DICOM series for a PACS (docs/streaming.md, `serve --send`). Each slice of
// each frame is written by the DICOM export (io/export.hpp: MR Image Storage, its own slice's geometry and
// scaling); the scan's instances then share one StudyInstanceUID, SeriesInstanceUID and FrameOfReferenceUID,
// and InstanceNumber = 1 + the slice's rank in frame order (io::FrameKey), then slice order, which is
// 1 + slice + slices x frame for a complete scan, as `recon --output DIR/` numbers a series.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "larmor/array/array.hpp"
#include "larmor/stream/assembler.hpp"

namespace larmor::stream {

/// A reconstructed slice kept for the scan's series.
struct SeriesSlice {
  std::shared_ptr<const FinishedSlice> slice;
  CArray image;                 ///< [x, y, z, 1, 1]
  nlohmann::json provenance;    ///< recon::run's (settings, version, device)
};

/// Writes `slices` into the new folder `dir` (created; it must not exist) as one series and returns the files,
/// in InstanceNumber order. Throws Error naming the file on failure.
std::vector<std::string> writeScanSeries(const std::string& dir, std::vector<SeriesSlice> slices);

}  // namespace larmor::stream
