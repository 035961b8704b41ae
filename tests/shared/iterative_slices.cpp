// Shared by the unit (cpu) and GPU (cuda) binaries: a multi-slice --method cg / cs reconstruction spread over
// several devices (recon::reconstructIterativeOn, iterative_slices.cpp) against the same slices on one device.
// On the CPU the further devices are further CPU backends; on a GPU the other GPUs, and with one GPU further
// backends of the same one (their own streams, caches and plans), so the split runs on any machine. Checked: the
// images are the one device's bit for bit (the slices are independent), the convergence record names each slice's
// device, progress reaches the caller on its own thread only and rises to 1, a cancellation stops every device,
// and an error on one device (a NaN in its slice's k-space) reaches the caller after the threads have stopped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "larmor/backend/registry.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/iterative.hpp"
#include "larmor/recon/operator_cache.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/util/progress.hpp"
#include "support/device.hpp"

using namespace larmor;

namespace {

class IterativeSlices : public larmor::test::DeviceTest {
 protected:
  /// `count` backends, be() first (support/device.hpp: splitDevices).
  std::vector<Backend*> devices(int count) { return larmor::test::splitDevices(be(), count, owned_); }
  std::vector<std::shared_ptr<Backend>> owned_;
};

Dataset radialSlices(index_t slices) {
  phantom::SimulateSettings sim;
  sim.matrix[0] = sim.matrix[1] = 32;
  sim.slices = slices;
  sim.coils = 4;
  sim.trajectory = TrajectoryKind::GoldenAngle;
  sim.spokes = 24;
  sim.noiseSigma = 0.002f;
  return phantom::simulate(sim);
}

Dataset cartesianSlices(index_t slices) {
  phantom::SimulateSettings sim;
  sim.matrix[0] = sim.matrix[1] = 32;
  sim.slices = slices;
  sim.coils = 4;
  sim.accel = 2;
  sim.acs = 12;
  sim.noiseSigma = 0.002f;
  return phantom::simulate(sim);
}

recon::ReconSettings settingsOf(recon::Method method) {
  recon::ReconSettings s;
  s.method = method;
  recon::settings::applyMethodDefaults(s);
  s.iterative.iterations = method == recon::Method::Cs ? 15 : 10;
  s.iterative.tolerance = 0;
  s.iterative.calibrationSize = 12;
  s.iterative.cacheDirectory = "none";
  s.keepCoilImages = true;
  return s;
}

/// JSON equal but for the last digits of numbers (host sums over the cores: a device's thread has fewer of them).
/// A number's rounding is relative to `scale` where given: the CG objective -Re x^H (b + r) + ||d||^2 is a
/// difference of sums of the size of its first value, so its last digits are relative to that, not to itself.
void expectSameRecord(const nlohmann::json& a, const nlohmann::json& b, const std::string& at, double scale = 0) {
  if (a.is_number_float() || b.is_number_float()) {
    ASSERT_TRUE(a.is_number() && b.is_number()) << at;
    const double x = a.get<double>(), y = b.get<double>();
    EXPECT_LE(std::abs(x - y), 1e-12 * std::max({std::abs(x), std::abs(y), scale})) << at << ": " << x << " vs " << y;
  } else if (a.is_object() || a.is_array()) {
    ASSERT_EQ(a.type(), b.type()) << at;
    ASSERT_EQ(a.size(), b.size()) << at;
    if (a.is_array()) {
      for (std::size_t i = 0; i < a.size(); ++i)
        expectSameRecord(a[i], b[i], at + "[" + std::to_string(i) + "]", scale);
    } else {
      for (auto it = a.begin(); it != a.end(); ++it) {
        ASSERT_TRUE(b.contains(it.key())) << at << "." << it.key();
        const nlohmann::json& v = it.value();
        const double first = it.key() == "objective" && v.is_array() && !v.empty() && v[0].is_number()
                                 ? std::abs(v[0].get<double>()) : scale;
        expectSameRecord(v, b[it.key()], at + "." + it.key(), first);
      }
    }
  } else {
    EXPECT_EQ(a, b) << at;
  }
}

bool sameBits(const CArray& a, const CArray& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(cfloat)) == 0;
}

