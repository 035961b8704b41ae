// Host memory of large arrays (larmor/array/array.hpp): the registry of large blocks that a GPU backend pins
// for DMA on first use (pinHostBlock), with a counting pinning in place of CUDA's, and the freed blocks kept
// for reuse by an allocation of the same size.
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
  ~CountingPinning() {
    releaseKeptHostBlocks();  // unpinned by the pinning that pinned them
    setHostPinning(previous);
  }
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
  EXPECT_EQ(unpins, 0);  // freed: kept for reuse, still pinned
  releaseKeptHostBlocks();
  EXPECT_EQ(unpins, 1);  // released: unpinned before the unmap
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

TEST(HostMemory, AFreedBlockServesTheNextArrayOfItsSizeStillPinned) {
  CountingPinning counting;
  releaseKeptHostBlocks();
  const cfloat* first = nullptr;
  {
    CArray big(Shape{index_t{1} << 20});
    first = big.data();
    EXPECT_TRUE(pinHostBlock(big.data(), 64));
  }
  EXPECT_EQ(keptHostBytes(), std::size_t{8} << 20);
  {
    CArray again(Shape{index_t{1} << 20}, cfloat(2.f, -1.f));  // the same size: the kept block, values set
    EXPECT_EQ(again.data(), first);
    EXPECT_EQ(again[12345], cfloat(2.f, -1.f));
    EXPECT_EQ(keptHostBytes(), 0u);
    EXPECT_TRUE(pinHostBlock(again.data(), 64));
    EXPECT_EQ(pins, 1);  // pinned once, for both arrays
  }
  {
    CArray other(Shape{index_t{3} << 20});  // another size: a miss releases what was kept first
    EXPECT_EQ(keptHostBytes(), 0u);
    EXPECT_EQ(unpins, 1);
  }
  releaseKeptHostBlocks();
  EXPECT_EQ(keptHostBytes(), 0u);
  std::vector<CArray> many;
  for (int i = 0; i < 10; ++i) many.emplace_back(Shape{index_t{1} << 20});
  many.clear();
  EXPECT_EQ(keptHostBytes(), std::size_t{8} * (std::size_t{8} << 20));  // at most 8 blocks kept
}

TEST(HostMemory, AnArrayWithoutInitialisationKeepsTheBlocksBytesAndOthersAreStillZero) {
  // Array(shape, NoInit), for a download target: no zeroing pass over the elements. A reused large block shows the
  // values it held (that pass was skipped); an ordinary array made after it, of the same size, is zeroed again.
  releaseKeptHostBlocks();
  const cfloat* block = nullptr;
  {
    CArray first(Shape{index_t{1} << 20}, cfloat(3.f, 4.f));
    block = first.data();
  }
  {
    CArray raw(Shape{index_t{1} << 20}, CArray::NoInit{});
    ASSERT_EQ(raw.size(), index_t{1} << 20);
    ASSERT_EQ(raw.data(), block);               // the kept block
    EXPECT_EQ(raw[777], cfloat(3.f, 4.f));      // its bytes, not zeroed
  }
  CArray zeroed(Shape{index_t{1} << 20});
  EXPECT_EQ(zeroed.data(), block);
  EXPECT_EQ(zeroed[777], cfloat(0.f, 0.f));
  CArray small(Shape{5}, CArray::NoInit{});
  EXPECT_EQ(small.size(), 5);
  releaseKeptHostBlocks();
}
