// Input limits, engine side: the resource planner, a bad embedded reference is a
// warning, a z size on 2D data and --traj with ISMRMRD are errors, "not a number"
// is named as such, FIFO inputs refused, birth date/sex/study date carried into DICOM and no created_utc in an
// anonymized export. Named test_io_ismrmrd* so that LARMOR_IO=OFF builds skip it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "larmor/io/dataset_io.hpp"
#include "larmor/io/dicom.hpp"
#include "larmor/io/export.hpp"
#include "larmor/io/ismrmrd.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/resources.hpp"
#include "larmor/recon/settings_table.hpp"
#include "test_io_export_util.hpp"

using namespace larmor;
using namespace larmor::testing;

namespace {

Dataset phantom3d(index_t n = 16, index_t nz = 8, int coils = 4) {
  phantom::SimulateSettings s;
  s.matrix[0] = n, s.matrix[1] = n, s.matrix[2] = nz;
  s.coils = coils;
  return phantom::simulate(s);
}

// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const std::string& n, const std::string& v) : name(n) { ::setenv(n.c_str(), v.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

}  // namespace

// The issue's case, scaled: 128x128x64 x 8 coils to --matrix 1024x1024x256 needs tens of GB; the formula
// says so from the header alone, and checkMemory refuses with the estimate and the memory available.
TEST(Resources, TheIssuesCaseIsRefusedFromTheHeader) {
  Dataset header;
  header.source = "in3d.h5";
  Header& h = header.header;
  h.encoded[0] = 256, h.encoded[1] = 128, h.encoded[2] = 64;
  h.recon[0] = 128, h.recon[1] = 128, h.recon[2] = 64;
  h.encodedFovMm[0] = 512, h.reconFovMm[0] = 256;
  h.coils = 8;
  recon::ReconSettings s;
  s.keepCoilImages = false;  // as the CLI asks
  s.matrix[0] = 1024, s.matrix[1] = 1024, s.matrix[2] = 256;
  const recon::MemoryEstimate e = recon::estimateMemory(header, s, false);
  // The resample to 1024x1024x256 x 8 coils alone holds the images and the FFT's temporary: 2 x 17 GB.
  EXPECT_GT(e.hostBytes(), 34e9);
  EXPECT_LT(e.hostBytes(), 40e9);
  DeviceInfo cpu;
  cpu.id = "cpu";
  const ScopedEnv cap("LARMOR_MEMORY_LIMIT", std::to_string(16ull << 30));
  const std::string what = test::expectError([&] { recon::checkMemory(e, cpu, false); }, "of host memory");
  EXPECT_NE(what.find("GB available"), std::string::npos) << what;
  EXPECT_NE(what.find("--matrix"), std::string::npos) << what;
  // The header's own matrix fits easily.
  s.matrix[0] = s.matrix[1] = s.matrix[2] = 0;
  EXPECT_NO_THROW(recon::checkMemory(recon::estimateMemory(header, s, false), cpu, false));
}

// A GPU whose memory is too small: an error naming the device, or with --device auto the CPU instead.
TEST(Resources, SmallGpuFallsBackToTheCpuOnlyForAuto) {
  const Dataset d = phantom3d();
  recon::ReconSettings s;
  s.matrix[0] = s.matrix[1] = 256, s.matrix[2] = 64;
  DeviceInfo gpu;
  gpu.id = "cuda:0", gpu.gpu = true, gpu.memoryBytes = 64u << 20;
  test::expectError([&] { (void)recon::planMemory(d, s, gpu, false, true); }, "of memory on cuda:0");
  bool cpuInstead = false;
  const auto e = recon::planMemory(d, s, gpu, true, true, &cpuInstead);
  EXPECT_TRUE(cpuInstead);
  EXPECT_FALSE(e.onDevice);
}

// recon::run refuses before the work (the GUI gets the same line), and records the estimate otherwise.
TEST(Resources, RunRefusesUpFrontAndRecordsTheEstimate) {
  const Dataset d = phantom3d();
  recon::ReconRequest req;
  req.dataset = &d;
  req.device = "cpu";
  req.settings.matrix[0] = req.settings.matrix[1] = 4096, req.settings.matrix[2] = 512;
  const auto t0 = std::chrono::steady_clock::now();
  test::expectError([&] { (void)recon::run(req); }, "needs about");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  req.settings.matrix[0] = req.settings.matrix[1] = req.settings.matrix[2] = 0;
  const auto r = recon::run(req);
  ASSERT_TRUE(r.provenance.contains("memory"));
  EXPECT_GT(r.provenance["memory"]["estimated_host_bytes"].get<double>(), 0);
}

// A file on disk: the CLI's hook refuses after the header, before the samples are read.
TEST(Resources, LoaderHookSeesTheHeaderBeforeTheSamples) {
  const std::string dir = freshTestDir("limits");
  const Dataset d = phantom3d(32, 8, 4);
  io::writeIsmrmrd(d, dir + "/in3d.h5");
  io::LoadOptions lo;
  bool called = false;
  lo.beforeData = [&](const Dataset& h) {
    called = true;
    EXPECT_TRUE(h.kspace.empty());
    EXPECT_EQ(h.header.coils, 4);
    EXPECT_EQ(h.header.encoded[2], 8);
    recon::ReconSettings s;
    s.matrix[0] = s.matrix[1] = 8192, s.matrix[2] = 1024;
    DeviceInfo cpu;
    cpu.id = "cpu";
    (void)recon::planMemory(h, s, cpu, false, false);
  };
  test::expectError([&] { (void)io::loadDataset(dir + "/in3d.h5", lo); }, "needs about");
  EXPECT_TRUE(called);
}