TEST_P(IterativeSlices, EveryDeviceCountGivesTheOneDeviceImages) {
  for (const recon::Method method : {recon::Method::Cg, recon::Method::Cs}) {
    const Dataset d = method == recon::Method::Cg ? radialSlices(5) : cartesianSlices(3);
    const recon::ReconSettings s = settingsOf(method);
    Timings t1;
    const recon::ImageSet one = recon::reconstructIterativeOn(devices(1), d, s, t1, {});
    ASSERT_EQ(one.combined.shape()[4], d.header.slices);
    ASSERT_FALSE(one.convergence.contains("devices"));
    for (int count : {2, 3}) {
      SCOPED_TRACE(std::string(method == recon::Method::Cg ? "cg" : "cs") + " over " + std::to_string(count));
      Timings t;
      const recon::ImageSet many = recon::reconstructIterativeOn(devices(count), d, s, t, {});
      EXPECT_TRUE(sameBits(many.combined, one.combined));
      EXPECT_TRUE(sameBits(many.coilImages, one.coilImages));
      const index_t used = std::min<index_t>(count, d.header.slices);
      ASSERT_TRUE(many.convergence.contains("devices"));
      ASSERT_EQ(many.convergence["devices"].size(), static_cast<std::size_t>(used));
      // Contiguous blocks, in order, covering every slice once; each slice's record names its block's device.
      index_t next = 1;
      for (const auto& dev : many.convergence["devices"]) {
        const index_t first = dev["slices"][0].get<index_t>(), last = dev["slices"][1].get<index_t>();
        EXPECT_EQ(first, next);
        EXPECT_GE(last, first);
        for (index_t sl = first; sl <= last; ++sl)
          EXPECT_EQ(many.convergence["slices"][static_cast<std::size_t>(sl - 1)]["device"], dev["device"]);
        EXPECT_TRUE(dev["stages_ms"].contains(method == recon::Method::Cs ? "FISTA" : "CG"));
        ASSERT_EQ(dev["thread_ms"].size(), 2u);  // its thread's start and end within the call's block
        EXPECT_GE(dev["thread_ms"][0].get<double>(), 0.0);
        EXPECT_LE(dev["thread_ms"][0].get<double>(), dev["thread_ms"][1].get<double>());
        if (!t.stages().empty()) EXPECT_LE(dev["thread_ms"][1].get<double>(), t.stages()[0].milliseconds);
        next = last + 1;
      }
      EXPECT_EQ(next, d.header.slices + 1);
      ASSERT_EQ(t.stages().size(), 1u);
      EXPECT_NE(t.stages()[0].stage.find("slices on " + std::to_string(used) + " devices"), std::string::npos)
          << t.stages()[0].stage;
      // The per-slice records as one device's, but for the device named and the ESPIRiT group (a device's own
      // slices) (numbers to 1e-12: the host's sums).
      for (std::size_t sl = 0; sl < static_cast<std::size_t>(d.header.slices); ++sl) {
        nlohmann::json a = many.convergence["slices"][sl], b = one.convergence["slices"][sl];
        a.erase("device");
        a.erase("espirit_group");
        b.erase("espirit_group");
        a.erase("espirit_group_ms");  // where the group's time went: a measurement
        b.erase("espirit_group_ms");
        expectSameRecord(a, b, "slice " + std::to_string(sl));
      }
    }
  }
}

TEST_P(IterativeSlices, OperatorsKeptForTheNextCallOfTheSameTrajectory) {
  // recon::OperatorCache (a batch worker's): the second call of the same trajectory and settings takes the first's
  // plan, Q and calibration gridding, on every device, and gives the same bits; other settings or another
  // trajectory build their own.
  const Dataset d = radialSlices(3);
  const recon::ReconSettings s = settingsOf(recon::Method::Cg);
  auto kept = [](const recon::ImageSet& r) {
    int n = 0;
    for (const auto& sl : r.convergence["slices"]) n += sl.value("operators", "") == "kept from an earlier call";
    return n;
  };
  for (int count : {1, 2}) {
    SCOPED_TRACE(std::to_string(count) + " device(s)");
    recon::OperatorCache cache;
    const auto on = devices(count);
    Timings t;
    const recon::ImageSet plain = recon::reconstructIterativeOn(on, d, s, t, {});
    const recon::ImageSet first = recon::reconstructIterativeOn(on, d, s, t, {}, &cache);
    const recon::ImageSet second = recon::reconstructIterativeOn(on, d, s, t, {}, &cache);
    EXPECT_EQ(kept(first), 0);
    EXPECT_EQ(kept(second), 3);
    EXPECT_TRUE(sameBits(first.combined, plain.combined));
    EXPECT_TRUE(sameBits(second.combined, plain.combined));
    EXPECT_TRUE(sameBits(second.coilImages, plain.coilImages));
    recon::ReconSettings other = s;
    other.iterative.lambda = 1e-3;
    EXPECT_EQ(kept(recon::reconstructIterativeOn(on, d, other, t, {}, &cache)), 0);
    EXPECT_EQ(kept(recon::reconstructIterativeOn(on, d, other, t, {}, &cache)), 3);
    Dataset moved = d;
    moved.trajectory[0] += 0.25f;  // one sample elsewhere: another trajectory
    EXPECT_EQ(kept(recon::reconstructIterativeOn(on, moved, other, t, {}, &cache)), 0);
  }
}

