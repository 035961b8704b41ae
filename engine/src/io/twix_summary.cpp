// Siemens twix: protocol values (range-checked), the file's summary for `info`, and the uniform radial
// trajectory of `--traj radial:180|radial:360` (twix.hpp).
//
// Radial trajectory: spoke p of P at angle phi_p = p * arc / P; sample n of N at
//     k_n = (n - N/2) (cos phi_p, sin phi_p, 0)   cycles per FOV,
// so sample N/2 is the echo (k = 0) and the readout axis of spoke 0 is the scanner's readout (x). This is
// how the Pulseq radial example of the test data was written (readout gradient (cos, sin) x G, ADC on
// the flat top with one cycle per FOV per dwell, sample 128 at k = 0: docs/twix.md checks it from the
// .seq file). BART's `traj -r -c` puts the same spokes at (sin, cos): x and y swapped.
#include <charconv>
#include <cmath>
#include <numbers>

#include "larmor/util/error.hpp"
#include "twix_format.hpp"

namespace larmor::io {

namespace twix {

namespace {

const std::string* find(const Protocol& p, const std::string& key, bool xprot) {
  const auto& m = xprot ? p.xprot : p.ascconv;
  const auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

}  // namespace

std::optional<long> ascInt(const Protocol& p, const std::string& key, long lo, long hi) {
  const std::string* v = find(p, key, false);
  if (!v || v->empty()) return std::nullopt;
  long out = 0;
  const bool hex = v->size() > 2 && (*v)[0] == '0' && ((*v)[1] == 'x' || (*v)[1] == 'X');
  const char* b = v->data() + (hex ? 2 : 0);
  const char* e = v->data() + v->size();
  const auto r = std::from_chars(b, e, out, hex ? 16 : 10);
  if (r.ec != std::errc() || r.ptr != e || out < lo || out > hi) return std::nullopt;
  return out;
}

std::optional<double> protReal(const Protocol& p, const std::string& key, double lo, double hi, bool xprot) {
  const std::string* v = find(p, key, xprot);
  if (!v || v->empty() || v->size() > 64) return std::nullopt;
  double out = 0;
  const auto r = std::from_chars(v->data(), v->data() + v->size(), out);
  if (r.ec != std::errc() || r.ptr != v->data() + v->size() || !std::isfinite(out) || out < lo || out > hi)
    return std::nullopt;
  return out;
}

std::string protText(const Protocol& p, const std::string& key) {
  const std::string* v = find(p, key, false);
  if (!v) v = find(p, key, true);
  if (!v) return {};
  std::string s;
  for (char c : *v)
    if (s.size() < 64) s += (c >= 32 && c < 127) ? c : '?';
  return s;
}

TwixSummary summarize(const Layout& L) {
  TwixSummary s;
  s.format = L.vd ? "VD/VE" : "VB";
  s.measurements = L.measurements;
  s.scans = L.scans.size();
  s.syncScans = L.syncScans;
  s.acqEnd = L.acqEnd;
  for (const Scan& sc : L.scans) {
    switch (scanRole(sc.mask)) {
      case ScanRole::Image: ++s.imagingScans; break;
      case ScanRole::Reference: ++s.referenceScans; break;
      case ScanRole::Noise: ++s.noiseScans; break;
      case ScanRole::Skipped: ++s.skippedScans; break;
    }
    if (scanRole(sc.mask) != ScanRole::Image) continue;
    if (s.channels == 0) s.channels = sc.channels, s.samples = sc.samples;
    s.echoes = std::max(s.echoes, sc.eco + 1);
    s.phases = std::max(s.phases, sc.phs + 1);
    s.repetitions = std::max(s.repetitions, sc.rep + 1);
    s.sets = std::max(s.sets, sc.set + 1);
    s.averages = std::max(s.averages, sc.ave + 1);
  }
  s.sequence = protText(L.protocol, "tSequenceFileName");
  s.protocol = protText(L.protocol, "tProtocolName");
  if (s.protocol.empty()) s.protocol = L.raidProtocol;
  s.software = protText(L.protocol, "SoftwareVersions");
  s.model = protText(L.protocol, "ManufacturersModelName");
  s.buffers = L.protocol.bufferNames;
  const auto fraction = [&](const char* key) {
    const long v = ascInt(L.protocol, std::string("sKSpace.") + key, 0, 255).value_or(16);
    return v == 1 ? 4 / 8.0 : v == 2 ? 5 / 8.0 : v == 4 ? 6 / 8.0 : v == 8 ? 7 / 8.0 : 1.0;
  };
  s.phasePartialFourier = fraction("ucPhasePartialFourier");
  s.slicePartialFourier = fraction("ucSlicePartialFourier");
  s.readoutPartialFourier = fraction("ucReadoutPartialFourier");
  return s;
}

}  // namespace twix

TwixSummary inspectTwix(const std::string& path) {
  const twix::FileReader file(path);
  return twix::summarize(twix::readLayout(file));
}

std::vector<std::string> describeTwix(const TwixSummary& s) {
  auto str = [](auto v) { return std::to_string(v); };
  std::vector<std::string> out;
  out.push_back("format: Siemens twix " + s.format + ", " + str(s.measurements) + " measurement" +
                (s.measurements == 1 ? "" : "s") + " (the last is read)");
  if (!s.model.empty() || !s.software.empty()) out.push_back("scanner: " + s.model + ", " + s.software);
  out.push_back("protocol: " + s.protocol + (s.sequence.empty() ? "" : " (sequence " + s.sequence + ")"));
  out.push_back("scans: " + str(s.scans) + " = " + str(s.imagingScans) + " imaging + " + str(s.referenceScans) +
                " reference + " + str(s.noiseScans) + " noise + " + str(s.skippedScans) +
                " skipped (navigator, phase correction, feedback); " + str(s.syncScans) + " sync data" +
                (s.acqEnd ? "" : "; no ACQEND (measurement cut short)"));
  out.push_back("readout: " + str(s.channels) + " channels x " + str(s.samples) + " samples");
  if (s.phasePartialFourier < 1 || s.slicePartialFourier < 1 || s.readoutPartialFourier < 1) {
    const auto eighths = [&](double f) { return f < 1 ? str(static_cast<int>(f * 8 + 0.5)) + "/8" : std::string("off"); };
    out.push_back("partial Fourier (protocol): phase " + eighths(s.phasePartialFourier) + ", slice " +
                  eighths(s.slicePartialFourier) + ", readout " + eighths(s.readoutPartialFourier));
  }
  out.push_back("counters: " + str(s.averages) + " averages, " + str(s.echoes) + " echoes, " + str(s.phases) +
                " phases, " + str(s.repetitions) + " repetitions, " + str(s.sets) + " sets (all but averages: merged)");
  if (s.sequence.find("pulseq") != std::string::npos || s.sequence.find("Pulseq") != std::string::npos)
    out.push_back("note: a Pulseq sequence: twix carries no trajectory; non-Cartesian data need --traj");
  return out;
}

RArray uniformRadialTrajectory(index_t readout, index_t spokes, double arc) {
  require(readout > 0 && spokes > 0, "a radial trajectory needs readout samples and spokes");
  RArray t(Shape{3, readout, spokes}, 0.f);
  for (index_t p = 0; p < spokes; ++p) {
    const double phi = arc * static_cast<double>(p) / static_cast<double>(spokes);
    for (index_t n = 0; n < readout; ++n) {
      const double r = static_cast<double>(n) - static_cast<double>(readout / 2);
      t(0, n, p) = static_cast<float>(r * std::cos(phi));
      t(1, n, p) = static_cast<float>(r * std::sin(phi));
    }
  }
  return t;
}

double radialTrajectoryKeyword(const std::string& name) {
  if (name == "radial:180") return std::numbers::pi;
  if (name == "radial:360") return 2 * std::numbers::pi;
  return 0;
}

}  // namespace larmor::io