// A reference with a NaN (or of the wrong size) costs the metrics, not the reconstruction.
TEST(BadReference, NanInTheEmbeddedReferenceIsAWarning) {
  const std::string dir = freshTestDir("limits");
  Dataset d = phantom3d(16, 1, 2);
  ASSERT_TRUE(d.reference.has_value());
  (*d.reference)[5] = cfloat(std::numeric_limits<float>::quiet_NaN(), 0.f);
  io::writeIsmrmrd(d, dir + "/nanref.h5");
  const Dataset back = io::loadDataset(dir + "/nanref.h5");
  ASSERT_EQ(back.warnings.size(), 1u);
  EXPECT_NE(back.warnings[0].find("nanref.h5"), std::string::npos) << back.warnings[0];
  EXPECT_NE(back.warnings[0].find("non-finite"), std::string::npos) << back.warnings[0];
  EXPECT_FALSE(back.reference.has_value());
  recon::ReconRequest req;
  req.dataset = &back;
  req.device = "cpu";
  EXPECT_EQ(recon::run(req).image.size(), 16 * 16);  // `info`'s read (structure only) describes the reference without reading its values: no warning there.
  io::LoadOptions lo;
  lo.structureOnly = true;
  const io::Series described = io::loadSeries(dir + "/nanref.h5", lo);
  EXPECT_TRUE(described.frames.at(0).warnings.empty());
  EXPECT_FALSE(described.frames.at(0).reference.has_value());
  EXPECT_TRUE(described.referenceShape.has_value());
}

TEST(BadReference, AnAllZeroReferenceSkipsTheMetricsWithAWarning) {
  Dataset d = phantom3d(16, 1, 2);
  for (index_t i = 0; i < d.reference->size(); ++i) (*d.reference)[i] = cfloat(0.f);
  recon::ReconRequest req;
  req.dataset = &d;
  req.device = "cpu";
  const auto r = recon::run(req);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("reference"), std::string::npos);
  EXPECT_TRUE(r.metrics.contains("skipped"));
}

// A z size in --matrix on 2D data, and --traj with an ISMRMRD file, are errors.
TEST(OptionsThatDoNotApply, ZMatrixOn2dDataAndTrajWithIsmrmrd) {
  const std::string dir = freshTestDir("limits");
  Dataset d = phantom3d(16, 1, 2);
  recon::ReconRequest req;
  req.dataset = &d;
  req.device = "cpu";
  req.settings.matrix[0] = req.settings.matrix[1] = 16, req.settings.matrix[2] = 4;
  test::expectError([&] { (void)recon::run(req); }, "2D data");
  io::writeIsmrmrd(d, dir + "/k.h5");
  io::LoadOptions lo;
  lo.trajectoryPath = dir + "/traj.cfl";
  test::expectError([&] { (void)io::loadDataset(dir + "/k.h5", lo); }, "--traj");
}

// NaN and inf are named as such, not as out of range.
TEST(SettingsMessages, NanIsNotANumber) {
  const auto& lambda = recon::settings::find("lambda");
  test::expectError([&] { (void)recon::settings::parse(lambda, "nan"); }, "--lambda nan: not a number");
  test::expectError([&] { (void)recon::settings::parse(lambda, "inf"); }, "not a finite number");
}

// A FIFO (any loader) is refused at once instead of blocking in open().
TEST(Inputs, FifoIsRefusedWithoutBlocking) {
  const std::string dir = freshTestDir("limits");
  for (const std::string name : {"/f.h5", "/f.cfl", "/f.ra"}) {
    ASSERT_EQ(::mkfifo((dir + name).c_str(), 0600), 0);
    if (name == "/f.cfl") {
      std::ofstream(dir + "/f.hdr") << "# Dimensions\n4 4 1 1\n";
    }
    test::expectError([&] { (void)io::loadDataset(dir + name); }, "not a regular file (a FIFO)");
  }
}

// Birth date, sex and study date from the header into DICOM; none of them, and no created_utc,
// in an anonymized export.
TEST(DicomFromHeader, BirthDateSexStudyDateAndAnonymizedProvenance) {
  const std::string dir = freshTestDir("limits");
  Dataset d = phantom3d(16, 1, 2);
  d.header.patientName = "Doe^Jane";
  d.header.patientBirthDate = "19700214";
  d.header.patientSex = "F";
  d.header.studyDate = "20240102";
  d.header.studyTime = "101500";
  io::writeIsmrmrd(d, dir + "/subject.h5");
  const Dataset back = io::loadDataset(dir + "/subject.h5");
  EXPECT_EQ(back.header.patientBirthDate, "19700214");
  EXPECT_EQ(back.header.patientSex, "F");
  EXPECT_EQ(back.header.studyDate, "20240102");
  recon::ReconRequest req;
  req.dataset = &back;
  req.device = "cpu";
  const auto r = recon::run(req);
  ASSERT_TRUE(r.provenance.contains("created_utc"));
  io::ExportOptions o;
  o.printWarnings = false;
  auto in = io::readDicomFile(io::writeImageOutput(dir + "/plain/", r, back, o).files.at(0));
  EXPECT_EQ(in.get(0x0010, 0x0030), "19700214");
  EXPECT_EQ(in.get(0x0010, 0x0040), "F");
  EXPECT_EQ(in.get(0x0008, 0x0020), "20240102");
  EXPECT_EQ(in.get(0x0008, 0x0030), "101500");
  o.anonymize = true;
  in = io::readDicomFile(io::writeImageOutput(dir + "/anon/", r, back, o).files.at(0));
  EXPECT_EQ(in.get(0x0010, 0x0030), "");
  EXPECT_EQ(in.get(0x0010, 0x0040), "");
  EXPECT_EQ(in.get(0x0008, 0x0020), "");
  EXPECT_EQ(nlohmann::json::parse(in.provenanceJson).contains("created_utc"), false);
}
