// The live view's scan (ui/model/live_scan.hpp) and the workstation model showing it: images arriving out of
// order land at their slice of their frame, the slices not yet arrived zero, the frames in FrameKey order; the
// data so far hold each arrived slice's k-space at its slice; the model makes the first image new data with one
// run and grows that run in place, frames included, without new data or new runs.
#include <gtest/gtest.h>

#include "larmor/phantom/simulate.hpp"
#include "live_scan.hpp"
#include "workstation_model.hpp"

using namespace larmor;
using namespace larmor::model;

namespace {

// Slice `s` of a 2-slice phantom as one-slice data, and an image whose every pixel is `value`.
LiveImage image(int slice, int repetition, float value) {
  static const Dataset two = [] {
    phantom::SimulateSettings ss;
    ss.matrix[0] = ss.matrix[1] = 8;
    ss.coils = 1;
    ss.slices = 2;
    return phantom::simulate(ss);
  }();
  auto d = std::make_shared<Dataset>(two);
  const index_t block = two.kspace.size() / 2;
  std::vector<index_t> dims = two.kspace.shape().dims();
  dims[4] = 1;
  d->kspace = CArray(Shape(dims));
  std::copy(two.kspace.data() + slice * block, two.kspace.data() + (slice + 1) * block, d->kspace.data());
  d->sampled = Array<std::uint8_t>(Shape{8, 1, 1}, 1);
  d->header.slices = 1;
  d->header.geometry.slicePositions = {10.f * static_cast<float>(slice)};
  LiveImage i;
  i.slice = slice;
  i.key.repetition = repetition;
  i.data = d;
  i.image = CArray(Shape{8, 8, 1, 1, 1}, cfloat(value, 0));
  i.method = "fft";
  return i;
}

Header twoSlices() {
  Header h;
  h.slices = 2;
  return h;
}

struct Counter : WorkstationObserver {
  int datasets = 0, added = 0, shown = 0, frames = 0;
  void datasetChanged() override { ++datasets; }
  void runAdded(const RunRecord&) override { ++added; }
  void shownRunChanged() override { ++shown; }
  void frameChanged() override { ++frames; }
};

}  // namespace

TEST(LiveScan, SlicesAndFramesLandWhereTheyBelong) {
  LiveScan scan(twoSlices(), "stream from 127.0.0.1:5000");
  scan.add(image(1, 0, 2.f));
  auto results = scan.results();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0]->image.shape(), (Shape{8, 8, 1, 1, 2}));
  EXPECT_EQ(results[0]->image[0], cfloat(0, 0));       // slice 0 not yet here
  EXPECT_EQ(results[0]->image[64], cfloat(2.f, 0));    // slice 1
  scan.add(image(0, 1, 3.f));                           // a later frame first
  scan.add(image(0, 0, 1.f));
  EXPECT_EQ(scan.imageCount(), 3u);
  ASSERT_EQ(scan.keys().size(), 2u);
  EXPECT_EQ(scan.keys()[0].repetition, 0);
  results = scan.results();
  EXPECT_EQ(results[0]->image[0], cfloat(1.f, 0));
  EXPECT_EQ(results[1]->image[0], cfloat(3.f, 0));
  EXPECT_EQ(results[1]->image[64], cfloat(0, 0));
  const auto series = scan.series();
  ASSERT_EQ(series->frames.size(), 2u);
  const Dataset& f0 = series->frames[0];
  EXPECT_EQ(f0.kspace.shape()[4], 2);
  EXPECT_EQ(f0.header.slices, 2);
  const CArray& slice1 = image(1, 0, 0).data->kspace;
  EXPECT_EQ(f0.kspace[slice1.size() + 5], slice1[5]);
  ASSERT_EQ(f0.header.geometry.slicePositions.size(), 2u);
  EXPECT_EQ(scan.description(), "fft (live)");
  EXPECT_THROW(scan.add([] { auto i = image(1, 1, 1.f); i.image = CArray(Shape{4, 4, 1, 1, 1}); return i; }()), Error);
}

