// ISMRMRD acquisitions into a Dataset (ismrmrd_acquisitions.hpp). Format facts (ISMRMRD 1.x,
// ismrmrd.readthedocs.io, "Acquisition header"):
// - flag n is bit n - 1 of `flags`; noise, navigator, phase-correction, feedback, dummy and
//   surface-coil-correction scans carry no imaging k-space (noise scans are counted, the others skipped);
// - of number_of_samples, discard_pre and discard_post are dropped; center_sample is the sample at
//   k = 0, so a shorter readout (asymmetric echo) is placed with it at encoded/2;
// - a Cartesian line lies at pe = kspace_encode_step + (encoded/2 - center) (the centre line from the
//   encoding limits); ISMRMRD_ACQ_IS_REVERSE marks a readout acquired in reverse; repeated lines
//   (averages, repetitions) are averaged;
// - a non-Cartesian trajectory holds trajectory_dimensions floats per sample, in cycles per FOV when the
//   file says so (kTrajectoryUnitsParameter), else |k| <= 0.5 means the normalised convention
//   (Gadgetron's, k in [-0.5, 0.5) of the recon matrix), anything larger is already cycles per FOV;
// - position and the read, phase and slice directions give the patient geometry (LPS, mm).
#include "ismrmrd_acquisitions.hpp"

#include <ismrmrd/version.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <new>
#include <system_error>
#include <vector>

#include "ismrmrd_records.hpp"
#include "larmor/array/finite.hpp"
#include "larmor/recon/resources.hpp"
#include "sampling_facts.hpp"
#include "physiology_stamps.hpp"
#include "trajectory_input.hpp"

namespace larmor::io::detail {

namespace {

std::string byteSize(double bytes) {
  char buf[64];
  const double kib = 1024, mib = kib * 1024, gib = mib * 1024;
  if (bytes >= gib) std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / gib);
  else if (bytes >= mib) std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / mib);
  else if (bytes >= kib) std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / kib);
  else std::snprintf(buf, sizeof buf, "%.0f bytes", bytes);
  return buf;
}

// An imaging acquisition's samples: `n` kept of `samples` per channel, from `pre` on.
struct Samples {
  const cfloat* data;  ///< [channels][samples]
  index_t samples, channels, pre, n;
  std::string name;  ///< "acquisition i", for errors
};

// Checks channels (the same in every acquisition: `coils`, set by the first), sample counts and
// finiteness of the kept samples (`verified`: the reader found every float finite and kept none).
Samples checkedSamples(const AcqRecord& record, std::uint64_t i, const std::string& path, index_t& coils,
                       bool verified = false) {
  const AcqHead& ah = record.head;
  Samples s{static_cast<const cfloat*>(record.data.p), ah.number_of_samples, ah.active_channels, ah.discard_pre, 0,
            "acquisition " + std::to_string(i)};
  const index_t post = ah.discard_post;
  if (s.channels == 0) failFile(path, s.name + " has no channels");
  if (coils == 0) coils = s.channels;
  else if (s.channels != coils)
    failFile(path, s.name + " has " + std::to_string(s.channels) + " channels, expected " + std::to_string(coils));
  if (s.samples == 0) failFile(path, s.name + " has no samples");
  if (s.pre + post >= s.samples)
    failFile(path, s.name + " discards " + std::to_string(s.pre + post) + " of its " + std::to_string(s.samples) +
                       " samples");
  s.n = s.samples - s.pre - post;
  // Every kept sample, once, here (the reader's Dataset::validateStructure does not look again).
  if (verified) return s;
  const auto floats = static_cast<std::size_t>(2 * s.n);
  for (index_t c = 0; c < s.channels; ++c) {
    const cfloat* kept = s.data + c * s.samples + s.pre;
    const std::size_t bad = firstNonFinite(reinterpret_cast<const float*>(kept), floats);
    if (bad == floats) continue;
    const cfloat v = kept[bad / 2];
    failFile(path, s.name + ": sample " + std::to_string(s.pre + static_cast<index_t>(bad / 2)) + " of coil " +
                       std::to_string(c) + " is " + (std::isnan(v.real()) || std::isnan(v.imag()) ? "NaN" : "Inf"));
  }
  return s;
}

