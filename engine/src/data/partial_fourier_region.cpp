// The partial-Fourier region of a Cartesian dataset (larmor/data/partial_fourier_region.hpp). Along an
// axis of N samples (centre c = floor(N/2), docs/conventions.md) the samples lo..hi were acquired; the
// axis is partial when the block missing at one edge, beyond the symmetric centre, is larger than the
// sampling gap and N / 16 (isPartialRange), so that undersampling and a few missing edge lines are not
// taken for partial Fourier.
#include "larmor/data/partial_fourier_region.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace larmor {

double PartialFourierRegion::fraction(int a) const {
  return partial[a] ? static_cast<double>(hi[a] - lo[a] + 1) / static_cast<double>(n[a]) : 1.0;
}

std::string PartialFourierRegion::describe() const {
  static const char* names[3] = {"readout", "pe1", "pe2"};
  std::string s;
  for (int a = 0; a < 3; ++a) {
    if (!partial[a]) continue;
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s %.2f (%s %lld..%lld of %lld)", names[a], fraction(a),
                  a == 0 ? "samples" : "lines", static_cast<long long>(lo[a]), static_cast<long long>(hi[a]),
                  static_cast<long long>(n[a]));
    s += (s.empty() ? "" : ", ") + std::string(buf);
  }
  return s.empty() ? "none" : s;
}

bool isPartialRange(index_t n, index_t lo, index_t hi, index_t gap) {
  if (n < 4 || lo > hi) return false;
  const index_t c = n / 2;
  if (lo > c || hi < c) return false;
  const index_t missingLow = lo, missingHigh = n - 1 - hi;
  const index_t asymmetry = std::abs(missingLow - missingHigh);
  return asymmetry > std::max<index_t>(gap, n / 16);
}

PartialFourierRegion detectPartialFourier(const Dataset& d) {
  PartialFourierRegion r;
  const Header& h = d.header;
  if (h.trajectory != TrajectoryKind::Cartesian || d.kspace.empty() || d.sampled.empty()) return r;
  const Shape& ks = d.kspace.shape();
  const index_t n0 = ks[0], n1 = ks[1], n2 = ks[2], coils = ks[3], slices = ks[4];
  r.n[0] = n0, r.n[1] = n1, r.n[2] = n2;
  r.lo[0] = n0, r.lo[1] = n1, r.lo[2] = n2;
  r.hi[0] = r.hi[1] = r.hi[2] = -1;
  // The readout range is the first and last nonzero sample over all lines: each line is searched from
  // both ends only as far as its own first nonzero sample (a full line: one sample each way, not the
  // whole k-space, which the reader would otherwise pass over once more).
  for (index_t s = 0; s < slices; ++s)
    for (index_t k2 = 0; k2 < n2; ++k2)
      for (index_t k1 = 0; k1 < n1; ++k1) {
        if (!d.sampled(k1, k2, s)) continue;
        r.lo[1] = std::min(r.lo[1], k1), r.hi[1] = std::max(r.hi[1], k1);
        r.lo[2] = std::min(r.lo[2], k2), r.hi[2] = std::max(r.hi[2], k2);
        for (index_t c = 0; c < coils; ++c) {
          const cfloat* line = d.kspace.data() + n0 * (k1 + n1 * (k2 + n2 * (c + coils * s)));
          index_t first = 0, last = n0 - 1;
          while (first < r.lo[0] && line[first] == cfloat(0)) ++first;
          if (first < r.lo[0]) r.lo[0] = first;
          while (last > r.hi[0] && line[last] == cfloat(0)) --last;
          if (last > r.hi[0]) r.hi[0] = last;
        }
      }
  if (r.hi[1] < 0 || r.hi[0] < 0) {  // nothing sampled: nothing to say
    for (int a = 0; a < 3; ++a) r.lo[a] = 0, r.hi[a] = r.n[a] - 1;
    return r;
  }
  const index_t gaps[3] = {1, std::max(1, h.accelerationPe1), std::max(1, h.accelerationPe2)};
  for (int a = 0; a < 3; ++a) {
    r.partial[a] = r.n[a] > 1 && isPartialRange(r.n[a], r.lo[a], r.hi[a], gaps[a]);
    if (!r.partial[a]) r.lo[a] = 0, r.hi[a] = r.n[a] - 1;  // a full axis: the whole range is "acquired"
  }
  return r;
}

}  // namespace larmor
