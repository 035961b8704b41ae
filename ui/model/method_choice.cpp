// The method that fits the data and the facts of its sampling (method_choice.hpp).
#include "method_choice.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numbers>
#include <vector>

#include "method_fit.hpp"

namespace larmor::model {

namespace {

struct Block {
  index_t lo[2], hi[2];
  bool empty = true;
  long extent(int a) const { return empty ? 0 : static_cast<long>(hi[a] - lo[a] + 1); }
  bool inside(int a, index_t i) const { return !empty && i >= lo[a] && i <= hi[a]; }
};

bool at(const Array<std::uint8_t>& m, int axis, index_t i, index_t other) { return axis == 0 ? m(i, other, 0) : m(other, i, 0); }

// The largest block around the centre grown ring by ring while every new line of it is sampled.
Block fullCentre(const Array<std::uint8_t>& m) {
  const index_t n[2] = {m.shape()[0], m.shape()[1]};
  Block b;
  b.lo[0] = b.hi[0] = n[0] / 2;
  b.lo[1] = b.hi[1] = n[1] / 2;
  if (!m(b.lo[0], b.lo[1], 0)) return b;
  b.empty = false;
  const auto full = [&](int a, index_t i) {  // the line i along axis a across the block's other range
    for (index_t o = b.lo[1 - a]; o <= b.hi[1 - a]; ++o)
      if (!at(m, a, i, o)) return false;
    return true;
  };
  for (bool grew = true; grew;) {
    grew = false;
    for (int a = 0; a < 2; ++a) {
      if (b.lo[a] > 0 && full(a, b.lo[a] - 1)) --b.lo[a], grew = true;
      if (b.hi[a] + 1 < n[a] && full(a, b.hi[a] + 1)) ++b.hi[a], grew = true;
    }
  }
  return b;
}

// Along axis a: the gaps between consecutive sampled lines outside the centre, on the lines that cross it.
// Returns the most common gap (0: no lines outside the centre) and sets *share to the part of gaps it has.
int commonGap(const Array<std::uint8_t>& m, const Block& b, int a, double* share) {
  const index_t n = m.shape()[a], other = m.shape()[1 - a];
  const index_t oLo = b.empty ? other / 2 : b.lo[1 - a], oHi = b.empty ? other / 2 : b.hi[1 - a];
  std::map<index_t, long> gaps;
  long total = 0;
  for (index_t o = oLo; o <= oHi; ++o) {
    index_t prev = -1;
    for (index_t i = 0; i < n; ++i) {
      if (!at(m, a, i, o) || b.inside(a, i)) continue;
      const bool sameSide = prev >= 0 && !(prev < b.lo[a] && i > b.hi[a]);
      if (sameSide) ++gaps[i - prev], ++total;
      prev = i;
    }
  }
  int best = 0;
  long bestCount = 0;
  for (auto [gap, c] : gaps)
    if (c > bestCount) best = static_cast<int>(gap), bestCount = c;
  *share = total ? static_cast<double>(bestCount) / static_cast<double>(total) : 0;
  return best;
}

// Every line (pe1) of a 2D Cartesian reading peaks over its readout nearly as high as the brightest: as
// the spokes of a radial scan do (each passes through k = 0), never a Cartesian k-space.
bool everyLinePeaks(const Dataset& d) {
  const Shape& s = d.kspace.shape();
  const index_t n0 = s[0], n1 = s[1];
  if (s[2] != 1 || n1 < 16 || d.kspace.empty()) return false;
  std::vector<double> peak(static_cast<std::size_t>(n1), 0.0);
  for (index_t c = 0; c < s[3]; ++c)
    for (index_t l = 0; l < n1; ++l)
      for (index_t r = 0; r < n0; ++r)
        peak[static_cast<std::size_t>(l)] = std::max(peak[static_cast<std::size_t>(l)], static_cast<double>(std::abs(d.kspace[r + n0 * (l + n1 * c)])));
  std::vector<double> sorted = peak;
  std::nth_element(sorted.begin(), sorted.begin() + n1 / 2, sorted.end());
  const double median = sorted[static_cast<std::size_t>(n1 / 2)];
  const double top = *std::max_element(peak.begin(), peak.end());
  return top > 0 && median > 0.2 * top;
}

void describeCartesian(const Dataset& d, SamplingFacts& f) {
  const Array<std::uint8_t>& m = d.sampled;
  if (m.empty()) return;
  const index_t n1 = m.shape()[0], n2 = m.shape()[1];
  long sampled = 0;
  for (index_t i = 0; i < n1 * n2; ++i) sampled += m[i] != 0;
  f.fraction = static_cast<double>(sampled) / static_cast<double>(n1 * n2);
  const double acquired = static_cast<double>(d.header.acquiredFraction[1]) * d.header.acquiredFraction[2];
  f.fullySampled = f.fraction >= 0.97 * std::min(1.0, acquired > 0 ? acquired : 1.0);
  const Block b = fullCentre(m);
  f.centre = {b.extent(0), b.extent(1)};
  f.calibrationLines = d.header.calibrationLines > 0 ? d.header.calibrationLines : f.centre[0];
  if (f.fullySampled) {
    f.centre = {static_cast<long>(n1), static_cast<long>(n2)};
    f.looksRadial = everyLinePeaks(d);
    return;
  }
  for (int a = 0; a < 2; ++a) {
    if (m.shape()[a] <= 1 || f.centre[static_cast<std::size_t>(a)] == m.shape()[a]) continue;  // sampled in full along a
    double share = 0;
    const int gap = commonGap(m, b, a, &share);
    if (gap < 2 || share < 0.8) f.regular = false;
    else f.acceleration[a] = gap;
  }
  if (f.acceleration[0] == 1 && f.acceleration[1] == 1) f.regular = false;
}

std::string percent(double fraction) {
  char t[16];
  std::snprintf(t, sizeof t, "%.0f %%", 100 * fraction);
  return t;
}

std::string rText(const SamplingFacts& f) {
  return "R " + std::to_string(f.acceleration[0]) + " × " + std::to_string(f.acceleration[1]);
}

}  // namespace

SamplingFacts describeSampling(const Dataset& d) {
  SamplingFacts f;
  const Header& h = d.header;
  f.cartesian = h.trajectory == TrajectoryKind::Cartesian;
  if (f.cartesian) {
    describeCartesian(d, f);
    return f;
  }
  f.profiles = d.kspace.empty() ? 0 : static_cast<long>(d.kspace.shape()[1]);
  const bool radial = h.trajectory == TrajectoryKind::Radial || h.trajectory == TrajectoryKind::GoldenAngle;
  const double n = static_cast<double>(std::max(h.recon[0], h.recon[1]));
  f.belowNyquist = radial && f.profiles > 0 && static_cast<double>(f.profiles) < 0.9 * std::numbers::pi / 2 * n;
  f.fullySampled = !f.belowNyquist;
  return f;
}

std::string SamplingFacts::summary() const {
  if (!cartesian) return std::to_string(profiles) + " profiles" + (belowNyquist ? ", below Nyquist" : "");
  if (fullySampled) return "fully sampled";
  const std::string c = centre[0] > 0 ? std::to_string(centre[0]) + (centre[1] > 1 ? " × " + std::to_string(centre[1]) : "") : "";
  if (regular)
    return rText(*this) + ", " + (calibrationLines > 0 ? std::to_string(calibrationLines) : "no") + " calibration lines (" +
           percent(fraction) + " sampled)";
  return percent(fraction) + " sampled, irregular" + (c.empty() ? ", no fully sampled centre" : ", fully sampled centre " + c);
}

std::string aliasingWarning(recon::Method m, const SamplingFacts& f) {
  if (f.cartesian && !f.fullySampled && m == recon::Method::Fft)
    return "Undersampled (" + (f.regular ? rText(f) : percent(f.fraction) + " sampled") +
           "): the zero-filled FFT shows aliasing; GRAPPA, CG or CS remove it where the data allow.";
  if (!f.cartesian && f.belowNyquist && (m == recon::Method::Gridding || m == recon::Method::Tron || m == recon::Method::Dft))
    return "Below Nyquist (" + std::to_string(f.profiles) + " spokes): " + methodLabel(m) + " shows streaks; CG or CS reduce them.";
  return {};
}

MethodChoice chooseMethod(const Dataset& d) {
  const SamplingFacts f = describeSampling(d);
  MethodChoice c;
  if (!f.cartesian) {
    const std::string what = toString(d.header.trajectory) + ", " + std::to_string(f.profiles) + " profiles";
    c.method = f.belowNyquist ? recon::Method::Cs : recon::Method::Gridding;
    c.reason = f.belowNyquist ? "Non-Cartesian below Nyquist (" + what + "): compressed sensing."
                              : "Non-Cartesian (" + what + "): gridding.";
    return c;
  }
  const long calibration = f.calibrationLines;
  if (f.fullySampled) {
    c.method = recon::Method::Fft;
    c.reason = "Fully sampled Cartesian: the FFT is exact.";
    if (f.looksRadial)
      c.warning = "Every line of these data peaks like the k-space centre: a radial scan read as Cartesian? "
                  "Reopen it as radial.";
  } else if (f.regular && calibration >= 8) {
    c.method = recon::Method::Grappa;
    c.reason = "Regularly undersampled (" + rText(f) + ") with " + std::to_string(calibration) + " calibration lines: GRAPPA.";
  } else if (!f.regular && f.centre[0] >= 6 && (d.sampled.shape()[1] <= 1 || f.centre[1] >= 6)) {
    c.method = recon::Method::Cs;
    c.reason = "Irregularly undersampled (" + percent(f.fraction) + " sampled) with a fully sampled centre: compressed sensing.";
  } else {
    c.method = recon::Method::Fft;
    c.reason = "Undersampled without calibration lines: no parallel imaging can calibrate, so the FFT.";
  }
  if (c.warning.empty()) c.warning = aliasingWarning(c.method, f);
  return c;
}

}  // namespace larmor::model