// The position of each slice along its slice direction, and the orientation of the first imaging
// acquisition (all zeros: none stored, defaults kept).
class SliceGeometry {
 public:
  void add(const AcqHead& ah, Geometry& g) {
    const auto slice = static_cast<std::size_t>(ah.idx.slice);
    if (seen_.size() <= slice) {
      seen_.resize(slice + 1, 0);
      position_.resize(seen_.size(), 0.f);
    }
    const float* sd = ah.slice_dir;
    if (!seen_[slice]) {
      seen_[slice] = 1;
      position_[slice] = ah.position[0] * sd[0] + ah.position[1] * sd[1] + ah.position[2] * sd[2];
    }
    if (haveOrientation_) return;
    haveOrientation_ = true;
    bool any = false;
    for (int k = 0; k < 3; ++k) {
      g.position[k] = ah.position[k];
      any = any || ah.position[k] != 0 || ah.read_dir[k] != 0 || ah.phase_dir[k] != 0 || ah.slice_dir[k] != 0;
    }
    if (any) {
      std::copy(ah.read_dir, ah.read_dir + 3, g.readDir);
      std::copy(ah.phase_dir, ah.phase_dir + 3, g.phaseDir);
      std::copy(ah.slice_dir, ah.slice_dir + 3, g.sliceDir);
    }
    g.present = any;
  }

  /// One more than the last slice index seen.
  index_t slices() const { return static_cast<index_t>(seen_.size()); }

  /// h.geometry.slicePositions for h.slices slices: as acquired, or without a stored geometry evenly
  /// spaced, centred, one slab thickness apart.
  void finish(Header& h) const {
    Geometry& g = h.geometry;
    g.slicePositions.assign(static_cast<std::size_t>(h.slices), 0.f);
    for (index_t s = 0; s < h.slices; ++s) {
      const auto k = static_cast<std::size_t>(s);
      if (g.present && k < seen_.size() && seen_[k]) g.slicePositions[k] = position_[k];
      else if (!g.present)
        g.slicePositions[k] = (static_cast<float>(s) - 0.5f * static_cast<float>(h.slices - 1)) * h.reconFovMm[2];
    }
  }

 private:
  bool haveOrientation_ = false;
  std::vector<int> seen_;
  std::vector<float> position_;
};

// Cartesian lines: sums and hit counts per line, divided at the end (averaging repeats).
class CartesianLines {
 public:
  CartesianLines(const Header& h, const EncodingFacts& facts, const std::string& path, std::uint64_t count,
                 bool keepSamples)
      : h_(h), facts_(facts), path_(path), count_(count), slices_(facts.slices), keep_(keepSamples) {
    std::error_code ec;
    fileBytes_ = static_cast<double>(std::filesystem::file_size(path, ec));
  }

  void add(const AcqHead& ah, const Samples& s, std::uint64_t i) {
    const index_t enc0 = h_.encoded[0], enc1 = h_.encoded[1], enc2 = h_.encoded[2], coils = s.channels;
    index_t offset = 0;  // a shorter readout is placed so that center_sample lands on enc0/2
    if (s.n != enc0) {
      const index_t center = static_cast<index_t>(ah.center_sample) - s.pre;
      offset = enc0 / 2 - center;
      if (s.n > enc0 || center < 0 || offset < 0 || offset + s.n > enc0)
        failFile(path_, s.name + " has " + std::to_string(s.n) + " samples, expected " + std::to_string(enc0) +
                            " (the encoded matrix)");
    }
    // Limits that claim partial Fourier must hold the data: a step beyond their maximum means the claimed
    // fraction is wrong, and the k-space would be placed wrongly.
    for (int a = 1; a <= 2; ++a) {
      const int max = a == 1 ? facts_.partialMax1 : facts_.partialMax2;
      const int step = a == 1 ? ah.idx.kspace_encode_step_1 : ah.idx.kspace_encode_step_2;
      if (max >= 0 && step > max)
        failFile(path_, s.name + " is at kspace_encode_step_" + std::to_string(a) + " " + std::to_string(step) +
                            " but the header's encoding limits claim partial Fourier with steps up to " +
                            std::to_string(max) + " (centre " +
                            std::to_string(a == 1 ? facts_.center1 : facts_.center2) + ")");
    }
    const index_t pe1 = static_cast<index_t>(ah.idx.kspace_encode_step_1) + (enc1 / 2 - facts_.center1);
    const index_t pe2 = static_cast<index_t>(ah.idx.kspace_encode_step_2) + (enc2 / 2 - facts_.center2);
    if (pe1 < 0 || pe1 >= enc1 || pe2 < 0 || pe2 >= enc2)
      failFile(path_, s.name + " lies at k-space line (" + std::to_string(pe1) + ", " + std::to_string(pe2) +
                          ") outside the encoded matrix " + Shape{enc0, enc1, enc2}.str());
    const index_t slice = ah.idx.slice;
    allocate(std::max(slices_, slice + 1), i, s.samples * coils * static_cast<index_t>(sizeof(cfloat)), coils);
    slices_ = std::max(slices_, slice + 1);
    const bool reverse = isFlag(ah.flags, ISMRMRD::ISMRMRD_ACQ_IS_REVERSE);
    for (index_t c = 0; c < (keep_ ? coils : 0); ++c) {
      cfloat* dst = ksum_.data() + enc0 * (pe1 + enc1 * (pe2 + enc2 * (c + coils * slice))) + offset;
      const cfloat* src = s.data + c * s.samples + s.pre;
      if (reverse)
        for (index_t k = 0; k < s.n; ++k) dst[s.n - 1 - k] += src[k];
      else
        for (index_t k = 0; k < s.n; ++k) dst[k] += src[k];
    }
    const auto line = static_cast<std::size_t>(pe1 + enc1 * (pe2 + enc2 * slice));
    ++hits_[line];
    if (isFlag(ah.flags, ISMRMRD::ISMRMRD_ACQ_IS_PARALLEL_CALIBRATION) ||
        isFlag(ah.flags, ISMRMRD::ISMRMRD_ACQ_IS_PARALLEL_CALIBRATION_AND_IMAGING))
      calib_[line] = 1;
  }

