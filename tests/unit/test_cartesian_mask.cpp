// Cartesian undersampling masks: line counts, the centre line, the ACS block and the errors.
#include <gtest/gtest.h>

#include "larmor/traj/cartesian.hpp"

using namespace larmor;
using larmor::traj::cartesianMask;
using larmor::traj::countLines;

namespace {
// Lines n in [0, N) with (n - floor(N/2)) mod R == 0.
index_t gridLines(index_t n, int r) {
  index_t count = 0;
  for (index_t i = 0; i < n; ++i) count += ((i - n / 2) % r) == 0;
  return count;
}
}  // namespace

TEST(CartesianMask, CountsAndCentreLine) {
  for (index_t n : {7, 32, 63, 64, 255, 256})
    for (int r : {1, 2, 3, 4, 5}) {
      const auto mask = cartesianMask(n, 1, r, 1, 0, 0, nullptr);
      ASSERT_EQ(mask.shape(), (Shape{n, 1}));
      EXPECT_EQ(countLines(mask), gridLines(n, r)) << "N=" << n << " R=" << r;
      EXPECT_EQ(mask(n / 2, 0), 1) << "the k-space centre line must be sampled";
      for (index_t i = 0; i < n; ++i) EXPECT_EQ(mask(i, 0), ((i - n / 2) % r == 0) ? 1 : 0);
    }
  EXPECT_EQ(countLines(cartesianMask(64, 1, 4, 1, 0, 0, nullptr)), 16);
  EXPECT_EQ(countLines(cartesianMask(64, 1, 3, 1, 0, 0, nullptr)), 21);
  EXPECT_EQ(countLines(cartesianMask(1, 1, 1, 1, 0, 0, nullptr)), 1);
}

TEST(CartesianMask, AcsBlockIsCentredAndMarked) {
  Array<std::uint8_t> cal;
  const auto mask = cartesianMask(64, 1, 4, 1, 8, 1, &cal);
  ASSERT_EQ(cal.shape(), mask.shape());
  EXPECT_EQ(countLines(cal), 8);
  for (index_t i = 28; i < 36; ++i) {
    EXPECT_EQ(cal(i, 0), 1) << i;
    EXPECT_EQ(mask(i, 0), 1) << i;
  }
  EXPECT_EQ(cal(27, 0), 0);
  EXPECT_EQ(cal(36, 0), 0);
  // 16 grid lines, 2 of them (28, 32) inside the ACS block: 16 + 8 - 2.
  EXPECT_EQ(countLines(mask), 22);
  // Odd ACS sizes and odd matrices stay centred on floor(N/2).
  cartesianMask(63, 1, 2, 1, 5, 1, &cal);
  for (index_t i = 0; i < 63; ++i) EXPECT_EQ(cal(i, 0), (i >= 29 && i <= 33) ? 1 : 0) << i;
}

TEST(CartesianMask, TwoDirections) {
  Array<std::uint8_t> cal;
  const auto mask = cartesianMask(32, 16, 2, 2, 8, 4, &cal);
  ASSERT_EQ(mask.shape(), (Shape{32, 16}));
  EXPECT_EQ(countLines(cal), 32);
  index_t expected = 0;
  for (index_t j = 0; j < 16; ++j)
    for (index_t i = 0; i < 32; ++i) {
      const bool grid = (i - 16) % 2 == 0 && (j - 8) % 2 == 0;
      const bool acs = i >= 12 && i < 20 && j >= 6 && j < 10;
      EXPECT_EQ(mask(i, j), (grid || acs) ? 1 : 0);
      EXPECT_EQ(cal(i, j), acs ? 1 : 0);
      expected += grid || acs;
    }
  EXPECT_EQ(countLines(mask), expected);
  // 3D simulation: R along pe1 only, ACS spanning all of pe2.
  const auto m3 = cartesianMask(32, 16, 4, 1, 6, 16, &cal);
  EXPECT_EQ(countLines(cal), 6 * 16);
  for (index_t j = 0; j < 16; ++j) EXPECT_EQ(m3(16, j), 1);
}

TEST(CartesianMask, RejectsBadSettings) {
  EXPECT_THROW(cartesianMask(64, 1, 64, 1, 0, 0, nullptr), Error);  // R = lines
  EXPECT_THROW(cartesianMask(64, 1, 65, 1, 0, 0, nullptr), Error);  // R > lines
  EXPECT_THROW(cartesianMask(64, 1, 0, 1, 0, 0, nullptr), Error);
  EXPECT_THROW(cartesianMask(64, 1, 2, 1, 65, 1, nullptr), Error);  // acs > lines
  EXPECT_THROW(cartesianMask(64, 1, 2, 1, -1, 1, nullptr), Error);
  EXPECT_THROW(cartesianMask(64, 1, 2, 1, 24, 0, nullptr), Error);  // one-sided ACS block
  EXPECT_THROW(cartesianMask(0, 1, 1, 1, 0, 0, nullptr), Error);
  EXPECT_THROW(cartesianMask(64, 8, 1, 8, 0, 0, nullptr), Error);
  EXPECT_NO_THROW(cartesianMask(64, 1, 63, 1, 64, 1, nullptr));
  try {
    cartesianMask(64, 1, 64, 1, 0, 0, nullptr);
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos);
    EXPECT_NE(what.find("64"), std::string::npos);
  }
}
