// Host memory of large arrays (larmor/array/array.hpp): the registry of large blocks that a GPU backend pins
// for DMA on first use (pinHostBlock), with a counting pinning in place of CUDA's.
#include <gtest/gtest.h>

#include <vector>

#include "larmor/array/array.hpp"

using namespace larmor;

namespace {
int pins = 0, unpins = 0;
bool refuse = false;
bool countPin(void*, std::size_t) {
  ++pins;
  return !refuse;
}
void countUnpin(void*) { ++unpins; }
const HostPinning kCounting{countPin, countUnpin};

/// Installs the counting pinning for one test and puts back whatever was there (a loaded CUDA plugin's).
struct CountingPinning {
  CountingPinning() : previous(setHostPinning(&kCounting)) { pins = unpins = 0, refuse = false; }
  ~CountingPinning() { setHostPinning(previous); }
  const HostPinning* previous;
};
}  // namespace

TEST(HostMemory, LargeBlocksArePinnedOnceAndUnpinnedWhenFreed) {
  CountingPinning counting;
  {
    CArray big(Shape{index_t{1} << 20});  // 8 MiB: hostAllocate's large path
    EXPECT_TRUE(pinHostBlock(big.data() + 10, 100 * sizeof(cfloat)));
    EXPECT_TRUE(pinHostBlock(big.data(), big.size() * sizeof(cfloat)));  // the whole block: pinned already
    EXPECT_EQ(pins, 1);
    EXPECT_FALSE(pinHostBlock(big.data() + 1, big.size() * sizeof(cfloat)));  // runs past the block's end
    EXPECT_EQ(unpins, 0);
  }
  EXPECT_EQ(unpins, 1);  // freed: unpinned before the unmap
  std::vector<cfloat> small(1000);
  EXPECT_FALSE(pinHostBlock(small.data(), small.size() * sizeof(cfloat)));  // not a large block
  EXPECT_EQ(pins, 1);
}

TEST(HostMemory, ARefusedBlockIsNotAskedAgainAndNothingPinsWithoutAPinning) {
  CountingPinning counting;
  refuse = true;
  {
    CArray big(Shape{index_t{1} << 20});
    EXPECT_FALSE(pinHostBlock(big.data(), 64));
    EXPECT_FALSE(pinHostBlock(big.data(), 64));
    EXPECT_EQ(pins, 1);
  }
  EXPECT_EQ(unpins, 0);  // never pinned: nothing to undo
  setHostPinning(nullptr);
  CArray other(Shape{index_t{1} << 20});
  EXPECT_FALSE(pinHostBlock(other.data(), 64));
  EXPECT_EQ(pins, 1);
}