  /// Separate reference (ACS) lines of `ref` become calibration lines here; their samples fill only
  /// lines that have no imaging readout (an imaging readout of a line is its k-space).
  void mergeReference(const CartesianLines& ref, std::uint64_t acqIndex, index_t coils) {
    if (ref.hits_.empty()) return;
    const index_t enc0 = h_.encoded[0], enc1 = h_.encoded[1], enc2 = h_.encoded[2];
    const index_t refSlices = static_cast<index_t>(ref.hits_.size()) / (enc1 * enc2);
    allocate(std::max(slices_, refSlices), acqIndex, 0, coils);
    slices_ = std::max(slices_, refSlices);
    for (index_t line = 0; line < refSlices * enc1 * enc2; ++line) {
      const auto l = static_cast<std::size_t>(line);
      if (ref.hits_[l] == 0) continue;
      calib_[l] = 1;
      if (hits_[l] != 0) continue;
      hits_[l] = ref.hits_[l];
      const index_t pe = line % (enc1 * enc2), slice = line / (enc1 * enc2);
      for (index_t c = 0; c < (keep_ ? coils : 0); ++c) {
        const index_t off = enc0 * (pe + enc1 * enc2 * (c + coils * slice));
        std::copy_n(ref.ksum_.data() + off, enc0, ksum_.data() + off);
      }
    }
  }

  /// d.kspace, d.sampled, d.calibration and the calibration lines for `slices` slices (the encoding
  /// limits may announce more than were acquired: up to the last one seen are kept). The sums become
  /// d.kspace in place (divided by each line's count): the k-space is held once, not twice.
  void finish(index_t slices, Dataset& d) {
    Header& h = d.header;
    const index_t enc0 = h.encoded[0], enc1 = h.encoded[1], enc2 = h.encoded[2], coils = h.coils;
    h.slices = slices;
    hits_.resize(static_cast<std::size_t>(enc1 * enc2 * slices));
    calib_.resize(hits_.size());
    const Shape shape{enc0, enc1, enc2, coils, slices};
    if (!keep_) {
      // Structure only: the k-space stays empty.
    } else if (ksum_.size() != shape.size()) {  // more slices announced than acquired (or none allocated): a copy
      CArray exact(shape);
      std::copy_n(ksum_.data(), std::min(ksum_.size(), exact.size()), exact.data());
      ksum_ = std::move(exact);
    } else {
      ksum_.reshape(shape);
    }
    d.kspace = std::move(ksum_);
    d.sampled = Array<std::uint8_t>(Shape{enc1, enc2, slices}, 0);
    d.calibration = Array<std::uint8_t>(Shape{enc1, enc2, slices}, 0);
    const index_t lineCount = enc1 * enc2 * slices;
    for (index_t line = 0; line < lineCount; ++line) {
      const std::uint32_t nHits = hits_[static_cast<std::size_t>(line)];
      if (nHits == 0) continue;
      d.sampled[line] = 1;
      d.calibration[line] = calib_[static_cast<std::size_t>(line)];
      if (nHits == 1 || !keep_) continue;
      const index_t pe = line % (enc1 * enc2), slice = line / (enc1 * enc2);
      const float scale = 1.f / static_cast<float>(nHits);
      for (index_t c = 0; c < coils; ++c) {
        cfloat* row = d.kspace.data() + enc0 * (pe + enc1 * enc2 * (c + coils * slice));
        for (index_t s = 0; s < enc0; ++s) row[s] *= scale;
        // The samples were checked as read, but a sum of large ones can overflow (the reader's
        // Dataset::validateStructure does not look at the samples again).
        for (index_t s = 0; s < enc0; ++s)
          if (!std::isfinite(row[s].real()) || !std::isfinite(row[s].imag()))
            failFile(path_, "k-space line (" + std::to_string(pe % enc1) + ", " + std::to_string(pe / enc1) +
                                ") of coil " + std::to_string(c) +
                                (slices > 1 ? " in slice " + std::to_string(slice) : "") + " averages " +
                                std::to_string(nHits) + " readouts to a value beyond the float range");
      }
    }
    std::vector<char> calibPe1(static_cast<std::size_t>(enc1), 0);
    for (index_t line = 0; line < lineCount; ++line)
      if (d.calibration[line]) calibPe1[static_cast<std::size_t>(line % enc1)] = 1;
    h.calibrationLines = static_cast<int>(std::count(calibPe1.begin(), calibPe1.end(), 1));
  }

