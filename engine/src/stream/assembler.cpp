// Streamed acquisitions into one-slice Datasets (larmor/stream/assembler.hpp). A finished group's acquisitions
// go through detail::assembleAcquisitions, the pass the ISMRMRD file reader makes, with their slice index set to
// 0 and the header's slice count to 1: the slice's Dataset is the one the file reader makes of that slice.
#include "larmor/stream/assembler.hpp"

#include <map>
#include <tuple>

#include "../io/ismrmrd_acquisitions.hpp"
#include "../io/ismrmrd_header.hpp"
#include "../io/ismrmrd_records.hpp"
#include "larmor/util/error.hpp"

namespace larmor::stream {

namespace {

using io::detail::AcqHead;
using io::detail::AcqRecord;
using io::detail::isFlag;

// (slice, contrast, phase, repetition, set): the unit the server reconstructs.
using GroupKey = std::tuple<int, int, int, int, int>;

GroupKey groupOf(const ISMRMRD::ISMRMRD_AcquisitionHeader& h) {
  const auto& i = h.idx;
  return {i.slice, i.contrast, i.phase, i.repetition, i.set};
}

// The header fields the file reader reads (io/ismrmrd_records.hpp's AcqHead), slice index `slice`.
AcqHead headOf(const ISMRMRD::ISMRMRD_AcquisitionHeader& h, std::uint16_t slice) {
  AcqHead a{};
  a.version = h.version;
  a.flags = h.flags;
  a.scan_counter = h.scan_counter;
  a.number_of_samples = h.number_of_samples, a.active_channels = h.active_channels;
  a.discard_pre = h.discard_pre, a.discard_post = h.discard_post, a.center_sample = h.center_sample;
  a.trajectory_dimensions = h.trajectory_dimensions;
  for (int k = 0; k < 3; ++k) {
    a.physiology_time_stamp[k] = h.physiology_time_stamp[k];
    a.position[k] = h.position[k], a.read_dir[k] = h.read_dir[k];
    a.phase_dir[k] = h.phase_dir[k], a.slice_dir[k] = h.slice_dir[k];
  }
  const auto& i = h.idx;
  a.idx = {i.kspace_encode_step_1, i.kspace_encode_step_2, i.average, slice, i.contrast, i.phase, i.repetition, i.set};
  return a;
}

AcqRecord recordOf(const Acquisition& a) {
  AcqRecord r{};
  r.head = headOf(a.head, 0);
  r.traj = {a.trajectory.size(), const_cast<float*>(a.trajectory.data())};
  r.data = {2 * a.data.size(), const_cast<cfloat*>(a.data.data())};
  return r;
}

bool isNoise(const Acquisition& a) { return isFlag(a.head.flags, ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT); }

// An imaging acquisition that ends its slice: not noise, not an auxiliary scan, not calibration only.
bool endsSlice(const Acquisition& a) {
  const std::uint64_t f = a.head.flags;
  if (!isFlag(f, ISMRMRD::ISMRMRD_ACQ_LAST_IN_SLICE) || isNoise(a) || io::detail::isAuxiliaryScan(f)) return false;
  return !isFlag(f, ISMRMRD::ISMRMRD_ACQ_IS_PARALLEL_CALIBRATION) ||
         isFlag(f, ISMRMRD::ISMRMRD_ACQ_IS_PARALLEL_CALIBRATION_AND_IMAGING);
}

}  // namespace

struct SliceAssembler::Impl {
  std::string label;
  io::detail::EncodingFacts facts;  ///< the header's, with one slice
  Dataset base;
  std::vector<Acquisition> noise;
  std::map<GroupKey, std::vector<Acquisition>> groups;
  std::size_t pending = 0;
  std::uint64_t pendingBytes = 0, maxPendingBytes = 0;
  int declaredSlices = -1;  ///< the header's encoding limits' slices (-1: not declared)

  // Counts `a` against the bytes the stream may hold; Error beyond them.
  void hold(const Acquisition& a) {
    const std::uint64_t bytes = sizeof a + a.trajectory.size() * sizeof(float) + a.data.size() * sizeof(cfloat);
    if (pendingBytes + bytes > maxPendingBytes)
      throw Error(label + ": the unfinished slices would hold more than " + std::to_string(maxPendingBytes) +
                  " bytes (no acquisition flagged ACQ_LAST_IN_SLICE finishes them)");
    pendingBytes += bytes;
  }

