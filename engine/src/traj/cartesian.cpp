#include "larmor/traj/cartesian.hpp"

#include <string>

namespace larmor::traj {

namespace {

void checkDirection(const char* name, index_t lines, int accel, int acs) {
  const std::string n = name, l = std::to_string(lines);
  require(lines >= 1, "cartesian mask: " + n + " needs at least one line, got " + l);
  require(accel >= 1, "cartesian mask: acceleration along " + n + " must be at least 1, got " +
                          std::to_string(accel));
  require(accel == 1 || accel < lines, "cartesian mask: acceleration " + std::to_string(accel) + " along " + n +
                                           " must be smaller than its " + l + " lines");
  require(acs >= 0, "cartesian mask: ACS lines along " + n + " must not be negative, got " + std::to_string(acs));
  require(acs <= lines, "cartesian mask: " + std::to_string(acs) + " ACS lines along " + n + " exceed its " + l +
                            " lines");
}

// (n - c) mod R == 0 for lines on the undersampling grid through the centre c.
bool onGrid(index_t n, index_t lines, int accel) {
  const index_t d = n - lines / 2;
  return ((d % accel) + accel) % accel == 0;
}

bool inBlock(index_t n, index_t lines, int acs) {
  const index_t first = lines / 2 - acs / 2;
  return n >= first && n < first + acs;
}

}  // namespace

Array<std::uint8_t> cartesianMask(index_t pe1, index_t pe2, int accelPe1, int accelPe2, int acsPe1, int acsPe2,
                                  Array<std::uint8_t>* calibration) {
  checkDirection("pe1", pe1, accelPe1, acsPe1);
  checkDirection("pe2", pe2, accelPe2, acsPe2);
  require((acsPe1 > 0) == (acsPe2 > 0), "cartesian mask: the ACS block is acsPe1 x acsPe2 lines; give both or "
                                        "neither (got " + std::to_string(acsPe1) + " x " + std::to_string(acsPe2) + ")");
  Array<std::uint8_t> mask(Shape{pe1, pe2}, 0);
  Array<std::uint8_t> cal(Shape{pe1, pe2}, 0);
  for (index_t j = 0; j < pe2; ++j)
    for (index_t i = 0; i < pe1; ++i) {
      const bool acs = acsPe1 > 0 && inBlock(i, pe1, acsPe1) && inBlock(j, pe2, acsPe2);
      const bool grid = onGrid(i, pe1, accelPe1) && onGrid(j, pe2, accelPe2);
      mask(i, j) = (acs || grid) ? 1 : 0;
      cal(i, j) = acs ? 1 : 0;
    }
  if (calibration) *calibration = std::move(cal);
  return mask;
}

index_t countLines(const Array<std::uint8_t>& mask) {
  index_t n = 0;
  for (index_t i = 0; i < mask.size(); ++i) n += mask[i] != 0;
  return n;
}

}  // namespace larmor::traj