 private:
  // Room for `want` slices; refused when the header's matrix needs far more than the samples still to
  // come can fill (a damaged or hostile header would otherwise allocate terabytes).
  void allocate(index_t want, std::uint64_t acqIndex, index_t bytesPerAcq, index_t coils) {
    const index_t enc0 = h_.encoded[0], enc1 = h_.encoded[1], enc2 = h_.encoded[2];
    if (want <= static_cast<index_t>(hits_.size() / static_cast<std::size_t>(enc1 * enc2)) && !hits_.empty()) return;
    const double bytes = static_cast<double>(enc0) * enc1 * enc2 * coils * want * sizeof(cfloat);
    const double present = bytesPerAcq == 0 ? fileBytes_
                                            : std::min(fileBytes_, static_cast<double>(count_ - acqIndex) * bytesPerAcq);
    const double limit = 64.0 * 1024 * 1024 * 1024;
    if (bytes > limit || bytes > 64.0 * std::max(present, 1.0))
      failFile(path_, "the header's matrix " + Shape{enc0, enc1, enc2}.str() + " x " + std::to_string(coils) +
                          " coils x " + std::to_string(want) + " slices needs " + byteSize(bytes) +
                          " of k-space but the file holds only " + byteSize(present) + " of samples");
    if (keep_) recon::requireHostMemory(bytes, path_, "the k-space " + Shape{enc0, enc1, enc2, coils, want}.str());
    try {
      // The sums are the final k-space array (finish divides in place); a later slice beyond the ones
      // announced grows it by a copy.
      if (keep_) {
        CArray grown(Shape{enc0, enc1, enc2, coils, want});
        std::copy_n(ksum_.data(), std::min(ksum_.size(), grown.size()), grown.data());
        ksum_ = std::move(grown);
      }
      hits_.resize(static_cast<std::size_t>(enc1 * enc2 * want));
      calib_.resize(hits_.size());
    } catch (const std::bad_alloc&) {
      failFile(path_, "not enough memory for k-space " + Shape{enc0, enc1, enc2, coils, want}.str());
    }
  }

  const Header& h_;
  const EncodingFacts& facts_;
  const std::string& path_;
  std::uint64_t count_;
  double fileBytes_ = 0;
  index_t slices_;
  bool keep_;    ///< keep the samples (else only the lines' hits: io::LoadOptions::structureOnly)
  CArray ksum_;  ///< [enc0, enc1, enc2, coils, slices]: sums of each line's readouts
  std::vector<std::uint32_t> hits_;
  std::vector<std::uint8_t> calib_;
};

// Non-Cartesian profiles: per slice, samples appended as [coils][readout] and trajectories as
// [readout][3]; every profile has the same readout and trajectory dimensions.
class Profiles {
 public:
  explicit Profiles(const std::string& path) : path_(path) {}

  void add(const AcqRecord& record, const Samples& s, TrajectoryKind kind) {
    const int td = record.head.trajectory_dimensions;
    if (td < 2)
      failFile(path_, "the header says the trajectory is " + toString(kind) + " but " + s.name +
                          " stores no k-space coordinates");
    if (readout_ < 0) readout_ = s.n, trajDims_ = td;
    if (s.n != readout_)
      failFile(path_, s.name + " has " + std::to_string(s.n) + " samples, expected " + std::to_string(readout_));
    if (td != trajDims_)
      failFile(path_, s.name + " has " + std::to_string(td) + "-D coordinates, expected " + std::to_string(trajDims_));
    const auto slice = static_cast<std::size_t>(record.head.idx.slice);
    if (data_.size() <= slice) {
      data_.resize(slice + 1);
      traj_.resize(slice + 1);
    }
    auto& dst = data_[slice];
    auto& tdst = traj_[slice];
    try {
      for (index_t c = 0; c < s.channels; ++c)
        dst.insert(dst.end(), s.data + c * s.samples + s.pre, s.data + c * s.samples + s.pre + s.n);
      const float* t = static_cast<const float*>(record.traj.p);
      for (index_t k = s.pre; k < s.pre + s.n; ++k) {
        for (int dim = 0; dim < 3; ++dim) {
          const float v = dim < td ? t[k * td + dim] : 0.f;
          if (!std::isfinite(v))
            failFile(path_, s.name + ": trajectory coordinate " + std::to_string(dim) + " of sample " +
                                std::to_string(k) + " is not finite");
          tdst.push_back(v);
        }
      }
    } catch (const std::bad_alloc&) {
      failFile(path_, "not enough memory for the k-space samples");
    }
  }

