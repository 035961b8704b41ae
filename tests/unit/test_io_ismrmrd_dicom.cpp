// DICOM export (DCMTK): every file validates with dciodvfy (no "Error" lines), the series with dcentvfy;
// pixels, geometry (oblique too), patient/study data, anonymization and provenance read back; a
// failing export leaves nothing. Named test_io_ismrmrd* so that LARMOR_IO=OFF builds skip it.
#include <filesystem>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>

#include "larmor/io/dicom.hpp"
#include "larmor/io/export.hpp"
#include "test_io_export_util.hpp"

using namespace larmor;
using namespace larmor::testing;

namespace {

bool haveTool(const char* tool) {
  return std::system((std::string("command -v ") + tool + " >/dev/null 2>&1").c_str()) == 0;
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return "popen failed";
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  pclose(p);
  return out;
}

std::vector<std::string> errorLines(const std::string& output) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < output.size()) {
    const std::size_t end = std::min(output.find('\n', start), output.size());
    const std::string line = output.substr(start, end - start);
    if (line.rfind("Error", 0) == 0) lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

// dciodvfy on every file and dcentvfy on the lot: no "Error" lines.
void expectValid(const std::vector<std::string>& files) {
  // The validators are test tools (installer/install-deps.sh installs dicom3tools): their absence fails.
  ASSERT_TRUE(haveTool("dciodvfy") && haveTool("dcentvfy"))
      << "dicom3tools (dciodvfy, dcentvfy) not installed: run installer/install-deps.sh";
  std::string all;
  for (const auto& f : files) {
    const std::string out = run("dciodvfy '" + f + "'");
    EXPECT_TRUE(errorLines(out).empty()) << f << ":\n" << out;
    EXPECT_NE(out.find("MRImage"), std::string::npos) << out;  // it recognised the IOD
    all += " '" + f + "'";
  }
  const std::string ent = run("dcentvfy" + all);
  EXPECT_TRUE(errorLines(ent).empty()) << ent;
}

std::vector<io::DicomInstance> readSeries(const std::vector<std::string>& files, const std::string& component) {
  std::vector<io::DicomInstance> out;
  for (const auto& f : files)
    if (fs::path(f).filename().string().rfind(component + "_", 0) == 0) out.push_back(io::readDicomFile(f));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::stoi(a.get(0x0020, 0x0013)) < std::stoi(b.get(0x0020, 0x0013));
  });
  return out;
}

std::vector<double> numbers(const std::string& s) {
  std::vector<double> v;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t end = std::min(s.find('\\', start), s.size());
    if (end > start) v.push_back(std::stod(s.substr(start, end - start)));
    start = end + 1;
  }
  return v;
}

std::vector<std::string> listDir(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

io::ExportOptions allComponents() {
  io::ExportOptions o;
  o.components = {"magnitude", "phase", "real", "imaginary"};
  o.printWarnings = false;
  return o;
}

// Tag shorthands (group, element).
constexpr std::uint16_t G8 = 0x0008, G10 = 0x0010, G12 = 0x0012, G18 = 0x0018, G20 = 0x0020, G28 = 0x0028;

}  // namespace

