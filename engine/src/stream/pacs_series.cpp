// One streamed scan's images as one DICOM series (larmor/stream/pacs_series.hpp). The DICOM export writes each
// slice as a one-instance series of its own (its geometry, scaling and provenance); the instances are then given
// the scan's shared study, series and frame-of-reference UIDs and their InstanceNumber, and saved again in the
// transfer syntax they were written in.
#include "larmor/stream/pacs_series.hpp"

#include <dcmtk/dcmdata/dctk.h>

#include <algorithm>
#include <filesystem>

#include "larmor/io/dicom.hpp"
#include "larmor/io/export.hpp"
#include "larmor/util/error.hpp"

namespace larmor::stream {
namespace {

namespace fs = std::filesystem;

struct ScanUids {
  std::string study = io::newDicomUid(), series = io::newDicomUid(), frameOfReference = io::newDicomUid();
};

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

}  // namespace

std::vector<std::string> writeScanSeries(const std::string& dir, std::vector<SeriesSlice> slices) {
  require(!fs::exists(dir), dir + ": the scan's DICOM folder exists already");
  fs::create_directories(dir);
  std::stable_sort(slices.begin(), slices.end(), [](const SeriesSlice& a, const SeriesSlice& b) {
    if (a.slice->key == b.slice->key) return a.slice->slice < b.slice->slice;
    return a.slice->key < b.slice->key;
  });
  const ScanUids uids;
  io::ExportOptions eo;
  eo.studyInstanceUid = uids.study;
  eo.printWarnings = false;
  std::vector<std::string> files;
  for (std::size_t i = 0; i < slices.size(); ++i) {
    recon::ReconResult r;
    r.image = slices[i].image;
    r.provenance = slices[i].provenance;
    const std::string sliceDir = (fs::path(dir) / ("instance-" + std::to_string(i + 1))).string() + "/";
    const io::ExportReport rep = io::writeImageOutput(sliceDir, r, slices[i].slice->dataset, eo);
    require(rep.files.size() == 1, sliceDir + ": the export wrote " + std::to_string(rep.files.size()) +
                                       " files for one slice");
    joinSeries(rep.files.front(), uids, static_cast<int>(i + 1));
    files.push_back(rep.files.front());
  }
  return files;
}

}  // namespace larmor::stream