  /// Profiles of every slice form one [readout, profiles] set; a single trajectory serves all slices.
  void finish(const EncodingFacts& facts, Dataset& d) {
    Header& h = d.header;
    const index_t coils = h.coils, slices = static_cast<index_t>(data_.size());
    const std::size_t first = firstSlice();
    const auto profiles = static_cast<index_t>(data_[first].size() / static_cast<std::size_t>(readout_ * coils));
    requireSlicesAgree(first, profiles, coils);
    h.slices = slices;
    d.kspace = CArray(Shape{readout_, profiles, 1, coils, slices});
    for (index_t s = 0; s < slices; ++s) {
      const auto& src = data_[static_cast<std::size_t>(s)];
      for (index_t p = 0; p < profiles; ++p)
        for (index_t c = 0; c < coils; ++c)
          std::memcpy(d.kspace.data() + readout_ * (p + profiles * (c + coils * s)),
                      src.data() + (p * coils + c) * readout_, static_cast<std::size_t>(readout_) * sizeof(cfloat));
    }
    std::vector<std::vector<cfloat>>().swap(data_);
    d.trajectory = RArray(Shape{3, readout_, profiles});
    std::memcpy(d.trajectory.data(), traj_[first].data(),
                static_cast<std::size_t>(d.trajectory.size()) * sizeof(float));
    float maxAbs = 0;
    for (index_t i = 0; i < d.trajectory.size(); ++i) maxAbs = std::max(maxAbs, std::abs(d.trajectory[i]));
    // Every sample at k = 0 cannot encode an image (a missing or zeroed trajectory, not a scan).
    if (maxAbs == 0.f)
      failFile(path_, "the " + toString(h.trajectory) + " trajectory is all zeros (every sample at k = 0); " +
                          "the file stores no usable k-space coordinates");
    if (!facts.trajectoryInCycles && maxAbs <= 0.5f * (1.f + 1e-3f))  // normalised: scale by the recon matrix
      for (index_t i = 0; i < d.trajectory.size(); ++i) d.trajectory[i] *= static_cast<float>(h.recon[i % 3]);
    detail::requirePlausibleTrajectory(d.trajectory, path_);
    // A 2-D trajectory (no kz) under a header that encodes z: the 3-D reconstruction it implied was wrong.
    float maxKz = 0;
    for (index_t i = 2; i < d.trajectory.size(); i += 3) maxKz = std::max(maxKz, std::abs(d.trajectory[i]));
    if (maxKz == 0.f && h.encoded[2] > 1)
      failFile(path_, "the XML header's encoded matrix z is " + std::to_string(h.encoded[2]) + " but every kz of the " +
                          toString(h.trajectory) + " trajectory is 0 (2-D); a 2-D acquisition encodes z = 1");
    if (h.trajectory == TrajectoryKind::Radial && trajDims_ >= 3 && h.encoded[2] > 1)
      h.trajectory = TrajectoryKind::Radial3D;
  }

 private:
  std::size_t firstSlice() const {
    for (std::size_t s = 0; s < data_.size(); ++s)
      if (!data_[s].empty()) return s;
    return 0;
  }

  // Every slice must have the profiles and the trajectory of the first.
  void requireSlicesAgree(std::size_t first, index_t profiles, index_t coils) const {
    const std::size_t perProfile = static_cast<std::size_t>(readout_ * coils);
    const auto& t0 = traj_[first];
    for (std::size_t s = 0; s < data_.size(); ++s) {
      const std::size_t got = data_[s].size() / perProfile;
      if (static_cast<index_t>(got) != profiles)
        failFile(path_, "slice " + std::to_string(s) + " has " + std::to_string(got) + " profiles, slice " +
                            std::to_string(first) + " has " + std::to_string(profiles));
      for (std::size_t k = 0; k < traj_[s].size(); ++k)
        if (std::abs(traj_[s][k] - t0[k]) > 1e-4f * (1.f + std::abs(t0[k])))
          failFile(path_, "slice " + std::to_string(s) + " has a different trajectory from slice " +
                              std::to_string(first) + " (not supported)");
    }
  }

  const std::string& path_;
  index_t readout_ = -1;
  int trajDims_ = 0;
  std::vector<std::vector<cfloat>> data_;
  std::vector<std::vector<float>> traj_;
};

