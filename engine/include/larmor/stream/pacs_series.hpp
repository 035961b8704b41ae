#pragma once
// One streamed scan's images as one DICOM series for a PACS (docs/streaming.md, `serve --send`), sent slice by
// slice as the slices are reconstructed, on a thread of the series' own (a slow or absent PACS delays no image and
// no other slice). Each slice of each frame is written by the DICOM export (io/export.hpp: MR Image Storage, its
// own slice's geometry and scaling) and given the scan's shared StudyInstanceUID, SeriesInstanceUID and
// FrameOfReferenceUID, then sent on an association of its own. InstanceNumber = 1 + slice + slices x frame, the
// frame's rank in the order the scan's frames first finished (which is io::FrameKey order for a scan acquired frame
// after frame, as `recon --output DIR/` numbers a series); where the header declares no slice count, the slices
// are numbered in the order they finished. A slice that cannot be written or stored is one error line for that
// slice; the next slices are tried again.
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "larmor/array/array.hpp"
#include "larmor/io/dicom_send.hpp"
#include "larmor/stream/assembler.hpp"

namespace larmor::stream {

/// A reconstructed slice for the scan's series.
struct SeriesSlice {
  std::shared_ptr<const FinishedSlice> slice;
  CArray image;                 ///< [x, y, z, 1, 1]
  nlohmann::json provenance;    ///< recon::run's (settings, version, device)
};

/// The UIDs every instance of one scan shares.
struct ScanUids {
  std::string study, series, frameOfReference;
  static ScanUids fresh();
};

/// Writes `s` into the new folder `dir` (created; it must not exist) as instance `number` of the series `uids` and
/// returns its file. Throws Error naming the file on failure.
std::string writeSeriesInstance(const std::string& dir, const SeriesSlice& s, const ScanUids& uids, int number);

/// InstanceNumbers in the order slices finish: 1 + slice + slices x (the frame's rank among the frames seen).
class InstanceNumbering {
 public:
  /// `slices`: the slices per frame the header declares (<= 0: not declared; then 1, 2, 3, ... in order).
  explicit InstanceNumbering(int slices) : slices_(slices) {}
  int next(const FinishedSlice& s);

 private:
  int slices_, count_ = 0;
  std::map<io::FrameKey, int> frames_;
};

class PacsSeries {
 public:
  using Log = std::function<void(const std::string&)>;
  /// `dir`: a folder for the instances, made when the first slice comes and removed by finish(); `slices` as
  /// InstanceNumbering's; `log` gets one line per slice that was not stored and the summary.
  PacsSeries(io::DicomNode node, std::string dir, int slices, Log log);
  /// finish().
  ~PacsSeries();
  PacsSeries(const PacsSeries&) = delete;
  PacsSeries& operator=(const PacsSeries&) = delete;

  /// Queues a slice for the PACS and returns at once.
  void push(SeriesSlice s);
  /// Waits until every queued slice was sent (or failed), logs "PACS: sent N/M instances to AET@host:port" and
  /// removes the folder. Nothing is logged for a scan without slices.
  void finish();
  int stored() const;

 private:
  void run();
  void sendOne(SeriesSlice& s, int number);

  io::DicomNode node_;
  std::string dir_;
  Log log_;
  ScanUids uids_;
  InstanceNumbering numbering_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::pair<SeriesSlice, int>> queue_;
  bool closed_ = false, finished_ = false;
  int tried_ = 0, stored_ = 0;
  std::thread thread_;  // last: started when the rest is ready
};

}  // namespace larmor::stream
