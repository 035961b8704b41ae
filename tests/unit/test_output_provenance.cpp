// Output safety's replace rule (engine/include/larmor/io/output_safety.hpp, rule 5; docs/reliability.md
// "Never overwritten"): an existing output is replaced only when it is empty or a file Larmor's own writer
// made, recognised by the provenance inside it; every other file, whatever its name, is refused by
// checkOutputs and left unchanged. The command-line table is tests/e2e/output_safety_table.sh.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "larmor/io/cfl.hpp"
#include "larmor/io/output_safety.hpp"
#include "larmor/io/png.hpp"
#include "larmor/util/error.hpp"
#include "support/scratch_files.hpp"

namespace fs = std::filesystem;
using namespace larmor;
using namespace larmor::io;

namespace {

using larmor::testing::bytes;
using larmor::testing::put;

std::string dir(const std::string& name) { return larmor::testing::scratchDir("provenance", name); }

PlannedOutput out(const std::string& path, OutputRole role) {
  PlannedOutput o;
  o.path = path;
  o.role = role;
  return o;
}

std::string errorOf(const PlannedOutput& o, const std::vector<std::string>& inputs = {}) {
  try {
    checkOutputs({o}, inputs);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST(OutputProvenance, OurOwnWritersAreRecognised) {
  const std::string d = dir("ours");
  CArray a(Shape{4, 4});
  writeCfl(d + "/o.cfl", a);
  EXPECT_EQ(errorOf(out(d + "/o.cfl", OutputRole::Image)), "");
  EXPECT_EQ(errorOf(out(d + "/o.hdr", OutputRole::Kspace)), "");
  EXPECT_EQ(errorOf(out(d + "/o", OutputRole::Kspace)), "");  // a bare path stands for its pair
  EXPECT_EQ(readCfl(d + "/o").shape(), a.shape());            // the "# Creator" section is skipped
  Image8 img{2, 2, 1, std::vector<std::uint8_t>(4, 7)};
  writePng(d + "/p.png", img);
  EXPECT_EQ(errorOf(out(d + "/p.png", OutputRole::Image)), "");
  EXPECT_EQ(errorOf(out(d + "/p.png", OutputRole::Map)), "");
  put(d + "/r.json", withProvenance({{"percent_error", 1.5}}).dump());
  EXPECT_EQ(errorOf(out(d + "/r.json", OutputRole::Json)), "");
  put(d + "/s.json", R"({"larmor_settings": 1, "settings": {}})");
  EXPECT_EQ(errorOf(out(d + "/s.json", OutputRole::Json)), "");
  put(d + "/empty.json", "");
  EXPECT_EQ(errorOf(out(d + "/empty.json", OutputRole::Json)), "");
  put(d + "/l.nii", std::string("\x5c\x01\0\0", 4) + std::string(144, '\0') + "Larmor 0.1 method fft" +
                        std::string(179, '\0'));
  EXPECT_EQ(errorOf(out(d + "/l.nii", OutputRole::Image)), "");
}

TEST(OutputProvenance, ForeignFilesAreRefusedAndUnchanged) {
  const std::string d = dir("foreign");
  struct Case {
    std::string file, content;
    OutputRole role;
    std::string output;  // the output path given (defaults to file)
  };
  const std::vector<Case> cases = {
      {"py.hdr", "# Dimensions\n4 4 1 \n", OutputRole::Image, "py.cfl"},                 // BART's cfl.py
      {"bart.hdr", "# Dimensions\n4 4 \n# Creator\nBART 0.9.00\n", OutputRole::Kspace, "bart"},
      {"lone.cfl", std::string(128, '\0'), OutputRole::Image, ""},                      // no header at all
      {"notes.json", R"({"patient": "mine"})", OutputRole::Json, ""},
      {"fake.json", R"({"software": "Someone"})", OutputRole::Json, ""},
      {"gre.dat", std::string("twix\0\0\0\0", 8), OutputRole::Json, ""},
      {"photo.png", std::string("\x89PNG\r\n\x1a\n", 8) + "rest", OutputRole::Map, ""},
      {"brain.nii", std::string(348, '\0'), OutputRole::Image, ""},
      {"scan.h5", std::string("\x89HDF\r\n\x1a\n", 8) + "<name>other</name>", OutputRole::Kspace, ""},
  };
  for (const Case& c : cases) {
    const std::string path = d + "/" + c.file;
    put(path, c.content);
    const std::string e = errorOf(out(d + "/" + (c.output.empty() ? c.file : c.output), c.role));
    EXPECT_NE(e.find(c.file + ": exists and"), std::string::npos) << c.file << ": " << e;
    EXPECT_NE(e.find("Larmor replaces only a file it wrote itself"), std::string::npos) << e;
    EXPECT_EQ(bytes(path), c.content) << c.file;
  }
}

TEST(OutputProvenance, NonRegularFilesAreNeverRead) {
  const std::string d = dir("special");
  ASSERT_EQ(::mkfifo((d + "/pipe.json").c_str(), 0600), 0);
  EXPECT_NE(errorOf(out(d + "/pipe.json", OutputRole::Json)).find("not a regular file"), std::string::npos);
  fs::create_symlink(d + "/nowhere.json", d + "/dangling.json");
  EXPECT_NE(errorOf(out(d + "/dangling.json", OutputRole::Json)).find("broken symbolic link"), std::string::npos);
}

TEST(OutputProvenance, ReferenceAndMapsFilesAreInputs) {
  // A bare --traj-output or maps --output writes NAME.cfl/NAME.hdr: the input NAME.cfl is caught.
  const std::string d = dir("inputs");
  writeCfl(d + "/rt.cfl", CArray(Shape{3, 4, 2}));
  const std::string before = bytes(d + "/rt.cfl");
  EXPECT_NE(errorOf(out(d + "/rt", OutputRole::Kspace), {d + "/rt.cfl"}).find("is the input"), std::string::npos);
  EXPECT_NE(errorOf(out(d + "/rt.hdr", OutputRole::Json), {d + "/rt.cfl"}).find("is the input"), std::string::npos);
  EXPECT_EQ(bytes(d + "/rt.cfl"), before);
}