TEST(IoDicom, MultiSliceSeriesValidatesAndPixelsRoundTrip) {
  const std::string dir = freshTestDir("io-dicom");
  auto rc = reconstructPhantom(16, 12, 1, 3);
  addPhaseRamp(rc.r);
  const auto report = io::writeImageOutput(dir + "/series/", rc.r, rc.d, allComponents());
  EXPECT_EQ(report.kind, io::OutputKind::Dicom);
  EXPECT_EQ(report.path, dir + "/series");
  ASSERT_EQ(report.files.size(), 12u);
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"series"});  // no temporaries left
  expectValid(report.files);

  std::set<std::string> seriesUids, sopUids;
  for (const char* comp : {"magnitude", "phase", "real", "imaginary"}) {
    const auto series = readSeries(report.files, comp);
    ASSERT_EQ(series.size(), 3u) << comp;
    const RArray want = io::extractComponent(rc.r.image, io::componentFromString(comp));
    for (index_t s = 0; s < 3; ++s) {
      const io::DicomInstance& in = series[static_cast<std::size_t>(s)];
      EXPECT_EQ(in.get(G8, 0x0016), io::kMrImageStorageUid);
      EXPECT_EQ(in.rows, 12);
      EXPECT_EQ(in.columns, 16);
      EXPECT_EQ(in.signedPixels, std::string(comp) != "magnitude");
      std::string component = comp;
      std::transform(component.begin(), component.end(), component.begin(), ::toupper);
      EXPECT_EQ(in.get(G8, 0x0008), "DERIVED\\SECONDARY\\OTHER\\" + component);
      EXPECT_EQ(in.get(G8, 0x9208), component);
      EXPECT_EQ(in.get(G18, 0x0023), "2D");
      // Within the 16-bit quantisation: |error| <= slope / 2.
      const double slope = std::stod(in.get(G28, 0x1053));
      ASSERT_EQ(in.pixels.size(), 16u * 12);
      double worst = 0;
      for (index_t i = 0; i < 16 * 12; ++i)
        worst = std::max(worst, std::abs(in.value(i) - static_cast<double>(want[s * 16 * 12 + i])));
      EXPECT_LE(worst, slope / 2 * (1 + 1e-6) + 1e-7) << comp << " slice " << s << " slope " << slope;
      seriesUids.insert(in.get(G20, 0x000e));
      sopUids.insert(in.get(G8, 0x0018));
      EXPECT_EQ(in.get(G20, 0x000d), series[0].get(G20, 0x000d));  // one study
      EXPECT_EQ(in.get(G20, 0x0052), series[0].get(G20, 0x0052));  // one frame of reference
    }
  }
  EXPECT_EQ(seriesUids.size(), 4u);  // a series per component
  EXPECT_EQ(sopUids.size(), 12u);
  const std::regex uid(R"(2\.25\.[1-9][0-9]*)");
  for (const auto& u : sopUids) {
    EXPECT_TRUE(std::regex_match(u, uid)) << u;
    EXPECT_LE(u.size(), 64u);
  }
}

TEST(IoDicom, VolumeAndAnonymizedSeriesValidate) {
  const std::string dir = freshTestDir("io-dicom");
  auto rc = reconstructPhantom(16, 12, 8, 1);
  rc.d.header.patientName = "Doe^Jane";
  rc.d.header.patientId = "MRN-0042";
  rc.d.header.studyDescription = "Brain";
  io::ExportOptions o;
  o.anonymize = true;
  o.printWarnings = false;
  o.seriesDescription = "cg lambda 0.01";
  const auto report = io::writeImageOutput(dir + "/vol/", rc.r, rc.d, o);
  ASSERT_EQ(report.files.size(), 8u);  // one file per partition
  expectValid(report.files);
  const auto series = readSeries(report.files, "magnitude");
  const std::string everything = [&] {
    std::string s;
    for (const auto& f : report.files) s += slurpFile(f);
    return s;
  }();
  EXPECT_EQ(everything.find("Doe"), std::string::npos);
  EXPECT_EQ(everything.find("MRN-0042"), std::string::npos);
  EXPECT_EQ(everything.find("Brain"), std::string::npos);
  EXPECT_EQ(everything.find(rc.d.source == "simulated" ? "\"input\":\"simulated\"" : rc.d.source), std::string::npos);
  for (const auto& in : series) {
    EXPECT_EQ(in.get(G18, 0x0023), "3D");
    EXPECT_EQ(in.get(G12, 0x0062), "YES");
    EXPECT_FALSE(in.get(G12, 0x0063).empty());
    EXPECT_EQ(in.get(G10, 0x0010), "ANONYMIZED^PATIENT");
    EXPECT_EQ(in.get(G8, 0x0020), "");  // study date
    EXPECT_EQ(in.values.count((0x0008u << 16) | 0x0023), 0u);  // no content date
    EXPECT_EQ(in.get(G8, 0x103e), "cg lambda 0.01");
    const auto prov = nlohmann::json::parse(in.provenanceJson);
    EXPECT_EQ(prov["input"], "removed (anonymized)");
    EXPECT_EQ(prov["host"], "removed (anonymized)");
    EXPECT_EQ(prov["settings"], rc.r.provenance["settings"]);
  }
}

