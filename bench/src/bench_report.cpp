// The plain-text table of `larmor-cli bench` (larmor/bench/bench.hpp): one row per workload with the
// device-resident median (min-max), host in -> host out median, the limits and the ratios time / limit, peak
// host and device memory; under each row its size (and what was scaled down), the error against float64 where
// the workload measures it, and the peer / paper figure and target where the workload ran at their size.
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include "bench_internal.hpp"
#include "larmor/bench/bench.hpp"

namespace larmor::recon {

namespace {

double num(const nlohmann::json& j) { return j.is_number() ? j.get<double>() : bench::kNaN; }

std::string fmt(const char* f, double v) {
  if (!std::isfinite(v)) return "-";
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

/// Milliseconds with 3 significant figures or more (below 0.1 ms: 3, e.g. 0.0345).
std::string ms(double v) {
  if (!std::isfinite(v)) return "-";
  return fmt(v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : v >= 1 ? "%.2f" : v >= 0.1 ? "%.3f" : "%.3g", v);
}

std::string mib(const nlohmann::json& j) { return j.is_number() ? fmt("%.1f", j.get<double>() / 1048576.0) : "-"; }

}  // namespace

std::string formatBenchTable(const nlohmann::json& r) {
  std::ostringstream o;
  const auto& dev = r.at("device");
  o << "larmor-cli bench --suite " << r.value("suite", "?") << (r.value("quick", false) ? " --quick" : "") << " on "
    << dev.value("id", "?") << " (" << dev.value("name", "?") << "), larmor " << r.value("version", "?") << ", "
    << r.value("date_utc", "") << "\n";
  o << "limits: " << r.at("limits").value("source", "") << "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-22s %24s %12s %21s %13s %9s %9s\n", "workload", "device ms (min-max)",
                "host->host", "limit ms dev / h2h", "ratio dev/h2h", "host MiB", "dev MiB");
  o << line << std::string(116, '-') << "\n";
  for (const auto& w : r.at("results")) {
    const auto& d = w.at("device_ms");
    const std::string devCol = ms(num(d["median"])) + " (" + ms(num(d["min"])) + "-" + ms(num(d["max"])) + ")";
    const auto& lim = w.at("limit");
    const auto& ratio = w.at("ratio");
    std::snprintf(line, sizeof line, "%-22s %24s %12s %21s %13s %9s %9s\n", w.value("name", "?").c_str(), devCol.c_str(),
                  ms(num(w.at("host_to_host_ms")["median"])).c_str(),
                  (ms(num(lim["device_ms"])) + " / " + ms(num(lim["host_to_host_ms"]))).c_str(),
                  (fmt("%.1f", num(ratio["device"])) + " / " + fmt("%.1f", num(ratio["host_to_host"]))).c_str(),
                  mib(w["peak_host_bytes"]).c_str(), mib(w["peak_device_bytes"]).c_str());
    o << line;
    o << "    " << w.value("size", "");
    if (w["scaled"].is_string()) o << "  [" << w["scaled"].get<std::string>() << "]";
    o << "\n";
    if (const auto& x = w["extra"]; x.is_object() && x.contains("rel_error_64_voxels"))
      o << "    error against float64 sums at 64 voxels: " << fmt("%.2g", num(x["rel_error_64_voxels"])) << "\n";
    if (w["reference"].is_object()) {
      const auto& ref = w["reference"];
      o << "    reference: " << ref.value("what", "") << ": " << ms(num(ref["ms"])) << " ms (" << ref.value("kind", "")
        << "); ours " << fmt("%.3g", num(ref["ours_over_reference"])) << "x of it\n";
    }
    if (w["target"].is_object()) {
      const auto& t = w["target"];
      o << "    target: " << ms(num(t["ms"])) << " ms " << t.value("kind", "") << ": ";
      if (t.contains("not_judged")) o << "not judged here (" << t.value("not_judged", "") << ")\n";
      else o << (t.value("met", false) ? "met" : "NOT met") << "\n";
    }
  }
  for (const auto& n : r.value("not_applicable", nlohmann::json::array()))
    o << "not run here: " << n.value("name", "?") << " (" << n.value("why", "") << ")\n";
  for (const auto& e : r.value("errors", nlohmann::json::array()))
    o << "FAILED: " << e.value("name", "?") << ": " << e.value("error", "") << "\n";
  o << "ratio = time / limit (1 = at the physical limit); memory: peak per workload above what was held before it. "
       "docs/benchmarks.md explains each figure.\n";
  return o.str();
}

}  // namespace larmor::recon
