// An ISMRMRD file replayed as a stream (larmor/stream/replay.hpp): vetted by the file reader first, then its
// records read by the reader's own AcquisitionReader (never libismrmrd's, which trusts the sizes it reads). A
// .cfl or twix .dat goes through a temporary ISMRMRD file written by io::writeIsmrmrdSeries. The pace of a replay comes from
// the acquisitions' time stamps (2.5 ms ticks), read on their own as one field of the records.
#include "larmor/stream/replay.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <filesystem>

#include "../io/ismrmrd_header.hpp"
#include "../io/ismrmrd_records.hpp"
#include "../io/hdf5_guards.hpp"
#include "larmor/io/dataset_io.hpp"
#include "larmor/io/ismrmrd.hpp"
#include "larmor/util/error.hpp"

namespace larmor::stream {

namespace {

// The full MRD header from the fields the reader keeps; the rest stays zero.
ISMRMRD::ISMRMRD_AcquisitionHeader fullHeader(const io::detail::AcqHead& a) {
  ISMRMRD::ISMRMRD_AcquisitionHeader h;
  std::memset(&h, 0, sizeof h);
  h.version = a.version;
  h.flags = a.flags;
  h.scan_counter = a.scan_counter;
  h.number_of_samples = a.number_of_samples, h.active_channels = a.active_channels;
  h.available_channels = a.active_channels;
  h.discard_pre = a.discard_pre, h.discard_post = a.discard_post, h.center_sample = a.center_sample;
  h.trajectory_dimensions = a.trajectory_dimensions;
  for (int k = 0; k < 3; ++k) {
    h.physiology_time_stamp[k] = a.physiology_time_stamp[k];
    h.position[k] = a.position[k], h.read_dir[k] = a.read_dir[k];
    h.phase_dir[k] = a.phase_dir[k], h.slice_dir[k] = a.slice_dir[k];
  }
  const auto& i = a.idx;
  h.idx.kspace_encode_step_1 = i.kspace_encode_step_1, h.idx.kspace_encode_step_2 = i.kspace_encode_step_2;
  h.idx.average = i.average, h.idx.slice = i.slice, h.idx.contrast = i.contrast, h.idx.phase = i.phase;
  h.idx.repetition = i.repetition, h.idx.set = i.set;
  return h;
}

}  // namespace

void replayIsmrmrd(const std::string& path, const std::function<void(const std::string&)>& header,
                   const std::function<void(const Acquisition&)>& acquisition) {
  const std::string group = "dataset";
  (void)io::readIsmrmrdSeries(path, group, {}, {}, {}, true);  // the reader's checks (structure only)
  {
    const io::detail::H5Id file = io::detail::openIsmrmrdFile(path, group);
    header(io::detail::headerText(file.id, path, group));
  }
  io::detail::AcquisitionReader reader(path, group);
  Acquisition a;
  for (std::uint64_t i = 0; i < reader.count(); ++i) {
    const io::detail::AcqRecord& r = reader.get(i);
    a.head = fullHeader(r.head);
    const std::uint64_t samples = r.head.number_of_samples, channels = r.head.active_channels;
    const std::uint64_t dims = r.head.trajectory_dimensions;
    io::detail::requireAcquisitionSizes(path, i, samples, channels, dims, r.data.len, r.traj.len);
    const auto* traj = static_cast<const float*>(r.traj.p);
    const auto* data = static_cast<const cfloat*>(r.data.p);
    a.trajectory.assign(traj, traj + samples * dims);
    a.data.assign(data, data + samples * channels);
    acquisition(a);
  }
}

namespace {

namespace fs = std::filesystem;

std::string lowerExtension(const std::string& path) {
  std::string e = fs::path(path).extension().string();
  for (auto& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

// A temporary ISMRMRD file, removed when it goes.
struct TempFile {
  std::string path;
  TempFile() {
    static std::atomic<int> counter{0};
    path = (fs::temp_directory_path() / ("larmor-stream-" + std::to_string(::getpid()) + "-" +
                                         std::to_string(counter++) + ".h5")).string();
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};

RecordedScan recordIsmrmrd(const std::string& path) {
  RecordedScan scan;
  replayIsmrmrd(path, [&](const std::string& xml) { scan.header = xml; },
                [&](const Acquisition& a) { scan.acquisitions.push_back(a); });
  const std::vector<std::uint32_t> stamps = acquisitionTimeStamps(path);
  if (stamps.size() == scan.acquisitions.size())
    for (std::size_t i = 0; i < stamps.size(); ++i) scan.acquisitions[i].head.acquisition_time_stamp = stamps[i];
  return scan;
}

}  // namespace

RecordedScan recordScan(const std::string& path, const std::string& trajectory) {
  const std::string ext = lowerExtension(path);
  if (ext == ".cfl" || ext == ".hdr" || ext == ".dat") {  // BART k-space, Siemens twix: converted
    io::LoadOptions lo;
    lo.trajectoryPath = trajectory;
    const io::Series series = io::loadSeries(path, lo);
    TempFile h5;
    io::writeIsmrmrdSeries(series.frames, h5.path);
    return recordIsmrmrd(h5.path);
  }
  require(trajectory.empty(), path + ": --traj applies to BART .cfl k-space and twix .dat only");
  require(ext == ".h5" || ext == ".mrd" || ext == ".hdf5",
          path + ": streams ISMRMRD .h5, Siemens twix .dat and BART .cfl (with --traj for non-Cartesian k-space)");
  return recordIsmrmrd(path);
}

std::vector<std::uint32_t> acquisitionTimeStamps(const std::string& path, const std::string& group) {
  const io::detail::H5Id file = io::detail::openIsmrmrdFile(path, group);
  const std::string name = "/" + group + "/data";
  if (H5Lexists(file.id, name.c_str(), H5P_DEFAULT) <= 0) return {};
  const io::detail::H5Id ds(H5Dopen2(file.id, name.c_str(), H5P_DEFAULT), H5Dclose);
  require(ds.id >= 0, path + ": cannot open " + name);
  const io::detail::H5Id space(H5Dget_space(ds.id), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space.id);
  require(n >= 0, path + ": cannot size " + name);
  // One field of each record: head.acquisition_time_stamp (libhdf5 converts by name, reading nothing else).
  const io::detail::H5Id inner(H5Tcreate(H5T_COMPOUND, sizeof(std::uint32_t)), H5Tclose);
  H5Tinsert(inner.id, "acquisition_time_stamp", 0, H5T_NATIVE_UINT32);
  const io::detail::H5Id outer(H5Tcreate(H5T_COMPOUND, sizeof(std::uint32_t)), H5Tclose);
  H5Tinsert(outer.id, "head", 0, inner.id);
  std::vector<std::uint32_t> stamps(static_cast<std::size_t>(n));
  require(n == 0 || H5Dread(ds.id, outer.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, stamps.data()) >= 0,
          path + ": cannot read the acquisitions' time stamps");
  return stamps;
}

std::vector<double> acquisitionSchedule(const RecordedScan& scan, double trMs, const std::string& label) {
  const auto& acqs = scan.acquisitions;
  std::vector<double> at(acqs.size(), 0.0);
  if (acqs.empty()) return at;
  const auto [lo, hi] = std::minmax_element(acqs.begin(), acqs.end(), [](const Acquisition& a, const Acquisition& b) {
    return a.head.acquisition_time_stamp < b.head.acquisition_time_stamp;
  });
  if (hi->head.acquisition_time_stamp > lo->head.acquisition_time_stamp) {
    const double first = acqs.front().head.acquisition_time_stamp;
    for (std::size_t i = 0; i < acqs.size(); ++i)  // never earlier than the one before (a stamp that went back)
      at[i] = std::max(i ? at[i - 1] : 0.0, (acqs[i].head.acquisition_time_stamp - first) * 2.5);
    return at;
  }
  require(trMs > 0, label + ": its acquisitions carry no time stamps; give --tr MS (the repetition time) to pace it");
  for (std::size_t i = 0; i < acqs.size(); ++i) at[i] = static_cast<double>(i) * trMs;
  return at;
}

}  // namespace larmor::stream
