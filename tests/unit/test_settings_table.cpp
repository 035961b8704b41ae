// The settings table (larmor/recon/settings_table.hpp): every setting round-trips through JSON and the
// command line, every rule gives one line naming the flag, and larmor-cli offers every setting.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

#include "larmor/recon/settings_table.hpp"
#include "larmor/util/error.hpp"
#include "support/expect_error.hpp"

using namespace larmor;
using larmor::test::expectError;
namespace st = recon::settings;

namespace {

/// Settings with every value away from its default (each still valid), per method.
recon::ReconSettings changed(recon::Method m) {
  recon::ReconSettings s;
  s.method = m;
  s.combine = recon::Combine::Adaptive;
  s.matrix[0] = 96, s.matrix[1] = 80, s.matrix[2] = 1;
  s.nufft.width = 6;
  s.nufft.oversampling = 1.25;
  s.nufft.kernelTable = false;
  s.nufft.spreader = Spreader::Sector;
  s.nufft.dcf = recon::DensityCompensation::PipeMenon;
  s.nufft.dcfIterations = 7;
  s.nufft.trig = TrigMode::Recurrence;
  s.iterative.regularizer = ops::RegularizerKind::Anatomical;
  s.iterative.lambda = 0.025;
  s.iterative.iterations = 33;
  s.iterative.tolerance = 1e-5;
  s.iterative.referencePath = "ref image.cfl";
  s.iterative.toeplitz = recon::ToeplitzMethod::Dft;
  s.iterative.qTrig = recon::QTrig::Fast;
  s.iterative.calibrationRadius = 9;
  s.iterative.anatomicalDelta = 0.5;
  s.iterative.preconditioner = false;
  s.iterative.cacheDirectory = "none";
  s.iterative.multiGpu = false;
  s.grappa.calibration = recon::GrappaCalibration::Basic;
  s.grappa.blocks = 3;
  s.grappa.segment = 64;
  s.grappa.interpolateSegments = true;
  s.grappa.chi = 3e-3;
  s.grappa.eta = 0.5;
  s.grappa.kappa = 0.1;
  s.grappa.outCoils = 4;
  return s;
}

const recon::Method kMethods[] = {recon::Method::Fft, recon::Method::Gridding, recon::Method::Tron,
                                  recon::Method::Dft, recon::Method::Cg,       recon::Method::Grappa};

}  // namespace

TEST(SettingsTable, KeysAndFlagsAreUniqueAndEveryEntryIsComplete) {
  std::set<std::string> keys, flags;
  for (const st::Setting& s : st::table()) {
    EXPECT_TRUE(keys.insert(s.key).second) << s.key;
    if (!s.flag.empty()) EXPECT_TRUE(flags.insert(s.flag).second) << s.flag;
    EXPECT_FALSE(s.help.empty()) << s.key;
    EXPECT_FALSE(s.label.empty()) << s.key;
    EXPECT_TRUE(s.get && s.put) << s.key;
    if (s.scope == st::Scope::User) EXPECT_FALSE(s.flag.empty()) << s.key << " has no command-line flag";
    // The struct's default obeys the table's rule.
    EXPECT_NO_THROW(st::check(s, s.get(recon::ReconSettings{}))) << s.key;
  }
  EXPECT_GE(st::table().size(), 30u);
}

TEST(SettingsTable, JsonRoundTripsEverySetting) {
  const recon::ReconSettings s = changed(recon::Method::Cg);
  const nlohmann::json j = st::toJson(s);
  EXPECT_EQ(j["nufft"]["dcf"], "pipe-menon");
  EXPECT_EQ(j["grappa"]["kernel"], "4x5");
  EXPECT_EQ(j["iterative"]["preconditioner"], "none");
  EXPECT_EQ(j["matrix"], nlohmann::json({96, 80, 1}));
  const recon::ReconSettings back = st::fromJson(j);
  EXPECT_EQ(st::toJson(back), j);
}

TEST(SettingsTable, FromJsonKeepsTheBaseForMissingKeysAndReportsBadOnes) {
  recon::ReconSettings base = changed(recon::Method::Grappa);
  const nlohmann::json j = {{"nufft", {{"width", 99}, {"trig", "fast"}}}, {"iterative", {{"fhd", "fft"}}}};
  std::vector<std::string> problems;
  const recon::ReconSettings s = st::fromJson(j, base, &problems);
  EXPECT_EQ(s.nufft.trig, TrigMode::Fast);  // a good value is taken
  EXPECT_EQ(s.nufft.width, base.nufft.width);  // a bad one is not
  EXPECT_EQ(s.iterative.fhd, base.iterative.fhd);
  EXPECT_EQ(s.grappa.blocks, 3);  // missing keys keep the base
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("nufft.width"), std::string::npos) << problems[0];
  // Strict readers (a batch settings file) get the first problem as one error.
  expectError([&] { st::fromJson(j, base); }, "nufft.width");
}

