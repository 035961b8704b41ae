// The anonymized provenance (larmor/util/provenance.hpp): what an anonymized DICOM export stores in its
// private tag and DerivationDescription. No date, host, path or file name at any depth, found by key and by
// the look of the value; the settings themselves (numbers, keywords, free text without paths) stay.
// Exported files end to end: tests/e2e/anonymize_paths.sh.
#include <gtest/gtest.h>

#include "larmor/util/provenance.hpp"

using namespace larmor;

TEST(Provenance, AnonymizedDropsEveryPathAtAnyDepth) {
  const nlohmann::json p = {
      {"software", "Larmor"},
      {"version", "0.1.0"},
      {"created_utc", "2026-11-22T14:03:00Z"},
      {"host", "ward7-workstation"},
      {"input", "/data/DOE_JOHN_1234/scan.h5"},
      {"device", {{"id", "cpu"}, {"name", "CPU (2 threads)"}}},
      {"settings",
       {{"method", "cg"},
        {"iterative",
         {{"reference", "/data/DOE_JOHN_1234/ref.cfl"},
          {"coil_maps", "DOE_JOHN_1234/cm.cfl"},
          {"cache_directory", "/home/doe/qcache"},
          {"iterations", 60},
          {"regularizer", "anatomical"}}}}},
      {"convergence", {{"coil_maps", "DOE_JOHN_1234/cm.cfl"}, {"reference", "ref"}, {"stop", "iterations"}}},
      {"notes", {"read DOE_JOHN_1234/extra.dat (kept)", "maps from cm.cfl.", "plain text, 2D: 32x32"}},
      {"some_future_key", "C:\\scans\\DOE.h5"},
      {"settings_file", "s.json"},
  };
  const nlohmann::json a = anonymizedProvenance(p);
  const std::string all = a.dump();
  EXPECT_EQ(all.find("DOE"), std::string::npos) << all;
  EXPECT_EQ(all.find('/'), std::string::npos) << all;
  EXPECT_EQ(all.find(".cfl"), std::string::npos) << all;
  EXPECT_EQ(all.find("ward7"), std::string::npos) << all;
  EXPECT_FALSE(a.contains("created_utc"));
  EXPECT_EQ(a["host"], "removed (anonymized)");
  EXPECT_EQ(a["input"], "removed (anonymized)");
  const auto& it = a["settings"]["iterative"];
  EXPECT_EQ(it["reference"], "removed (anonymized)");
  EXPECT_EQ(it["coil_maps"], "removed (anonymized)");
  EXPECT_EQ(it["cache_directory"], "removed (anonymized)");
  EXPECT_EQ(a["convergence"]["reference"], "removed (anonymized)");  // a path without an extension: by key
  EXPECT_EQ(a["some_future_key"], "removed (anonymized)");           // a path under any key: by its look
  EXPECT_EQ(a["settings_file"], "removed (anonymized)");
  EXPECT_EQ(a["notes"][0], "read <path removed> (kept)");
  EXPECT_EQ(a["notes"][1], "maps from <path removed>.");
  EXPECT_EQ(a["notes"][2], "plain text, 2D: 32x32");
  // What is not a path stays.
  EXPECT_EQ(a["version"], "0.1.0");
  EXPECT_EQ(a["device"]["name"], "CPU (2 threads)");
  EXPECT_EQ(it["iterations"], 60);
  EXPECT_EQ(it["regularizer"], "anatomical");
  EXPECT_EQ(a["settings"]["method"], "cg");
}

TEST(Provenance, AnonymizedKeepsTheKeywordsOfPathSettings) {
  const nlohmann::json p = {{"settings",
                             {{"iterative", {{"coil_maps", "espirit"}, {"cache_directory", ""}, {"reference", ""}}}}},
                            {"convergence", {{"coil_maps", "none (one coil)"}}}};
  const nlohmann::json a = anonymizedProvenance(p);
  EXPECT_EQ(a["settings"]["iterative"]["coil_maps"], "espirit");
  EXPECT_EQ(a["settings"]["iterative"]["cache_directory"], "");
  EXPECT_EQ(a["settings"]["iterative"]["reference"], "");
  EXPECT_EQ(a["convergence"]["coil_maps"], "none (one coil)");
}

TEST(Provenance, WhatLooksLikeAPath) {
  for (const char* w : {"/a", "a/b", "a\\b", "scan.h5", "cm.cfl", "x.nii", "IM_0001.dcm", "notes.txt", "a.b_c"})
    EXPECT_TRUE(looksLikePath(w)) << w;
  for (const char* w : {"0.1.0", "1.5", "3.0e-5", "1.2.840.10008.1.1", "espirit", "32x32", "v2", ".hidden", "a."})
    EXPECT_FALSE(looksLikePath(w)) << w;
  EXPECT_EQ(withoutPaths("see (DOE/x.cfl), then 'y.h5'; done"), "see (<path removed>), then '<path removed>'; done");
  EXPECT_EQ(withoutPaths("  two  spaces "), "  two  spaces ");
}
