// A scan recorded for streaming (larmor/stream/replay.hpp): an ISMRMRD file's acquisitions carry its time
// stamps, and the replay's schedule follows them (2.5 ms ticks), or one acquisition per TR where the file has
// none; a BART .cfl is the same acquisitions as the ISMRMRD file of the same data.
#include <gtest/gtest.h>
#include <ismrmrd/dataset.h>

#include <filesystem>

#include "larmor/io/cfl.hpp"
#include "larmor/io/ismrmrd.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/stream/replay.hpp"
#include "larmor/util/error.hpp"

namespace larmor::stream {
namespace {

std::string tmpPath(const std::string& name) {
  std::filesystem::create_directories(LARMOR_TEST_TMP);
  const std::string p = std::string(LARMOR_TEST_TMP) + "/" + name;
  std::filesystem::remove(p);
  return p;
}

std::string simulated(const std::string& name) {
  phantom::SimulateSettings ss;
  ss.matrix[0] = ss.matrix[1] = 16;
  ss.coils = 2;
  const std::string path = tmpPath(name);
  io::writeIsmrmrd(phantom::simulate(ss), path);
  return path;
}

// The file again, through libismrmrd, with acquisition i stamped `first + 4 i` ticks (10 ms apart).
std::string stamped(const std::string& from, const std::string& name, std::uint32_t first) {
  const std::string path = tmpPath(name);
  ISMRMRD::Dataset in(from.c_str(), "dataset", false), out(path.c_str(), "dataset", true);
  std::string xml;
  in.readHeader(xml);
  out.writeHeader(xml);
  for (std::uint32_t i = 0; i < in.getNumberOfAcquisitions(); ++i) {
    ISMRMRD::Acquisition a;
    in.readAcquisition(i, a);
    a.acquisition_time_stamp() = first + 4 * i;
    out.appendAcquisition(a);
  }
  return path;
}

TEST(StreamReplay, TimeStampsSetTheSchedule) {
  const std::string plain = simulated("replay_plain.h5");
  const std::string path = stamped(plain, "replay_stamped.h5", 1000);
  const RecordedScan scan = recordScan(path);
  ASSERT_GT(scan.acquisitions.size(), 2u);
  const auto stamps = acquisitionTimeStamps(path);
  ASSERT_EQ(stamps.size(), scan.acquisitions.size());
  EXPECT_EQ(stamps[1], 1004u);
  EXPECT_EQ(scan.acquisitions[2].head.acquisition_time_stamp, 1008u);
  const auto at = acquisitionSchedule(scan, 0, path);
  EXPECT_DOUBLE_EQ(at[0], 0.0);
  EXPECT_DOUBLE_EQ(at[1], 10.0);
  EXPECT_DOUBLE_EQ(at.back(), 10.0 * static_cast<double>(at.size() - 1));
  // The same acquisitions as the file without stamps, otherwise.
  const RecordedScan bare = recordScan(plain);
  ASSERT_EQ(bare.acquisitions.size(), scan.acquisitions.size());
  EXPECT_EQ(bare.acquisitions[3].data, scan.acquisitions[3].data);
}

TEST(StreamReplay, NoTimeStampsTakeTheTrOrSaySo) {
  const std::string path = simulated("replay_nostamps.h5");
  const RecordedScan scan = recordScan(path);
  const auto at = acquisitionSchedule(scan, 3.0, path);
  EXPECT_DOUBLE_EQ(at[5], 15.0);
  try {
    acquisitionSchedule(scan, 0, path);
    FAIL() << "paced a scan with no pace";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no time stamps; give --tr MS"), std::string::npos) << e.what();
  }
}

TEST(StreamReplay, CflIsTheIsmrmrdFilesAcquisitions) {
  phantom::SimulateSettings ss;
  ss.matrix[0] = ss.matrix[1] = 16;
  ss.coils = 2;
  const Dataset d = phantom::simulate(ss);
  const std::string h5 = tmpPath("replay_same.h5"), cfl = tmpPath("replay_same.cfl");
  io::writeIsmrmrd(d, h5);
  io::writeCfl(cfl, d.kspace);
  const RecordedScan a = recordScan(h5), b = recordScan(cfl);
  ASSERT_EQ(a.acquisitions.size(), b.acquisitions.size());
  for (std::size_t i = 0; i < a.acquisitions.size(); ++i) EXPECT_EQ(a.acquisitions[i].data, b.acquisitions[i].data) << i;
  EXPECT_THROW(recordScan(h5, cfl), Error);  // --traj is for .cfl k-space
}

}  // namespace
}  // namespace larmor::stream
