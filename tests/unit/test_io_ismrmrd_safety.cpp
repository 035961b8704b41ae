// Header values and indices the ISMRMRD reader must refuse instead of reading a wrong
// image: XML matrix sizes beyond libismrmrd's 16 bits (they used to wrap: 1000000000 -> 51712), slice
// indices beyond the header's encoding limits (empty slices at one position), an all-zero trajectory.
#include <gtest/gtest.h>
#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/version.h>
#include <ismrmrd/xml.h>

#include <filesystem>
#include <sstream>

#include "larmor/io/dataset_io.hpp"
#include "larmor/util/error.hpp"

namespace fs = std::filesystem;
using namespace larmor;

namespace {

std::string testDir() {
  const std::string d = std::string(LARMOR_TEST_TMP) + "/ismrmrd-safety";
  fs::create_directories(d);
  return d;
}

ISMRMRD::IsmrmrdHeader cartesianHeader(unsigned short n, ISMRMRD::TrajectoryType t = ISMRMRD::TrajectoryType::CARTESIAN) {
  ISMRMRD::IsmrmrdHeader h;
  h.version = ISMRMRD_XMLHDR_VERSION;
  h.experimentalConditions.H1resonanceFrequency_Hz = 63500000;
  ISMRMRD::Encoding e;
  e.encodedSpace.matrixSize = ISMRMRD::MatrixSize(n, n, 1);
  e.encodedSpace.fieldOfView_mm = {256, 256, 5};
  e.reconSpace = e.encodedSpace;
  e.encodingLimits.kspace_encoding_step_1 = ISMRMRD::Limit(0, n - 1, n / 2);
  e.encodingLimits.slice = ISMRMRD::Limit(0, 0, 0);
  e.trajectory = t;
  h.encoding.push_back(e);
  return h;
}

// Writes `xml` and one acquisition per phase-encoding line (index `slice`), or radial spokes with
// all-zero coordinates.
void writeFile(const std::string& path, const std::string& xml, unsigned short n, unsigned short slice = 0,
               bool radialZeroTrajectory = false) {
  fs::remove(path);
  ISMRMRD::Dataset ds(path.c_str(), "dataset", true);
  ds.writeHeader(xml);
  for (unsigned short k = 0; k < n; ++k) {
    ISMRMRD::Acquisition a(n, 1, radialZeroTrajectory ? 2 : 0);
    a.idx().kspace_encode_step_1 = k;
    a.idx().slice = slice;
    a.center_sample() = n / 2;
    for (auto* p = a.data_begin(); p != a.data_end(); ++p) *p = std::complex<float>(1.f, 0.5f);
    if (radialZeroTrajectory)
      for (auto* p = a.traj_begin(); p != a.traj_end(); ++p) *p = 0.f;
    ds.appendAcquisition(a);
  }
}

std::string serialize(const ISMRMRD::IsmrmrdHeader& h) {
  std::ostringstream s;
  ISMRMRD::serialize(h, s);
  return s.str();
}

std::string loadError(const std::string& path) {
  try {
    (void)io::loadDataset(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(IoIsmrmrdSafety, MatrixSizeBeyond16BitsIsRefusedNotWrapped) {
  const std::string path = testDir() + "/wrap.h5";
  const std::string good = serialize(cartesianHeader(16));
  const std::string from = "<x>16</x>";  // the first <x>: encodedSpace's matrixSize
  ASSERT_NE(good.find(from), std::string::npos) << good;
  for (const std::string bad : {"1000000000", "-5", "65536"}) {
    std::string xml = good;
    xml.replace(xml.find(from), from.size(), "<x>" + bad + "</x>");
    writeFile(path, xml, 16);
    const std::string e = loadError(path);
    EXPECT_NE(e.find("<matrixSize><x> is '" + bad + "'"), std::string::npos) << e;
    EXPECT_NE(e.find("65535"), std::string::npos) << e;
  }
  writeFile(path, good, 16);
  EXPECT_EQ(loadError(path), "");
}

TEST(IoIsmrmrdSafety, SliceIndexBeyondTheHeaderIsRefused) {
  const std::string path = testDir() + "/slice.h5";
  writeFile(path, serialize(cartesianHeader(16)), 16, 9);
  const std::string e = loadError(path);
  EXPECT_NE(e.find("slice index 9"), std::string::npos) << e;
  EXPECT_NE(e.find("allow slices 0..0"), std::string::npos) << e;
}

TEST(IoIsmrmrdSafety, AllZeroTrajectoryIsRefused) {
  const std::string path = testDir() + "/zero-traj.h5";
  writeFile(path, serialize(cartesianHeader(16, ISMRMRD::TrajectoryType::RADIAL)), 16, 0, true);
  const std::string e = loadError(path);
  EXPECT_NE(e.find("all zeros"), std::string::npos) << e;
}