TEST(LiveScan, TheModelGrowsOneRunInPlace) {
  WorkstationModel m;
  Counter c;
  m.addObserver(&c);
  LiveScan scan(twoSlices(), "stream from 127.0.0.1:5000");
  scan.add(image(0, 0, 1.f));
  const RunRecord* first = m.showLiveScan(scan, true);
  ASSERT_TRUE(first);
  const int number = first->number;
  EXPECT_EQ(c.datasets, 1);
  EXPECT_EQ(m.source().name(), "stream from 127.0.0.1:5000");
  scan.add(image(1, 0, 2.f));
  const RunRecord* grown = m.showLiveScan(scan, false);
  ASSERT_TRUE(grown);
  EXPECT_EQ(grown->number, number);
  EXPECT_EQ(m.runs().size(), 1u);
  EXPECT_EQ(m.shownResult()->image[64], cfloat(2.f, 0));
  EXPECT_EQ(c.frames, 0);
  // The data are taken again at the end (or when the frames grow), not for each slice.
  const index_t half = m.dataset()->kspace.size() / 2;
  const auto slice1 = [&] { return m.dataset()->kspace[half + 5]; };
  EXPECT_EQ(slice1(), cfloat(0, 0));
  ASSERT_TRUE(m.showLiveScan(scan, false, true));
  EXPECT_EQ(slice1(), image(1, 0, 0).data->kspace[5]);
  EXPECT_EQ(c.datasets, 1);
  scan.add(image(0, 1, 3.f));  // a second frame: the data become a series, the run a series run
  ASSERT_TRUE(m.showLiveScan(scan, false));
  EXPECT_EQ(c.frames, 1);
  EXPECT_EQ(m.frameCount(), 2u);
  EXPECT_TRUE(m.shownRun()->isSeries());
  EXPECT_EQ(c.datasets, 1);
  EXPECT_EQ(c.added, 1);
  EXPECT_EQ(m.runForFrame(1, m.session()), number);
  // Other data: the scan's later images change nothing.
  m.setDataset(std::make_shared<Dataset>(*image(0, 0, 0).data), DataSource::file("other.h5"));
  scan.add(image(1, 1, 4.f));
  EXPECT_EQ(m.showLiveScan(scan, false), nullptr);
  EXPECT_EQ(m.source().name(), "other.h5");
  m.removeObserver(&c);
}

// A dynamic scan whose every image is a new frame: each frame's k-space is gathered once, not every frame again at
// each new one (which made 20,000 frames cost 2 x 10^8 frame copies), both by the scan alone and through the model
// that shows it; a series held elsewhere is never changed under its holder.
TEST(LiveScan, EachFrameIsGatheredOnce) {
  constexpr int kFrames = 20000;
  LiveScan scan(twoSlices(), "stream from 127.0.0.1:5000");
  for (int r = 0; r < kFrames; ++r) {
    scan.add(image(0, r, 1.f));
    ASSERT_EQ(scan.series()->frames.size(), static_cast<std::size_t>(r + 1));
  }
  EXPECT_EQ(scan.gatheredFrames(), static_cast<std::size_t>(kFrames));  // quadratic: kFrames (kFrames + 1) / 2
  const auto series = scan.series();
  EXPECT_EQ(series->repetitions.size(), static_cast<std::size_t>(kFrames));
  EXPECT_EQ(series->keys.back().repetition, kFrames - 1);
  EXPECT_EQ(series->frames.back().kspace[0], image(0, 0, 1.f).data->kspace[0]);

  const std::size_t before = scan.gatheredFrames();
  scan.add(image(1, 3, 1.f));  // a slice of a known frame: that frame alone again
  EXPECT_NE(scan.series().get(), series.get()) << "held here: a new series";
  EXPECT_EQ(scan.gatheredFrames(), before + kFrames);  // `series` was held: every frame into a new one
  EXPECT_EQ(series->frames[3].sampled[8], 0) << "the held series changed under its holder";
}

TEST(LiveScan, TheModelLetsTheSeriesGrowInPlace) {
  constexpr int kFrames = 2000;
  LiveScan scan(twoSlices(), "stream from 127.0.0.1:5000");
  WorkstationModel m;
  for (int r = 0; r < kFrames; ++r) {
    scan.add(image(0, r, 1.f));
    ASSERT_TRUE(m.showLiveScan(scan, r == 0));
    ASSERT_TRUE(r == 0 || m.setFrame(static_cast<std::size_t>(r)));  // the window follows the newest frame
  }
  EXPECT_EQ(m.frameCount(), static_cast<std::size_t>(kFrames));
  EXPECT_EQ(scan.gatheredFrames(), static_cast<std::size_t>(kFrames));
  ASSERT_TRUE(m.showLiveScan(scan, false, true));  // the end: nothing new to gather
  EXPECT_EQ(scan.gatheredFrames(), static_cast<std::size_t>(kFrames));
  EXPECT_EQ(m.dataset().get(), &m.data().series->frames[kFrames - 1]);
}