// The kind of an acquisition that carries no imaging k-space ("" for imaging data), for the warnings.
const char* auxiliaryKind(std::uint64_t flags) {
  using namespace ISMRMRD;
  static const std::pair<ISMRMRD_AcquisitionFlags, const char*> kinds[] = {
      {ISMRMRD_ACQ_IS_NAVIGATION_DATA, "navigator"},
      {ISMRMRD_ACQ_IS_PHASECORR_DATA, "phase-correction"},
      {ISMRMRD_ACQ_IS_HPFEEDBACK_DATA, "HP-feedback"},
      {ISMRMRD_ACQ_IS_RTFEEDBACK_DATA, "RT-feedback"},
      {ISMRMRD_ACQ_IS_DUMMYSCAN_DATA, "dummy"},
      {ISMRMRD_ACQ_IS_SURFACECOILCORRECTIONSCAN_DATA, "surface-coil-correction"},
      {ISMRMRD_ACQ_IS_PHASE_STABILIZATION_REFERENCE, "phase-stabilisation reference"},
      {ISMRMRD_ACQ_IS_PHASE_STABILIZATION, "phase-stabilisation"}};
  for (auto [f, name] : kinds)
    if (isFlag(flags, f)) return name;
  return "";
}

// Files of a later major version may mean something else by the same member names (HDF5 converts the
// 1.x layouts by name), so they are refused.
void requireVersion(const AcqHead& ah, std::uint64_t i, const std::string& path) {
  if (ah.version > ISMRMRD_VERSION_MAJOR)
    failFile(path, "acquisition " + std::to_string(i) + " has format version " + std::to_string(ah.version) +
                       "; this reader knows ISMRMRD version " + std::to_string(ISMRMRD_VERSION_MAJOR));
}

// An index beyond the header's encoding limits: the file lies about its frames (or slices).
void requireIndex(const std::string& path, std::uint64_t i, const char* name, int value, int max) {
  if (max >= 0 && value > max)
    failFile(path, "acquisition " + std::to_string(i) + " has " + name + " index " + std::to_string(value) +
                       " but the header's encoding limits allow " + name + "s 0.." + std::to_string(max));
}

// One frame's lines or profiles while the file is read.
struct FrameAccumulator {
  FrameAccumulator(const Header& h, const EncodingFacts& facts, const std::string& path, std::uint64_t count,
                   bool keepSamples)
      : lines(h, facts, path, count, keepSamples), profiles(path) {}
  CartesianLines lines;
  Profiles profiles;
  index_t imaging = 0;
  PhysiologyStamps stamps;  ///< physiology_time_stamp[0] of the imaging acquisitions
};


// Noise-scan samples, appended per coil: [samples_total, coils] at the end.
struct NoiseSamples {
  index_t coils = 0, scans = 0;
  std::vector<std::vector<cfloat>> perCoil;
  void add(const Samples& s) {
    if (perCoil.empty()) perCoil.resize(static_cast<std::size_t>(s.channels));
    for (index_t c = 0; c < s.channels; ++c)
      perCoil[static_cast<std::size_t>(c)].insert(perCoil[static_cast<std::size_t>(c)].end(),
                                                  s.data + c * s.samples + s.pre, s.data + c * s.samples + s.pre + s.n);
    ++scans;
  }
  CArray array() const {
    const index_t n = perCoil.empty() ? 0 : static_cast<index_t>(perCoil[0].size());
    CArray a(Shape{n, static_cast<index_t>(perCoil.size())});
    for (std::size_t c = 0; c < perCoil.size(); ++c)
      std::copy(perCoil[c].begin(), perCoil[c].end(), a.data() + n * static_cast<index_t>(c));
    return a;
  }
};

std::string countsText(const std::map<std::string, index_t>& counts) {
  std::string s;
  for (const auto& [name, n] : counts) s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + name;
  return s;
}

// One pass over a file's acquisitions: each one goes to its frame's lines or profiles, to the reference lines,
// to the noise samples or to the skipped kinds; the index values of the imaging acquisitions are noted.
class AcquisitionPass {
 public:
  AcquisitionPass(const Header& h, const EncodingFacts& facts, const std::string& path, std::uint64_t count,
                  bool keepSamples)
      : h_(h), facts_(facts), path_(path), count_(count), keepSamples_(keepSamples),
        cartesian_(h.trajectory == TrajectoryKind::Cartesian), g_(h.geometry) {}

