// The Dataset's helpers (larmor/data/dataset.hpp): trajectory and flag names, and validate(), which
// checks the arrays against the header before any reconstruction trusts them.
#include "larmor/data/dataset.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "larmor/array/finite.hpp"
#include "larmor/util/error.hpp"

namespace larmor {

std::string toString(TrajectoryKind k) {
  switch (k) {
    case TrajectoryKind::Cartesian: return "cartesian";
    case TrajectoryKind::Radial: return "radial";
    case TrajectoryKind::GoldenAngle: return "golden";
    case TrajectoryKind::Spiral: return "spiral";
    case TrajectoryKind::StackOfSpirals: return "stack-of-spirals";
    case TrajectoryKind::Radial3D: return "radial3d";
    case TrajectoryKind::Other: return "other";
  }
  return "other";
}

TrajectoryKind trajectoryKindFromString(const std::string& s) {
  std::string t = s;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  for (auto k : {TrajectoryKind::Cartesian, TrajectoryKind::Radial, TrajectoryKind::GoldenAngle,
                 TrajectoryKind::Spiral, TrajectoryKind::StackOfSpirals, TrajectoryKind::Radial3D,
                 TrajectoryKind::Other})
    if (t == toString(k)) return k;
  throw Error("unknown trajectory '" + s +
              "' (expected cartesian, radial, golden, spiral, stack-of-spirals, radial3d or other)");
}

std::string describeAcquisitionFlags(std::uint64_t flags) {
  // ISMRMRD's ISMRMRD_AcquisitionFlags, numbered from 1 (bit n-1), written without "ISMRMRD_ACQ_"
  // and "IS_" so the names read as in the header's example. Kept here, not taken from libismrmrd,
  // because this file is built without LARMOR_IO too.
  static const char* const names[] = {
      "first_in_encode_step1", "last_in_encode_step1", "first_in_encode_step2", "last_in_encode_step2",
      "first_in_average", "last_in_average", "first_in_slice", "last_in_slice",
      "first_in_contrast", "last_in_contrast", "first_in_phase", "last_in_phase",
      "first_in_repetition", "last_in_repetition", "first_in_set", "last_in_set",
      "first_in_segment", "last_in_segment", "noise_measurement", "parallel_calibration",
      "parallel_calibration_and_imaging", "reverse", "navigation_data", "phasecorr_data",
      "last_in_measurement", "hpfeedback_data", "dummyscan_data", "rtfeedback_data",
      "surfacecoilcorrectionscan_data", "phase_stabilization_reference", "phase_stabilization"};
  constexpr int named = static_cast<int>(sizeof(names) / sizeof(names[0]));
  std::string out;
  for (int flag = 1; flag <= 64; ++flag) {
    if (!(flags & (std::uint64_t{1} << (flag - 1)))) continue;
    std::string name;
    if (flag <= named) name = names[flag - 1];
    else if (flag >= 53 && flag <= 56) name = "compression" + std::to_string(flag - 52);
    else if (flag >= 57) name = "user" + std::to_string(flag - 56);
    else name = "flag" + std::to_string(flag);
    if (!out.empty()) out += '|';
    out += name;
  }
  return out;
}

namespace {

// The first non-finite complex sample in kspace as "sample N of coil C" (N within the coil's
// [readout, pe1, pe2] block, so it points at a place a user can find).
void requireFiniteKspace(const CArray& k, const std::string& name) {
  const index_t perCoil = k.shape().span(0, 3);
  const index_t coils = k.shape()[3];
  const cfloat* p = k.data();
  const std::size_t floats = 2 * static_cast<std::size_t>(k.size());
  if (const std::size_t bad = firstNonFinite(reinterpret_cast<const float*>(p), floats); bad < floats) {
    const auto i = static_cast<index_t>(bad / 2);
    const float re = p[i].real(), im = p[i].imag();
    const index_t sample = i % perCoil;
    const index_t coil = (i / perCoil) % std::max<index_t>(coils, 1);
    const index_t slice = i / (perCoil * std::max<index_t>(coils, 1));
    std::string where = "sample " + std::to_string(sample) + " of coil " + std::to_string(coil);
    if (k.shape()[4] > 1) where += " in slice " + std::to_string(slice);
    throw Error(name + ": " + where + ((std::isnan(re) || std::isnan(im)) ? " is NaN" : " is Inf"));
  }
}

}  // namespace

void Dataset::validate() const {
  validateStructure();
  requireFiniteSamples();
}

void Dataset::requireFiniteSamples() const {
  requireFiniteKspace(kspace, source.empty() ? std::string("dataset") : source);
}

void Dataset::validateStructure() const {
  const std::string name = source.empty() ? std::string("dataset") : source;
  auto fail = [&](const std::string& what) { throw Error(name + ": " + what); };
  const Header& h = header;
  const bool cartesian = h.trajectory == TrajectoryKind::Cartesian;

  if (h.coils <= 0) fail("the data have no coils");
  if (h.slices <= 0) fail("the data have no slices");
  for (int d = 0; d < 3; ++d) {
    if (h.encoded[d] <= 0 || h.recon[d] <= 0)
      fail("matrix size " + std::to_string(h.encoded[d]) + "/" + std::to_string(h.recon[d]) +
           " (encoded/recon) in dimension " + std::to_string(d) + " is not positive");
  }
  if (kspace.empty()) fail("k-space is empty");
  const Shape& ks = kspace.shape();
  for (std::size_t d = 5; d < ks.rank(); ++d)
    if (ks[d] != 1) fail("k-space " + ks.str() + " has more than 5 dimensions");
  if (ks[3] != h.coils)
    fail("k-space " + ks.str() + " has " + std::to_string(ks[3]) + " coils, the header says " +
         std::to_string(h.coils));
  if (ks[4] != h.slices)
    fail("k-space " + ks.str() + " has " + std::to_string(ks[4]) + " slices, the header says " +
         std::to_string(h.slices));

  if (cartesian) {
    const Shape want{h.encoded[0], h.encoded[1], h.encoded[2], h.coils, h.slices};
    if (ks != want) fail("k-space " + ks.str() + " does not match the encoded matrix " + want.str());
    const Shape maskShape{h.encoded[1], h.encoded[2], h.slices};
    if (sampled.shape() != maskShape || sampled.empty())
      fail("sampling mask " + sampled.shape().str() + " does not match [pe1, pe2, slices] " + maskShape.str());
    if (!calibration.empty() && calibration.shape() != maskShape)
      fail("calibration mask " + calibration.shape().str() + " does not match [pe1, pe2, slices] " +
           maskShape.str());
    index_t lines = 0;
    for (index_t i = 0; i < sampled.size(); ++i) lines += sampled[i] ? 1 : 0;
    if (lines == 0) fail("no k-space line is sampled");
    if (!calibration.empty()) {
      for (index_t i = 0; i < calibration.size(); ++i) {
        if (calibration[i] && !sampled[i]) {
          const index_t pe1 = i % maskShape[0], pe2 = (i / maskShape[0]) % maskShape[1];
          fail("calibration line pe1=" + std::to_string(pe1) + " pe2=" + std::to_string(pe2) +
               " is not marked as sampled");
        }
      }
    }
  } else {
    if (ks[2] != 1) fail("non-Cartesian k-space " + ks.str() + " must be [readout, profiles, 1, coils, slices]");
    const Shape want{3, ks[0], ks[1]};
    if (trajectory.empty() || trajectory.shape() != want)
      fail("trajectory " + trajectory.shape().str() + " does not match [3, readout, profiles] " + want.str());
    for (index_t i = 0; i < trajectory.size(); ++i)
      if (!std::isfinite(trajectory[i]))
        fail("trajectory coordinate " + std::to_string(i % 3) + " of sample " + std::to_string(i / 3) +
             " is " + (std::isnan(trajectory[i]) ? "NaN" : "Inf"));
  }

  if (reference) {
    const Shape want{h.recon[0], h.recon[1], h.recon[2], 1, h.slices};
    if (reference->shape() != want)
      fail("reference image " + reference->shape().str() + " does not match [x, y, z, 1, slices] " + want.str());
  }
  if (coilMaps) {
    const Shape want{h.recon[0], h.recon[1], h.recon[2], h.coils, h.slices};
    if (coilMaps->shape() != want)
      fail("coil maps " + coilMaps->shape().str() + " do not match [x, y, z, coils, slices] " + want.str());
  }
  if (noise && (noise->shape().rank() != 2 || noise->shape()[1] != h.coils || noise->shape()[0] < 1))
    fail("noise samples " + noise->shape().str() + " do not match [samples, " + std::to_string(h.coils) + " coils]");
}

}  // namespace larmor
