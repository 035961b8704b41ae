// One streamed scan's series, sent to a PACS slice by slice (larmor/stream/pacs_series.hpp). The DICOM export
// writes each slice as a one-instance series of its own (its geometry, scaling and provenance); the instance is
// then given the scan's shared study, series and frame-of-reference UIDs and its InstanceNumber, saved again in
// the transfer syntax it was written in, and sent (io::send: one association per slice).
#include "larmor/stream/pacs_series.hpp"

#include <dcmtk/dcmdata/dctk.h>

#include <filesystem>
#include <system_error>

#include "larmor/io/dicom.hpp"
#include "larmor/io/export.hpp"
#include "larmor/util/error.hpp"

namespace larmor::stream {
namespace {

namespace fs = std::filesystem;

void put(DcmDataset& ds, const DcmTagKey& tag, const std::string& value, const std::string& path) {
  if (ds.putAndInsertString(tag, value.c_str()).bad()) throw Error(path + ": cannot set " + DcmTag(tag).getTagName());
}

// The instance the export wrote for one slice, made an instance of the scan's series.
void joinSeries(const std::string& path, const ScanUids& uids, int number) {
  DcmFileFormat file;
  if (file.loadFile(path.c_str()).bad()) throw Error(path + ": cannot read the DICOM file just written");
  DcmDataset& ds = *file.getDataset();
  const E_TransferSyntax xfer = ds.getOriginalXfer();
  put(ds, DCM_SeriesInstanceUID, uids.series, path);
  put(ds, DCM_FrameOfReferenceUID, uids.frameOfReference, path);
  put(ds, DCM_InstanceNumber, std::to_string(number), path);
  if (file.saveFile(path.c_str(), xfer).bad()) throw Error(path + ": cannot write the DICOM file");
}

// "slice 2 of repetition 3" (the frame's indices that are not 0).
std::string sliceName(const FinishedSlice& s) {
  const std::string frame = s.key.str();
  return "slice " + std::to_string(s.slice) + (frame == "frame 0" ? "" : " of " + frame);
}

}  // namespace

ScanUids ScanUids::fresh() { return {io::newDicomUid(), io::newDicomUid(), io::newDicomUid()}; }

std::string writeSeriesInstance(const std::string& dir, const SeriesSlice& s, const ScanUids& uids, int number) {
  require(!fs::exists(dir), dir + ": the slice's DICOM folder exists already");
  fs::create_directories(dir);
  io::ExportOptions eo;
  eo.studyInstanceUid = uids.study;
  eo.printWarnings = false;
  recon::ReconResult r;
  r.image = s.image;
  r.provenance = s.provenance;
  const io::ExportReport rep = io::writeImageOutput(dir + "/", r, s.slice->dataset, eo);
  require(rep.files.size() == 1, dir + ": the export wrote " + std::to_string(rep.files.size()) + " files for one slice");
  joinSeries(rep.files.front(), uids, number);
  return rep.files.front();
}

int InstanceNumbering::next(const FinishedSlice& s) {
  ++count_;
  if (slices_ <= 0) return count_;
  const int frame = frames_.emplace(s.key, static_cast<int>(frames_.size())).first->second;
  return 1 + s.slice + slices_ * frame;
}

PacsSeries::PacsSeries(io::DicomNode node, std::string dir, int slices, Log log)
    : node_(std::move(node)), dir_(std::move(dir)), log_(std::move(log)), uids_(ScanUids::fresh()),
      numbering_(slices), thread_([this] { run(); }) {}

PacsSeries::~PacsSeries() { finish(); }

void PacsSeries::push(SeriesSlice s) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    const int number = numbering_.next(*s.slice);
    queue_.emplace_back(std::move(s), number);
  }
  changed_.notify_all();
}

void PacsSeries::finish() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
    finished_ = closed_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (tried_ > 0)
    log_("PACS: sent " + std::to_string(stored_) + "/" + std::to_string(tried_) + " instances to " + io::toString(node_) +
         (stored_ == tried_ ? "" : " (error: not every instance was stored)"));
  std::error_code ignored;
  fs::remove_all(dir_, ignored);
}

int PacsSeries::stored() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return stored_;
}

void PacsSeries::run() {
  for (;;) {
    std::pair<SeriesSlice, int> next;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return closed_ || !queue_.empty(); });
      if (queue_.empty()) return;
      next = std::move(queue_.front());
      queue_.pop_front();
    }
    sendOne(next.first, next.second);
  }
}

// Written, sent and its file removed; whatever goes wrong is this slice's line.
void PacsSeries::sendOne(SeriesSlice& s, int number) {
  const std::string dir = (fs::path(dir_) / ("instance-" + std::to_string(number))).string();
  bool ok = false;
  try {
    const io::SendReport rep = io::send(node_, {writeSeriesInstance(dir, s, uids_, number)});
    ok = rep.allSent();
    if (!ok) log_("PACS: error: " + sliceName(*s.slice) + ": " + rep.results.front().message);
  } catch (const std::exception& e) {
    log_("PACS: error: " + sliceName(*s.slice) + ": " + e.what());
  }
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  const std::lock_guard<std::mutex> lock(mutex_);
  ++tried_;
  stored_ += ok ? 1 : 0;
}

}  // namespace larmor::stream