TEST(IoDicom, GeometryRoundTripsObliqueMultiSlice) {
  const std::string dir = freshTestDir("io-dicom");
  auto rc = reconstructPhantom(16, 12, 1, 3);
  setObliqueGeometry(rc.d.header, 6.5);
  io::ExportOptions o;
  o.printWarnings = false;
  const auto report = io::writeImageOutput(dir + "/obl/", rc.r, rc.d, o);
  EXPECT_TRUE(report.warnings.empty());
  expectValid(report.files);
  const auto series = readSeries(report.files, "magnitude");
  ASSERT_EQ(series.size(), 3u);
  const Geometry& g = rc.d.header.geometry;
  for (index_t s = 0; s < 3; ++s) {
    const auto& in = series[static_cast<std::size_t>(s)];
    const auto iop = numbers(in.get(G20, 0x0037));
    const auto ipp = numbers(in.get(G20, 0x0032));
    const auto spacing = numbers(in.get(G28, 0x0030));
    ASSERT_EQ(iop.size(), 6u);
    ASSERT_EQ(ipp.size(), 3u);
    ASSERT_EQ(spacing.size(), 2u);
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(iop[static_cast<std::size_t>(k)], g.readDir[k], 1e-6);       // along a row: readout
      EXPECT_NEAR(iop[static_cast<std::size_t>(3 + k)], g.phaseDir[k], 1e-6);  // down a column: phase
    }
    EXPECT_NEAR(spacing[0], 256.0 / 12, 1e-6);  // row spacing (between rows) first
    EXPECT_NEAR(spacing[1], 256.0 / 16, 1e-6);
    EXPECT_NEAR(std::stod(in.get(G18, 0x0050)), 4, 1e-9);       // SliceThickness
    EXPECT_NEAR(std::stod(in.get(G18, 0x0088)), 6.5, 1e-4);     // SpacingBetweenSlices
    // ImagePositionPatient is pixel (0,0)'s centre: walking to pixel (8, 6) must reach the slice centre.
    const auto centre = sliceCentre(rc.d.header, s);
    for (int k = 0; k < 3; ++k) {
      const double p = ipp[static_cast<std::size_t>(k)] + 8 * spacing[1] * iop[static_cast<std::size_t>(k)] +
                       6 * spacing[0] * iop[static_cast<std::size_t>(3 + k)];
      EXPECT_NEAR(p, centre[static_cast<std::size_t>(k)], 1e-3) << "slice " << s << " axis " << k;
    }
  }
}

TEST(IoDicom, PatientStudyDataAndProvenance) {
  const std::string dir = freshTestDir("io-dicom");
  auto rc = reconstructPhantom(8, 8, 1, 1);
  io::ExportOptions o;
  o.printWarnings = false;
  o.windowCenter = 0.3f, o.windowWidth = 0.5f;
  auto report = io::writeImageOutput(dir + "/a/", rc.r, rc.d, o);
  auto in = io::readDicomFile(report.files.at(0));
  EXPECT_EQ(in.get(G10, 0x0010), "LARMOR^PHANTOM");  // the simulator's data: a marked placeholder
  EXPECT_EQ(in.get(G10, 0x0020), "LARMOR-PHANTOM");
  EXPECT_EQ(in.get(G8, 0x0060), "MR");
  EXPECT_EQ(in.get(G8, 0x0070), "Larmor");
  EXPECT_EQ(in.get(G8, 0x103e), "Larmor fft");
  EXPECT_NE(in.get(G8, 0x2111).find("method fft"), std::string::npos) << in.get(G8, 0x2111);
  EXPECT_NEAR(std::stod(in.get(G28, 0x1050)), 0.3, 1e-6);
  EXPECT_NEAR(std::stod(in.get(G28, 0x1051)), 0.5, 1e-6);
  EXPECT_EQ(in.get(G28, 0x1055), "USER");
  // The provenance travels whole except what identifies the site: no host name, and
  // the raw data's file name without its folder.
  nlohmann::json expected = rc.r.provenance;
  expected.erase("host");
  expected["input"] = std::filesystem::path(expected["input"].get<std::string>()).filename().string();
  EXPECT_EQ(nlohmann::json::parse(in.provenanceJson), expected);
  EXPECT_FALSE(nlohmann::json::parse(in.provenanceJson).contains("host"));
  EXPECT_EQ(in.get(G8, 0x0005), "");  // ASCII only: no character set needed

  rc.d.header.patientName = "Müller^Jürgen";
  rc.d.header.patientId = "ID\\with\\backslashes";
  rc.d.header.studyDescription = std::string(100, 'S');
  o = {};
  o.printWarnings = false;
  report = io::writeImageOutput(dir + "/b/", rc.r, rc.d, o);
  expectValid(report.files);
  in = io::readDicomFile(report.files.at(0));
  EXPECT_EQ(in.get(G8, 0x0005), "ISO_IR 192");
  EXPECT_EQ(in.get(G10, 0x0010), "Müller^Jürgen");
  EXPECT_EQ(in.get(G10, 0x0020), "ID/with/backslashes");  // '\' is DICOM's value delimiter
  EXPECT_EQ(in.get(G8, 0x1030).size(), 64u);              // LO's limit
  EXPECT_EQ(in.get(G28, 0x1055), "AUTOMATIC");
}