TEST(SettingsTable, CommandLineRoundTripsWhatEachMethodUses) {
  for (recon::Method m : kMethods) {
    const recon::ReconSettings s = changed(m);
    const std::vector<std::string> args = st::toCliArguments(s);
    ASSERT_GE(args.size(), 2u);
    EXPECT_EQ(args[0], "--method");
    EXPECT_EQ(args[1], recon::toString(m));
    // Parse them back as a front end does: flag, then its value unless it is a Flag.
    recon::ReconSettings r;
    for (std::size_t i = 0; i < args.size(); ++i) {
      const st::Setting& e = st::find(args[i].substr(2));
      if (e.kind == st::Kind::Flag) e.put(r, e.flagSets);
      else st::set(r, e, args.at(++i));
    }
    for (const st::Setting& e : st::table()) {
      if (e.scope != st::Scope::User) continue;
      const bool used = e.usedBy(s) && !(e.kind == st::Kind::Text && std::get<std::string>(e.get(s)).empty());
      const st::Value want = used ? e.get(s) : e.get(recon::ReconSettings{});
      EXPECT_EQ(st::format(e, e.get(r)), st::format(e, want)) << recon::toString(m) << " " << e.key;
    }
  }
}

TEST(SettingsTable, ParseGivesOneLineNamingTheFlag) {
  const auto bad = [](const char* key, const char* text, const char* expect) {
    expectError([&] { st::parse(st::find(key), text); }, expect);
  };
  bad("width", "17", "--width 17: expected an integer 2..16");
  bad("width", "4.5", "--width 4.5: expected an integer");
  bad("lambda", "nan", "--lambda nan: not a number, expected a number >= 0");
  bad("lambda", "-1", "--lambda -1: expected a number >= 0");
  bad("kappa", "1", "--kappa 1: expected a number [0, 1)");
  bad("eta", "x", "--eta x: expected a number");
  bad("reg", "l1", "--reg l1: expected tikhonov, fd, anatomical, tv or wavelet");
  bad("dcf", "Ramp", "--dcf Ramp: expected auto, ramp, pipe-menon or none");
  bad("matrix", "0x4", "--matrix 0x4: expected N, NxN or NxNxN");
  bad("matrix", "4x4x4x4", "--matrix 4x4x4x4: expected N, NxN or NxNxN");
  bad("grappa-kernel", "4", "--grappa-kernel 4: expected AxB");
  bad("calibration-radius", "0", "--calibration-radius 0: expected a number (0, 1e+06]");
  EXPECT_THROW(st::find("no-such-setting"), Error);
  EXPECT_EQ(std::get<std::vector<long>>(st::parse(st::find("matrix"), "64")), (std::vector<long>{64, 64, 1}));
  EXPECT_EQ(std::get<std::vector<long>>(st::parse(st::find("matrix"), "64x32x8")), (std::vector<long>{64, 32, 8}));
}

TEST(SettingsTable, ValidateCatchesOutOfRangeStructs) {
  recon::ReconSettings s;
  EXPECT_NO_THROW(st::validate(s));
  s.grappa.kappa = 1.5;
  expectError([&] { st::validate(s); }, "--kappa 1.5");
  EXPECT_NO_THROW(st::validate(s, "nufft"));  // one group only
  s = {};
  s.iterative.iterations = 0;
  expectError([&] { st::validate(s); }, "--iters 0");
  s = {};
  s.matrix[0] = 70000;
  expectError([&] { st::validate(s); }, "--matrix");
}

TEST(SettingsTable, EnumNamesComeFromTheTable) {
  EXPECT_EQ(recon::toString(recon::Method::Grappa), "grappa");
  EXPECT_EQ(recon::methodFromString("tron"), recon::Method::Tron);
  EXPECT_EQ(recon::toString(recon::Combine::Adaptive), "adaptive");
  expectError([] { recon::methodFromString("sense"); }, "--method sense: expected fft, gridding, tron, dft, cg, grappa or cs");
  EXPECT_EQ(st::choiceName("nufft.dcf", static_cast<int>(recon::DensityCompensation::PipeMenon)), "pipe-menon");
}

TEST(SettingsTable, LarmorCliOffersEverySettingWithItsHelp) {
  FILE* p = popen((std::string(LARMOR_CLI) + " recon --help 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string help;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) help += buf;
  pclose(p);
  for (const st::Setting& s : st::table()) {
    if (s.scope != st::Scope::User) continue;
    EXPECT_NE(help.find(s.cliFlag()), std::string::npos) << s.cliFlag() << " missing from larmor-cli recon --help";
  }
  EXPECT_NE(help.find("default 4"), std::string::npos);  // defaults are shown
}