  // Acquisition i (its version already checked) where it belongs; the frames outside `select` are not kept.
  void add(bool samplesVerified, const AcqRecord& record, std::uint64_t i, const FrameSelection& select) {
    const AcqHead& ah = record.head;
    const FrameKey key{ah.idx.contrast, ah.idx.phase, ah.idx.repetition, ah.idx.set};
    keyOf_.push_back(key);
    if (isFlag(ah.flags, ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT)) {
      ++noiseScans_;
      index_t noiseCoils = noise_.perCoil.empty() ? 0 : static_cast<index_t>(noise_.perCoil.size());
      noise_.add(checkedSamples(record, i, path_, noiseCoils));
      return;
    }
    if (const char* kind = auxiliaryKind(ah.flags); *kind) {
      ++skippedKinds_[kind];
      return;
    }
    requireIndices(ah, i);
    // A separate reference scan (ACS acquired for calibration only) is a calibration line of the frames
    // that use it, not an image line (mergeReference).
    const bool referenceOnly = isFlag(ah.flags, ISMRMRD::ISMRMRD_ACQ_IS_PARALLEL_CALIBRATION) &&
                               !isFlag(ah.flags, ISMRMRD::ISMRMRD_ACQ_IS_PARALLEL_CALIBRATION_AND_IMAGING);
    if (referenceOnly && !cartesian_) {
      ++skippedKinds_["reference (calibration-only, not used for non-Cartesian data)"];
      return;
    }
    const Samples s = checkedSamples(record, i, path_, coils_, samplesVerified);
    geometry_.add(ah, g_);
    if (referenceOnly) {
      accumulator(references_, key).lines.add(ah, s, i);
      return;
    }
    ++imagingAll_;
    contrasts_.insert(key.contrast), phases_.insert(key.phase), repetitions_.insert(key.repetition),
        sets_.insert(key.set);
    if (!select.keeps(key)) return;
    FrameAccumulator& acc = accumulator(frames_, key);
    ++acc.imaging;
    acc.stamps.add(ah.physiology_time_stamp[0]);
    if (cartesian_) acc.lines.add(ah, s, i);
    else acc.profiles.add(record, s, h_.trajectory);
  }

  // Fails, naming what the file has, when no imaging acquisition was kept.
  void requireFrames(const FrameSelection& select) const {
    if (!frames_.empty()) return;
    const std::string sel = select.str();
    failFile(path_, count_ == 0 ? std::string("has no acquisitions")
                                : "has no imaging acquisitions" + (sel.empty() ? std::string() : " in " + sel) +
                                      " (of " + std::to_string(count_) + ", " + std::to_string(noiseScans_) +
                                      " noise scans" +
                                      (imagingAll_ > 0 && !sel.empty() ? "; the file has " +
                                           std::to_string(repetitions_.size()) + " repetitions, " +
                                           std::to_string(contrasts_.size()) + " contrasts, " +
                                           std::to_string(phases_.size()) + " phases, " +
                                           std::to_string(sets_.size()) + " sets" : std::string()) + ")");
  }

  // The index values of the imaging acquisitions, ascending, into out.
  void listIndices(AcquisitionFrames& out) const {
    out.contrasts.assign(contrasts_.begin(), contrasts_.end());
    out.phases.assign(phases_.begin(), phases_.end());
    out.repetitions.assign(repetitions_.begin(), repetitions_.end());
    out.sets.assign(sets_.begin(), sets_.end());
  }

  // Every kept frame's Dataset into out.frames (out.all holds every acquisition's info), with the file's warnings.
  void finishFrames(const Dataset& base, AcquisitionFrames& out) {
    std::optional<CArray> noiseArray;
    const std::vector<std::string> warnings = fileWarnings(noiseArray);
    // Reference lines with a frame's own key serve that frame; a frame without any is served by all of
    // them (a separate reference scan acquired once, e.g. at repetition 0), in key order.
    const index_t slices = geometry_.slices();
    for (auto& [key, acc] : frames_) {
      Dataset d;
      d.source = base.source;
      d.header = h_;
      d.header.geometry = g_;
      d.header.coils = coils_;
      d.noiseScans = noiseScans_;
      d.noise = noiseArray;
      d.warnings = warnings;
      for (std::size_t a = 0; a < out.all.size(); ++a)
        if (keyOf_[a] == key) d.acquisitions.push_back(out.all[a]);
      if (cartesian_) {
        if (auto it = references_.find(key); it != references_.end())
          acc->lines.mergeReference(it->second->lines, count_, coils_);
        else
          for (const auto& [rkey, racc] : references_) acc->lines.mergeReference(racc->lines, count_, coils_);
        acc->lines.finish(slices, d);
        setAccelerationFromMask(d);
        setPartialFourierFromData(d);
      } else {
        acc->profiles.finish(facts_, d);
      }
      geometry_.finish(d.header);
      if (const double t = acc->stamps.triggerTimeMs(); std::isfinite(t)) out.triggerTimeMs[key] = t;
      out.frames.emplace(key, std::move(d));
      acc.reset();
    }
  }

 private:
  using Accumulators = std::map<FrameKey, std::unique_ptr<FrameAccumulator>>;

