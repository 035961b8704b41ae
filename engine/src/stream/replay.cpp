// An ISMRMRD file replayed as a stream (larmor/stream/replay.hpp): vetted by the file reader first, then its
// records read by the reader's own AcquisitionReader (never libismrmrd's, which trusts the sizes it reads).
#include "larmor/stream/replay.hpp"

#include <cstring>

#include "../io/ismrmrd_header.hpp"
#include "../io/ismrmrd_records.hpp"
#include "larmor/io/ismrmrd.hpp"

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

}  // namespace larmor::stream
