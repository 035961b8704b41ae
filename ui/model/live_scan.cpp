// A streamed scan's images and data as they arrive (live_scan.hpp). A frame's image and data put each arrived
// slice at its slice index along the last dimension; the geometry is the first arrived slice's orientation and
// each arrived slice's own position (NaN for the others, so the image geometry spaces them evenly until all
// have arrived), as the ISMRMRD reader takes them from the acquisitions.
#include "live_scan.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "larmor/util/error.hpp"

namespace larmor::model {

namespace {

// `part`'s slices [.., 1] at slice `s` of `whole` [.., slices] (the last dimension of each).
template <class T>
void placeSlice(Array<T>& whole, const Array<T>& part, int s) {
  const index_t block = part.size();
  if (block == 0 || whole.size() < (s + 1) * block) return;
  std::memcpy(whole.data() + s * block, part.data(), static_cast<std::size_t>(block) * sizeof(T));
}

// `shape` with its dimension `dim` (the slices) set to `n`.
Shape withSlices(const Shape& shape, std::size_t dim, index_t n) {
  std::vector<index_t> d = shape.dims();
  if (d.size() <= dim) d.resize(dim + 1, 1);
  d[dim] = n;
  return Shape(d);
}

// `key`'s indices among the series' distinct values (kept sorted).
void addValues(io::Series& s, const io::FrameKey& key) {
  const auto add = [](std::vector<int>& v, int x) {
    const auto at = std::lower_bound(v.begin(), v.end(), x);
    if (at == v.end() || *at != x) v.insert(at, x);
  };
  add(s.contrasts, key.contrast), add(s.phases, key.phase), add(s.repetitions, key.repetition), add(s.sets, key.set);
}

}  // namespace

LiveScan::LiveScan(Header scan, std::string source)
    : scan_(std::move(scan)), source_(std::move(source)), slices_(std::max<index_t>(1, scan_.slices)) {}

void LiveScan::add(LiveImage image) {
  require(image.data && image.slice >= 0, source_ + ": an image without its slice's data");
  if (count_ == 0) shape_ = image.image.shape();
  require(image.image.shape() == shape_, source_ + ": image " + image.image.shape().str() + " of slice " +
                                             std::to_string(image.slice) + " is not the scan's " + shape_.str());
  slices_ = std::max<index_t>(slices_, image.slice + 1);
  if (method_.empty()) method_ = image.method;
  if (!frames_.count(image.key)) {
    keys_.insert(std::upper_bound(keys_.begin(), keys_.end(), image.key), image.key);
  }
  newestKey_ = image.key, newestSlice_ = image.slice;
  changed_.insert(image.key);
  results_.erase(image.key);
  Slices& frame = frames_[image.key];
  if (!frame.count(image.slice)) ++count_;
  frame[image.slice] = std::move(image);
}

std::pair<std::size_t, int> LiveScan::newest() const {
  const auto at = std::lower_bound(keys_.begin(), keys_.end(), newestKey_);
  return {static_cast<std::size_t>(at - keys_.begin()), newestSlice_};
}

std::string LiveScan::description() const { return (method_.empty() ? std::string("stream") : method_) + " (live)"; }

std::shared_ptr<const io::Series> LiveScan::series() const {
  if (series_ && changed_.empty()) return series_;
  if (series_ && series_.use_count() == 1) gatherChanged();  // nobody else reads it: in place
  else gatherAll();                                          // held elsewhere: a new one, theirs untouched
  changed_.clear();
  return series_;
}

void LiveScan::gatherAll() const {
  auto s = std::make_shared<io::Series>();
  s->frames.reserve(keys_.size());
  for (const auto& key : keys_) {
    s->frames.push_back(frameData(frames_.at(key)));
    s->keys.push_back(key);
    s->echoTimeMs.push_back(std::numeric_limits<double>::quiet_NaN());
    s->triggerTimeMs.push_back(std::numeric_limits<double>::quiet_NaN());
  }
  gathered_ += keys_.size();
  s->contrasts.clear(), s->phases.clear(), s->repetitions.clear(), s->sets.clear();
  for (const auto& key : keys_) addValues(*s, key);
  if (keys_.empty()) s->contrasts = s->phases = s->repetitions = s->sets = {0};
  series_ = std::move(s);
}

// The frames that changed, gathered again where they are, a new one inserted at its key's place (at the end, for
// a scan acquired frame after frame: the vector's growth is amortised).
void LiveScan::gatherChanged() const {
  io::Series& s = *series_;
  for (const auto& key : changed_) {
    const auto at = std::lower_bound(s.keys.begin(), s.keys.end(), key);
    const auto i = at - s.keys.begin();
    Dataset d = frameData(frames_.at(key));
    ++gathered_;
    if (at != s.keys.end() && *at == key) {
      s.frames[static_cast<std::size_t>(i)] = std::move(d);
      continue;
    }
    addValues(s, key);
    s.keys.insert(at, key);
    s.frames.insert(s.frames.begin() + i, std::move(d));
    s.echoTimeMs.insert(s.echoTimeMs.begin() + i, std::numeric_limits<double>::quiet_NaN());
    s.triggerTimeMs.insert(s.triggerTimeMs.begin() + i, std::numeric_limits<double>::quiet_NaN());
  }
}

// The arrived slices side by side; the scan's header with their positions.
Dataset LiveScan::frameData(const Slices& slices) const {
  const Dataset& first = *slices.begin()->second.data;
  Dataset d;
  d.source = source_;
  d.header = first.header;
  d.header.slices = slices_;
  d.header.patientName = scan_.patientName, d.header.patientId = scan_.patientId;
  d.header.studyDescription = scan_.studyDescription, d.header.protocolName = scan_.protocolName;
  d.header.studyDate = scan_.studyDate, d.header.studyTime = scan_.studyTime;
  Geometry& g = d.header.geometry;
  g.slicePositions.assign(static_cast<std::size_t>(slices_), std::numeric_limits<float>::quiet_NaN());
  d.kspace = CArray(withSlices(first.kspace.shape(), 4, slices_));
  d.sampled = Array<std::uint8_t>(withSlices(first.sampled.shape(), 2, slices_));
  if (!first.calibration.empty()) d.calibration = Array<std::uint8_t>(withSlices(first.calibration.shape(), 2, slices_));
  d.trajectory = first.trajectory;
  d.noise = first.noise;
  d.noiseScans = first.noiseScans;
  for (const auto& [s, image] : slices) {
    const Dataset& part = *image.data;
    if (part.kspace.shape() != first.kspace.shape()) continue;  // not this scan's matrix: its image says so
    placeSlice(d.kspace, part.kspace, s);
    placeSlice(d.sampled, part.sampled, s);
    if (!first.calibration.empty() && part.calibration.shape() == first.calibration.shape())
      placeSlice(d.calibration, part.calibration, s);
    if (!part.header.geometry.slicePositions.empty())
      g.slicePositions[static_cast<std::size_t>(s)] = part.header.geometry.slicePositions.front();
    d.acquisitions.insert(d.acquisitions.end(), part.acquisitions.begin(), part.acquisitions.end());
  }
  if (!g.present)  // no stored geometry: evenly spaced, centred, as the file reader places them
    for (index_t s = 0; s < slices_; ++s)
      g.slicePositions[static_cast<std::size_t>(s)] = (static_cast<float>(s) - 0.5f * static_cast<float>(slices_ - 1)) * d.header.reconFovMm[2];
  return d;
}

CArray LiveScan::frameImage(const Slices& slices) const {
  CArray image(withSlices(shape_, 4, slices_));
  for (const auto& [s, i] : slices) placeSlice(image, i.image, s);
  return image;
}

std::vector<std::shared_ptr<const recon::ReconResult>> LiveScan::results() const {
  std::vector<std::shared_ptr<const recon::ReconResult>> out;
  for (const auto& key : keys_) {
    if (const auto it = results_.find(key); it != results_.end()) {
      out.push_back(it->second);
      continue;
    }
    auto r = std::make_shared<recon::ReconResult>();
    const Slices& slices = frames_.at(key);
    r->image = frameImage(slices);
    for (const auto& [s, i] : slices) r->timings.add("slice " + std::to_string(s), i.reconMs, i.device);
    r->device = slices.begin()->second.device;
    r->deviceName = source_;
    r->provenance = {{"method", method_}, {"source", source_}, {"live", true}};
    results_[key] = r;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace larmor::model