TEST_P(IterativeSlices, EspiritGroupsOfSlicesWhereverTheDevicesSplit) {
  // 34 slices: one device makes its maps in the groups [0, 32) and [32, 34), three devices (blocks of 11, 11, 12
  // slices) each its own block's in one group, and the eigen-solves are batched in chunks fixed by the Gram's size
  // (a CUDA chunk padded), so the three give one device's bits without a device making another's maps.
  phantom::SimulateSettings sim;
  sim.matrix[0] = sim.matrix[1] = 24;
  sim.slices = 34;
  sim.coils = 2;
  sim.trajectory = TrajectoryKind::GoldenAngle;
  sim.spokes = 40;
  sim.noiseSigma = 0.002f;
  const Dataset d = phantom::simulate(sim);
  recon::ReconSettings s = settingsOf(recon::Method::Cg);
  s.iterative.iterations = 3;
  Timings t;
  const recon::ImageSet one = recon::reconstructIterativeOn(devices(1), d, s, t, {});
  const recon::ImageSet three = recon::reconstructIterativeOn(devices(3), d, s, t, {});
  EXPECT_TRUE(sameBits(three.combined, one.combined));
  const auto& a = one.convergence["slices"];
  const auto& b = three.convergence["slices"];
  EXPECT_EQ(a[0]["espirit_group"], 32);
  EXPECT_EQ(a[31]["espirit_group"], 32);
  EXPECT_EQ(a[33]["espirit_group"], 2);
  EXPECT_EQ(b[0]["espirit_group"], 11);
  EXPECT_EQ(b[11]["espirit_group"], 11);
  EXPECT_EQ(b[33]["espirit_group"], 12);
  for (const auto* r : {&a, &b})
    for (const auto& sl : *r) {
      // The CPU decomposes one Gram at a time; CUDA (12.6.2 and later) in batched cuSOLVER calls.
      if (onGpu()) {
        EXPECT_GT(sl["espirit_eigen_batch"].get<int>(), 1);
      } else {
        EXPECT_EQ(sl["espirit_eigen_batch"], 1);
      }
    }
}

TEST_P(IterativeSlices, ProgressOnTheCallersThreadAndCancel) {
  const Dataset d = radialSlices(4);
  recon::ReconSettings s = settingsOf(recon::Method::Cg);
  s.iterative.iterations = 40;
  const auto caller = std::this_thread::get_id();
  std::vector<double> seen;
  bool otherThread = false;
  Timings t;
  (void)recon::reconstructIterativeOn(devices(2), d, s, t, Progress([&](double f, const std::string&) {
                                        otherThread = otherThread || std::this_thread::get_id() != caller;
                                        seen.push_back(f);
                                      }));
  EXPECT_FALSE(otherThread);
  ASSERT_FALSE(seen.empty());
  EXPECT_DOUBLE_EQ(seen.back(), 1.0);
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i], seen[i - 1]) << i;

  CancelToken token;
  token.cancel();  // cancelled before the devices start: every one stops at its first step
  Timings tc;
  EXPECT_THROW(recon::reconstructIterativeOn(devices(2), d, s, tc, Progress({}, &token)), Cancelled);
}

TEST_P(IterativeSlices, AnErrorOnOneDeviceReachesTheCaller) {
  Dataset d = cartesianSlices(4);
  // A NaN in the last slice's k-space: found where that slice's samples arrive (the second device's block).
  const index_t perSlice = d.kspace.size() / d.header.slices;
  index_t at = 3 * perSlice;
  while (std::abs(d.kspace[at]) == 0.f) ++at;
  d.kspace[at] = cfloat(std::numeric_limits<float>::quiet_NaN(), 0.f);
  const recon::ReconSettings s = settingsOf(recon::Method::Cg);
  ASSERT_TRUE(recon::samplesCheckedOnBackend(d, s));
  Timings t;
  try {
    (void)recon::reconstructIterativeOn(devices(2), d, s, t, {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("slice 3"), std::string::npos) << e.what();
  }
}

TEST_P(IterativeSlices, TheCallersErrorStopsEveryDevice) {
  // The caller's progress callback throws (not a cancellation of the token): every device stops at its next step
  // and the caller's error comes back. Seen through the operator cache: a device keeps its operators there only
  // when it has finished its block, so after a stopped call the next one finds none, where a call run to the end
  // leaves every device's.
  const Dataset d = radialSlices(4);
  recon::ReconSettings s = settingsOf(recon::Method::Cg);
  s.iterative.iterations = 400;  // the watcher reports at once: every device's block far longer than that
  struct Stop {};
  const auto on = devices(2);
  recon::OperatorCache cache;
  Timings t;
  EXPECT_THROW(recon::reconstructIterativeOn(on, d, s, t, Progress([](double, const std::string&) { throw Stop{}; }), &cache),
               Stop);
  const recon::ImageSet next = recon::reconstructIterativeOn(on, d, s, t, {}, &cache);
  for (const auto& sl : next.convergence["slices"]) EXPECT_FALSE(sl.contains("operators")) << sl.dump();
  // The control: a call run to the end leaves them.
  const recon::ImageSet third = recon::reconstructIterativeOn(on, d, s, t, {}, &cache);
  for (const auto& sl : third.convergence["slices"]) EXPECT_EQ(sl.value("operators", ""), "kept from an earlier call");
}

}  // namespace

LARMOR_INSTANTIATE_ON_TEST_DEVICE(IterativeSlices);