  static std::uint64_t bytesOf(const std::vector<Acquisition>& acqs) {
    std::uint64_t n = 0;
    for (const Acquisition& a : acqs) n += sizeof a + a.trajectory.size() * sizeof(float) + a.data.size() * sizeof(cfloat);
    return n;
  }

  FinishedSlice build(const GroupKey& key, std::vector<Acquisition> acqs) {
    pending -= acqs.size();
    pendingBytes -= bytesOf(acqs);
    std::vector<AcqRecord> records;
    records.reserve(noise.size() + acqs.size());
    for (const Acquisition& a : noise) records.push_back(recordOf(a));
    for (const Acquisition& a : acqs) records.push_back(recordOf(a));
    io::detail::AcquisitionFrames frames = io::detail::assembleAcquisitions(records, label, facts, base);
    require(frames.frames.size() == 1, label + ": a slice's acquisitions made " +
                                           std::to_string(frames.frames.size()) + " frames");
    FinishedSlice s;
    s.slice = std::get<0>(key);
    s.key = frames.frames.begin()->first;
    s.dataset = std::move(frames.frames.begin()->second);
    s.dataset.validateStructure();
    return s;
  }
};

SliceAssembler::SliceAssembler(const std::string& xml, std::string label, std::uint64_t maxPendingBytes)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.label = std::move(label);
  m.maxPendingBytes = maxPendingBytes;
  m.base.source = m.label;
  m.base.header = io::detail::headerFromXml(io::detail::parseHeaderText(xml, m.label), m.label, m.facts);
  if (m.facts.slicesDeclared) m.declaredSlices = static_cast<int>(m.facts.slices);
  // Each group is one slice, reconstructed alone.
  m.facts.slices = 1;
  m.facts.slicesDeclared = false;
}

SliceAssembler::~SliceAssembler() = default;

const Header& SliceAssembler::header() const { return impl_->base.header; }

int SliceAssembler::declaredSlices() const { return impl_->declaredSlices; }

int SliceAssembler::declaredFrames() const {
  const io::detail::EncodingFacts& f = impl_->facts;
  if (f.maxContrast < 0 && f.maxPhase < 0 && f.maxRepetition < 0 && f.maxSet < 0) return -1;
  int n = 1;
  for (int m : {f.maxContrast, f.maxPhase, f.maxRepetition, f.maxSet}) n *= m < 0 ? 1 : m + 1;
  return n;
}

std::size_t SliceAssembler::pending() const { return impl_->pending; }

std::uint64_t SliceAssembler::pendingBytes() const { return impl_->pendingBytes; }

std::vector<FinishedSlice> SliceAssembler::add(Acquisition a) {
  Impl& m = *impl_;
  const GroupKey key = groupOf(a.head);
  if (!isNoise(a) && m.declaredSlices >= 0 && std::get<0>(key) >= m.declaredSlices)
    throw Error(m.label + ": an acquisition has slice index " + std::to_string(std::get<0>(key)) +
                " but the header's encoding limits allow slices 0.." + std::to_string(m.declaredSlices - 1));
  m.hold(a);
  if (isNoise(a)) {
    m.noise.push_back(std::move(a));
    return {};
  }
  const bool last = endsSlice(a);
  auto& group = m.groups[key];
  group.push_back(std::move(a));
  ++m.pending;
  if (!last) return {};
  std::vector<Acquisition> acqs = std::move(group);
  m.groups.erase(key);
  std::vector<FinishedSlice> out;
  out.push_back(m.build(key, std::move(acqs)));
  return out;
}

std::vector<FinishedSlice> SliceAssembler::finish() {
  Impl& m = *impl_;
  std::vector<FinishedSlice> out;
  auto groups = std::move(m.groups);
  m.groups.clear();
  for (auto& [key, acqs] : groups) out.push_back(m.build(key, std::move(acqs)));
  return out;
}

}  // namespace larmor::stream