// The user's patient and study fields, a study UID shared by exports and the series number: written as set,
// the next component's series one number on; anonymization overrides them all; invalid values refused.
TEST(IoDicom, PatientFieldsStudyUidAndSeriesNumber) {
  const std::string dir = freshTestDir("io-dicom-fields");
  auto rc = reconstructPhantom(8, 8, 1, 1);
  io::ExportOptions o;
  o.printWarnings = false;
  o.patientName = "DOE^JANE", o.patientId = "P-0042", o.accessionNumber = "ACC123";
  o.studyDescription = "Brain research";
  o.studyInstanceUid = io::newDicomUid();
  o.seriesNumber = 7;
  o.components = {"magnitude", "phase"};
  auto report = io::writeImageOutput(dir + "/a/", rc.r, rc.d, o);
  expectValid(report.files);
  const auto mag = readSeries(report.files, "magnitude"), phase = readSeries(report.files, "phase");
  ASSERT_FALSE(mag.empty());
  ASSERT_FALSE(phase.empty());
  EXPECT_EQ(mag[0].get(G10, 0x0010), "DOE^JANE");
  EXPECT_EQ(mag[0].get(G10, 0x0020), "P-0042");
  EXPECT_EQ(mag[0].get(G8, 0x0050), "ACC123");
  EXPECT_EQ(mag[0].get(G8, 0x1030), "Brain research");
  EXPECT_EQ(mag[0].get(G20, 0x000d), o.studyInstanceUid);
  EXPECT_EQ(mag[0].get(G20, 0x0011), "7");
  EXPECT_EQ(phase[0].get(G20, 0x0011), "8");
  EXPECT_EQ(phase[0].get(G20, 0x000d), o.studyInstanceUid);

  o.anonymize = true;
  report = io::writeImageOutput(dir + "/anon/", rc.r, rc.d, o);
  const auto anon = readSeries(report.files, "magnitude");
  ASSERT_FALSE(anon.empty());
  EXPECT_EQ(anon[0].get(G10, 0x0010), "ANONYMIZED^PATIENT");
  EXPECT_EQ(anon[0].get(G8, 0x0050), "");
  EXPECT_EQ(anon[0].get(G8, 0x1030), "");

  io::ExportOptions bad;
  bad.studyInstanceUid = "not a uid";
  EXPECT_THROW(io::checkOutputPath(dir + "/c/", bad), Error);
  bad = {};
  bad.seriesNumber = -1;
  EXPECT_THROW(io::checkOutputPath(dir + "/c/", bad), Error);
}

TEST(IoDicom, NoGeometryWarnsAndStillValidates) {
  const std::string dir = freshTestDir("io-dicom");
  auto rc = reconstructPhantom(8, 8, 1, 2);
  rc.d.header.geometry.present = false;
  rc.d.header.deviceDescription.clear();
  rc.d.source = "scan.cfl";  // not the simulator's: the placeholder says unknown, not phantom
  io::ExportOptions o;
  o.printWarnings = false;
  const auto report = io::writeImageOutput(dir + "/s/", rc.r, rc.d, o);
  ASSERT_FALSE(report.warnings.empty());
  EXPECT_NE(report.warnings[0].find("no geometry"), std::string::npos);
  expectValid(report.files);
  EXPECT_EQ(io::readDicomFile(report.files[0]).get(G10, 0x0010), "LARMOR^UNKNOWN");
}