  FrameAccumulator& accumulator(Accumulators& in, const FrameKey& key) const {
    auto& acc = in[key];
    if (!acc) acc = std::make_unique<FrameAccumulator>(h_, facts_, path_, count_, keepSamples_);
    return *acc;
  }

  // An index beyond the header's encoding limits would add empty slices or frames.
  void requireIndices(const AcqHead& ah, std::uint64_t i) const {
    if (facts_.slicesDeclared)
      requireIndex(path_, i, "slice", ah.idx.slice, static_cast<int>(facts_.slices - 1));
    requireIndex(path_, i, "contrast", ah.idx.contrast, facts_.maxContrast);
    requireIndex(path_, i, "phase", ah.idx.phase, facts_.maxPhase);
    requireIndex(path_, i, "repetition", ah.idx.repetition, facts_.maxRepetition);
    requireIndex(path_, i, "set", ah.idx.set, facts_.maxSet);
    requireIndex(path_, i, "average", ah.idx.average, facts_.maxAverage);
  }

  // The warnings every frame carries; the noise samples into noiseArray where their channels match.
  std::vector<std::string> fileWarnings(std::optional<CArray>& noiseArray) const {
    std::vector<std::string> warnings;
    if (!skippedKinds_.empty())
      warnings.push_back(path_ + ": skipped " + countsText(skippedKinds_) + " acquisitions (not imaging data)");
    if (noise_.scans > 0) {
      if (static_cast<index_t>(noise_.perCoil.size()) != coils_)
        warnings.push_back(path_ + ": the noise scans have " + std::to_string(noise_.perCoil.size()) +
                           " channels, the imaging data " + std::to_string(coils_) + "; the noise is not used");
      else
        noiseArray = noise_.array();
    }
    return warnings;
  }

  const Header& h_;
  const EncodingFacts& facts_;
  const std::string& path_;
  const std::uint64_t count_;
  const bool keepSamples_, cartesian_;
  Accumulators frames_, references_;
  SliceGeometry geometry_;
  NoiseSamples noise_;
  std::map<std::string, index_t> skippedKinds_;
  index_t coils_ = 0, noiseScans_ = 0, imagingAll_ = 0;
  Geometry g_;
  std::set<int> contrasts_, phases_, repetitions_, sets_;
  std::vector<FrameKey> keyOf_;  // of each acquisition in out.all: a frame lists the acquisitions of its key
};

}  // namespace

namespace {

// The pass over `count` acquisitions, record(i) giving each (a file's or a stream's: the same Dataset either way);
// verified(): the last record's samples were already checked by its reader.
template <class Get, class Verified>
AcquisitionFrames passOver(std::uint64_t count, Get&& record, Verified&& verified, const std::string& path,
                           const EncodingFacts& facts, const FrameSelection& select, const Progress& progress,
                           const Dataset& base, bool keepSamples) {
  AcquisitionPass pass(base.header, facts, path, count, keepSamples);
  AcquisitionFrames out;
  const std::uint64_t step = std::max<std::uint64_t>(1, count / 100);
  out.all.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(count, 1u << 20)));
  for (std::uint64_t i = 0; i < count; ++i) {
    if (i % step == 0) progress.report(static_cast<double>(i) / static_cast<double>(count), "reading acquisitions");
    const AcqRecord& r = record(i);
    out.all.push_back(infoOf(r.head));
    requireVersion(r.head, i, path);
    pass.add(verified(), r, i, select);
  }
  progress.report(1.0, "reading acquisitions");
  pass.requireFrames(select);
  pass.listIndices(out);
  pass.finishFrames(base, out);
  return out;
}

}  // namespace

AcquisitionFrames readAcquisitions(const std::string& path, const std::string& group, const EncodingFacts& facts,
                                   const FrameSelection& select, const Progress& progress, const Dataset& base,
                                   bool keepSamples) {
  AcquisitionReader reader(path, group);
  // Structure only: the imaging samples are checked, not kept; the reader's threads check them.
  if (!keepSamples && base.header.trajectory == TrajectoryKind::Cartesian) reader.verifySamplesOnly();
  return passOver(
      reader.count(), [&](std::uint64_t i) -> const AcqRecord& { return reader.get(i); },
      [&] { return reader.samplesVerified(); }, path, facts, select, progress, base, keepSamples);
}

AcquisitionFrames assembleAcquisitions(const std::vector<AcqRecord>& records, const std::string& label,
                                       const EncodingFacts& facts, const Dataset& base) {
  return passOver(
      records.size(), [&](std::uint64_t i) -> const AcqRecord& { return records[i]; }, [] { return false; }, label,
      facts, FrameSelection{}, Progress{}, base, true);
}

}  // namespace larmor::io::detail
