// Sampling facts of a Cartesian frame (sampling_facts.hpp): acceleration from the mask, slice order.
#include "sampling_facts.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>

#include "larmor/data/partial_fourier_region.hpp"

namespace larmor::io::detail {

int maskAcceleration(const Dataset& d, bool alongPe1, int* support) {
  if (support) *support = 0;
  if (d.sampled.empty()) return 1;
  const index_t n1 = d.sampled.shape()[0], n2 = d.sampled.shape()[1];
  const index_t n = alongPe1 ? n1 : n2, c1 = n1 / 2, c2 = n2 / 2;
  const auto at = [&](const Array<std::uint8_t>& m, index_t i) { return alongPe1 ? m(i, c2, 0) : m(c1, i, 0); };
  std::map<index_t, index_t> gaps;
  index_t prev = -1, count = 0;
  for (index_t i = 0; i < n; ++i) {
    if (!at(d.sampled, i)) continue;
    ++count;
    if (!d.calibration.empty() && at(d.calibration, i)) continue;  // the gaps of the lines outside it
    if (prev >= 0) ++gaps[i - prev];
    prev = i;
  }
  if (count == n || gaps.empty()) return 1;
  index_t best = 1, bestCount = 0;
  for (auto [gap, c] : gaps)
    if (c > bestCount) best = gap, bestCount = c;
  if (support) *support = static_cast<int>(bestCount);
  return static_cast<int>(best);
}

void setAccelerationFromMask(Dataset& d) {
  Header& h = d.header;
  if (h.trajectory != TrajectoryKind::Cartesian || d.sampled.empty()) return;
  const auto judge = [&](bool alongPe1, int& r) {
    const index_t n = d.sampled.shape()[alongPe1 ? 0 : 1];
    if (n <= 1) return;
    int support = 0;
    const int measured = maskAcceleration(d, alongPe1, &support);
    index_t sampled = 0;
    for (index_t i = 0; i < n; ++i)
      sampled += alongPe1 ? d.sampled(i, d.sampled.shape()[1] / 2, 0) : d.sampled(d.sampled.shape()[0] / 2, i, 0);
    if (sampled == n) r = 1;
    else if (measured >= 2 && (r <= 1 || support >= 2)) r = measured;  // one gap alone does not overrule the header
  };
  judge(true, h.accelerationPe1);
  judge(false, h.accelerationPe2);
}

void setPartialFourierFromData(Dataset& d) {
  const PartialFourierRegion r = detectPartialFourier(d);
  for (int a = 0; a < 3; ++a) d.header.acquiredFraction[a] = static_cast<float>(r.fraction(a));
}

namespace {

// Moves slice blocks of `a` (slices last, `per` elements each) into `order`.
template <class T>
void permuteSlices(Array<T>& a, index_t slices, const std::vector<index_t>& order) {
  if (a.empty() || a.shape()[a.shape().rank() - 1] != slices) return;
  const index_t per = a.size() / slices;
  Array<T> out(a.shape());
  for (index_t s = 0; s < slices; ++s)
    std::memcpy(out.data() + s * per, a.data() + order[static_cast<std::size_t>(s)] * per,
                static_cast<std::size_t>(per) * sizeof(T));
  a = std::move(out);
}

}  // namespace

bool sortSlicesByPosition(Dataset& d) {
  Header& h = d.header;
  auto& pos = h.geometry.slicePositions;
  if (!h.geometry.present || h.slices <= 1 || static_cast<index_t>(pos.size()) != h.slices) return false;
  std::vector<index_t> order(static_cast<std::size_t>(h.slices));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](index_t a, index_t b) { return pos[static_cast<std::size_t>(a)] < pos[static_cast<std::size_t>(b)]; });
  if (std::is_sorted(order.begin(), order.end())) return false;
  const index_t slices = h.slices;
  permuteSlices(d.kspace, slices, order);
  permuteSlices(d.sampled, slices, order);
  permuteSlices(d.calibration, slices, order);
  if (d.reference) permuteSlices(*d.reference, slices, order);
  if (d.coilMaps) permuteSlices(*d.coilMaps, slices, order);
  std::vector<float> sorted(pos.size());
  for (std::size_t s = 0; s < pos.size(); ++s) sorted[s] = pos[static_cast<std::size_t>(order[s])];
  pos = std::move(sorted);
  return true;
}

}  // namespace larmor::io::detail