TEST(IoDicom, FailedExportLeavesNothing) {
  const std::string dir = freshTestDir("io-dicom");
  const auto rc = reconstructPhantom(8, 8, 1, 3);
  // A failure after some files were written (a throwing progress callback stands for a full disk).
  int calls = 0;
  const Progress failing([&](double, const std::string&) {
    if (++calls == 4) throw Error("injected failure");
  });
  expectError([&] { io::writeImageOutput(dir + "/s/", rc.r, rc.d, allComponents(), failing); },
                    "injected failure");
  EXPECT_GE(calls, 4);
  EXPECT_TRUE(fs::is_empty(dir)) << listDir(dir).front();
  // Cancellation likewise.
  CancelToken token;
  const Progress cancelling([&](double f, const std::string&) {
    if (f > 0.3) token.cancel();
  }, &token);
  EXPECT_THROW(io::writeImageOutput(dir + "/s/", rc.r, rc.d, allComponents(), cancelling), Cancelled);
  EXPECT_TRUE(fs::is_empty(dir));
  // A parent that does not exist, or is a file: refused before anything is written.
  expectError([&] { io::writeImageOutput(dir + "/no/s/", rc.r, rc.d); }, "does not exist");
  std::ofstream(dir + "/file") << "x";
  expectError([&] { io::writeImageOutput(dir + "/file/s/", rc.r, rc.d); }, "does not exist");
  expectError([&] { io::writeImageOutput(dir + "/file", rc.r, rc.d); }, "unsupported output");
  // An unwritable parent (meaningless for root, who may write anywhere).
  if (geteuid() != 0) {
    fs::create_directory(dir + "/ro");
    fs::permissions(dir + "/ro", fs::perms::owner_read | fs::perms::owner_exec);
    expectError([&] { io::writeImageOutput(dir + "/ro/s/", rc.r, rc.d); }, "cannot write in");
    fs::permissions(dir + "/ro", fs::perms::owner_all);
  }
  fs::remove(dir + "/file");
  fs::remove_all(dir + "/ro");
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(IoDicom, ReplacesAPreviousExportButNeverForeignFiles) {
  const std::string dir = freshTestDir("io-dicom");
  const auto rc = reconstructPhantom(8, 8, 1, 2);
  io::ExportOptions o;
  o.printWarnings = false;
  io::writeImageOutput(dir + "/s/", rc.r, rc.d, allComponents());
  EXPECT_EQ(listDir(dir + "/s").size(), 9u);  // 8 instances and the marker .larmor-export
  // An existing directory without a trailing slash is a DICOM target too; the old series is replaced.
  io::checkOutputPath(dir + "/s");
  const auto report = io::writeImageOutput(dir + "/s", rc.r, rc.d, o);
  EXPECT_EQ(listDir(dir + "/s"),
            (std::vector<std::string>{".larmor-export", "magnitude_0001.dcm", "magnitude_0002.dcm"}));
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"s"});
  // A failing export over a previous one keeps the previous one.
  const Progress failing([](double, const std::string&) { throw Error("injected failure"); });
  expectError([&] { io::writeImageOutput(dir + "/s/", rc.r, rc.d, allComponents(), failing); }, "injected");
  EXPECT_EQ(listDir(dir + "/s").size(), 3u);
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"s"});
  // A directory holding anything else is the user's: refused before the reconstruction would run.
  fs::create_directory(dir + "/mine");
  std::ofstream(dir + "/mine/notes.txt") << "keep me";
  expectError([&] { io::checkOutputPath(dir + "/mine/"); }, "holds 'notes.txt'");
  expectError([&] { io::writeImageOutput(dir + "/mine/", rc.r, rc.d, o); }, "holds 'notes.txt'");
  EXPECT_EQ(listDir(dir + "/mine"), std::vector<std::string>{"notes.txt"});
  // An empty directory is simply filled.
  fs::create_directory(dir + "/empty");
  io::writeImageOutput(dir + "/empty/", rc.r, rc.d, o);
  EXPECT_EQ(listDir(dir + "/empty").size(), 3u);
}

TEST(IoDicom, UidsAreUniqueUuidDerived) {
  std::set<std::string> seen;
  for (int i = 0; i < 2000; ++i) {
    const std::string u = io::newDicomUid();
    ASSERT_LE(u.size(), 64u);
    ASSERT_EQ(u.rfind("2.25.", 0), 0u);
    ASSERT_NE(u[5], '0');
    ASSERT_TRUE(seen.insert(u).second) << u;
  }
}
