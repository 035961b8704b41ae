// Updating a DICOM series folder never deletes a file Larmor did not write
// (engine/include/larmor/io/series_folder.hpp): a scanner's DICOM without Larmor's private creator, a
// text file named notes.dcm, an HDF5 file renamed data.dcm, a file not in the marker's list; with the
// marker as written now and with a marker from before the list. Refused before any work, the file named.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "larmor/io/export.hpp"
#include "larmor/io/output_safety.hpp"
#include "larmor/io/series_folder.hpp"
#include "larmor/util/error.hpp"
#include "support/scratch_files.hpp"

namespace fs = std::filesystem;
using namespace larmor;
using namespace larmor::io;

#ifdef LARMOR_HAVE_IO
namespace {

using larmor::testing::bytes;
using larmor::testing::put;

std::string dir(const std::string& name) { return larmor::testing::scratchDir("series-folder", name); }

recon::ReconResult image(float v) {
  recon::ReconResult r;
  r.image = CArray(Shape{8, 8, 1, 1, 2});
  for (index_t i = 0; i < r.image.size(); ++i) r.image[i] = cfloat(v + static_cast<float>(i % 5), 0);
  return r;
}

Dataset dataset() {
  Dataset ds;
  ds.source = "simulated";
  ds.header.encoded[0] = ds.header.encoded[1] = ds.header.recon[0] = ds.header.recon[1] = 8;
  return ds;
}

ExportOptions quiet() {
  ExportOptions o;
  o.printWarnings = false;
  return o;
}

std::string errorOf(const std::string& path, float v) {
  try {
    (void)writeImageOutput(path, image(v), dataset(), quiet());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct Foreign {
  const char* name;
  std::string content;
};

std::vector<Foreign> foreignFiles() {
  return {{"IM_0001.dcm", std::string(128, '\0') + "DICM" + "a scanner's image"},
          {"notes.dcm", "my notes about this series\n"},
          {"data.dcm", std::string("\x89HDF\r\n\x1a\n", 8) + "raw data"}};
}

}  // namespace

TEST(SeriesFolder, TheMarkerListsTheFilesAndOurOwnExportIsReplaced) {
  const std::string d = dir("own");
  const auto first = writeImageOutput(d + "/s/", image(1), dataset(), quiet());
  const std::string marker = bytes(d + "/s/" + std::string(kExportMarker));
  ASSERT_NE(marker.find("\nfiles:\n"), std::string::npos) << marker;
  for (const auto& f : first.files) EXPECT_NE(marker.find("\n" + fs::path(f).filename().string() + "\n"), std::string::npos) << f;
  EXPECT_EQ(errorOf(d + "/s/", 2), "");
  EXPECT_TRUE(fs::exists(first.files.front()));
  for (const auto& e : fs::directory_iterator(d))
    EXPECT_EQ(e.path().filename().string(), "s") << "left beside the series: " << e.path();
}

TEST(SeriesFolder, AFileLarmorDidNotWriteIsNamedAndKept) {
  for (const bool oldMarker : {false, true}) {
    for (const auto& f : foreignFiles()) {
      const std::string d = dir(std::string(oldMarker ? "old-" : "") + f.name);
      const auto first = writeImageOutput(d + "/s/", image(1), dataset(), quiet());
      if (oldMarker)  // an export made before the marker listed its files
        put(d + "/s/" + std::string(kExportMarker), "Larmor 0.9 DICOM export; a later export may replace this folder.\n");
      put(d + "/s/" + f.name, f.content);
      const std::string err = errorOf(d + "/s/", 2);
      EXPECT_NE(err.find(std::string("'") + f.name + "'"), std::string::npos) << f.name << ": " << err;
      EXPECT_NE(err.find("Larmor did not write"), std::string::npos) << err;
      EXPECT_EQ(bytes(d + "/s/" + f.name), f.content) << f.name;
      for (const auto& ours : first.files) EXPECT_TRUE(fs::exists(ours)) << ours;
      // The check before the work says the same (recon calls it through checkOutputs).
      EXPECT_THROW(checkOutputPath(d + "/s/", quiet()), Error);
    }
  }
}

TEST(SeriesFolder, OurFileOverwrittenByAnotherIsNotOurs) {
  const std::string d = dir("overwritten");
  const auto first = writeImageOutput(d + "/s/", image(1), dataset(), quiet());
  put(first.files.front(), "a user's text under our name");
  const std::string err = errorOf(d + "/s/", 2);
  EXPECT_NE(err.find(fs::path(first.files.front()).filename().string()), std::string::npos) << err;
  EXPECT_EQ(bytes(first.files.front()), "a user's text under our name");
}

TEST(SeriesFolder, RemovingAPreviousSeriesKeepsWhatAppearedLater) {
  const std::string d = dir("remove");
  const auto first = writeImageOutput(d + "/s/", image(1), dataset(), quiet());
  put(d + "/s/late.txt", "added during an export");
  const auto left = removeLarmorSeries(d + "/s");
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left.front(), "late.txt");
  EXPECT_EQ(bytes(d + "/s/late.txt"), "added during an export");
  for (const auto& ours : first.files) EXPECT_FALSE(fs::exists(ours)) << ours;
}
#endif
