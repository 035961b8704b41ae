// `larmor-cli bench`'s targets (bench/src/bench_references.cpp, benchTarget) and how the table prints them
// (bench_report.cpp): an absolute target is judged on any GPU; the FFTs' (1.15 x cuFFT alone, a ratio measured on an
// H100) only on an H100, elsewhere shown as not judged rather than as "NOT met" against another card's figure.
#include <gtest/gtest.h>

#include "larmor/bench/bench.hpp"

using larmor::recon::benchTarget;
using larmor::recon::formatBenchTable;

TEST(BenchTarget, AbsoluteTargetsAreJudgedOnAnyGpu) {
  const auto met = benchTarget("nufft2d-adjoint", 0.161, 0.56, "NVIDIA H200");
  ASSERT_TRUE(met.is_object());
  EXPECT_DOUBLE_EQ(met["ms"].get<double>(), 8 * 0.040);
  EXPECT_EQ(met["kind"], "device");
  EXPECT_EQ(met["met"], true);
  EXPECT_FALSE(met.contains("not_judged"));
  EXPECT_EQ(benchTarget("nufft2d-adjoint", 0.40, 0.8, "NVIDIA H200")["met"], false);
  // host-to-host targets take the host-to-host median
  EXPECT_EQ(benchTarget("sense-cg", 20.0, 9.0, "NVIDIA H100 80GB HBM3")["met"], true);
  EXPECT_EQ(benchTarget("sense-cg", 5.0, 11.0, "NVIDIA H100 80GB HBM3")["met"], false);
  EXPECT_TRUE(benchTarget("copy", 0.14, 10.0, "NVIDIA H200").is_null());
  EXPECT_TRUE(benchTarget("no-such-workload", 1, 1, "NVIDIA H200").is_null());
}

TEST(BenchTarget, RatioTargetsAreJudgedOnTheirDeviceOnly) {
  EXPECT_EQ(benchTarget("fft3d-128", 0.031, 0.7, "NVIDIA H100 80GB HBM3")["met"], true);
  EXPECT_EQ(benchTarget("fft3d-128", 0.050, 0.7, "NVIDIA H100 80GB HBM3")["met"], false);
  const auto other = benchTarget("fft3d-128", 0.041, 0.7, "NVIDIA H200");
  ASSERT_TRUE(other.is_object());
  EXPECT_TRUE(other["met"].is_null());
  const std::string why = other.value("not_judged", "");
  EXPECT_NE(why.find("H100"), std::string::npos) << why;
  EXPECT_NE(why.find("NVIDIA H200"), std::string::npos) << why;
  EXPECT_TRUE(benchTarget("fft3d-256", 0.25, 5.0, "NVIDIA H200")["met"].is_null());
}

TEST(BenchTarget, TablePrintsMetNotMetAndNotJudged) {
  auto row = [](const char* name, nlohmann::json target) {
    return nlohmann::json{{"name", name},
                          {"device_ms", {{"median", 1.0}, {"min", 1.0}, {"max", 1.0}}},
                          {"host_to_host_ms", {{"median", 2.0}}},
                          {"limit", {{"device_ms", 0.5}, {"host_to_host_ms", 1.0}}},
                          {"ratio", {{"device", 2.0}, {"host_to_host", 2.0}}},
                          {"size", "test"},
                          {"reference", nullptr},
                          {"target", std::move(target)}};
  };
  nlohmann::json r = {{"suite", "seeds"},
                      {"device", {{"id", "cuda:0"}, {"name", "NVIDIA H200"}}},
                      {"limits", {{"source", "test"}}},
                      {"results", nlohmann::json::array()}};
  r["results"].push_back(row("a", benchTarget("nufft2d-adjoint", 0.161, 0.56, "NVIDIA H200")));
  r["results"].push_back(row("b", benchTarget("nufft2d-adjoint", 0.40, 0.8, "NVIDIA H200")));
  r["results"].push_back(row("c", benchTarget("fft3d-128", 0.041, 0.7, "NVIDIA H200")));
  const std::string table = formatBenchTable(r);
  EXPECT_NE(table.find("target: 0.320 ms device: met\n"), std::string::npos) << table;
  EXPECT_NE(table.find("target: 0.320 ms device: NOT met\n"), std::string::npos) << table;
  EXPECT_NE(table.find("target: 0.0345 ms device: not judged here (a ratio to the peer's time on an H100; on NVIDIA H200 "
                       "compare with the peer run there: docs/benchmarks.md)\n"),
            std::string::npos)
      << table;
}
