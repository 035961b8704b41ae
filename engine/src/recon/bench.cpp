#include "larmor/recon/bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "larmor/backend/registry.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/util/provenance.hpp"

namespace larmor::recon {
namespace {

using Clock = std::chrono::steady_clock;

CArray randomArray(const Shape& s, unsigned seed) {
  CArray a(s);
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.f, 1.f);
  for (index_t i = 0; i < a.size(); ++i) a[i] = {n(rng), n(rng)};
  return a;
}

/// Median wall time (ms) of `runs` calls of f, each ended by a synchronize, after `warmup` calls.
template <class F>
double medianMs(Backend& be, F&& f, int runs, int warmup = 2) {
  for (int i = 0; i < warmup; ++i) f();
  be.synchronize();
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = Clock::now();
    f();
    be.synchronize();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

}  // namespace

nlohmann::json runBenchSuite(const std::string& suite, const std::string& device,
                             const std::function<void(const std::string&)>& log) {
  require(suite == "seeds", "--suite " + suite + ": unknown suite; expected seeds");
  Selection sel = BackendRegistry::instance().select(device);
  Backend& be = *sel.backend;
  const DeviceInfo info = be.info();
  if (!sel.notice.empty()) log(sel.notice);
  const bool gpu = info.gpu;
  nlohmann::json results = nlohmann::json::array();
  auto record = [&](const std::string& name, double ms, double bytes, double limitMs, const std::string& note) {
    char line[256];
    std::snprintf(line, sizeof line, "%-44s %10.3f ms   limit %9.3f ms   %s", name.c_str(), ms, limitMs, note.c_str());
    log(line);
    results.push_back({{"name", name}, {"median_ms", ms}, {"bytes", bytes}, {"limit_ms", limitMs}, {"note", note}});
  };

  // Copy bandwidth: read + write of a 256 MiB buffer; the limit of everything memory-bound below.
  const index_t nCopy = index_t(32) << 20;  // 32 Mi complex = 256 MiB
  CDeviceArray a = CDeviceArray::upload(be, randomArray(Shape{nCopy}, 1));
  CDeviceArray b(be, Shape{nCopy});
  const double copyBytes = 2.0 * static_cast<double>(a.bytes());
  const double copyMs = medianMs(be, [&] { be.copy(b.buffer(), a.buffer(), a.bytes()); }, 10);
  const double bandwidth = copyBytes / (copyMs * 1e-3);  // bytes/s
  record("copy 256 MiB (device to device)", copyMs, copyBytes, copyMs,
         std::to_string(static_cast<int>(bandwidth / 1e9)) + " GB/s read+write");
  a = {};
  b = {};

  auto fftCase = [&](const std::string& name, Shape s, int rank) {
    CDeviceArray x = CDeviceArray::upload(be, randomArray(s, 2));
    const double ms = medianMs(be, [&] { be.fft(x.buffer(), s, rank, FftDirection::Forward); }, gpu ? 20 : 3);
    // Lower bound: the data read and written once at the measured copy bandwidth.
    const double bytes = 2.0 * static_cast<double>(x.bytes());
    record(name, ms, bytes, bytes / bandwidth * 1e3, "centred unitary FFT");
  };
  fftCase("fft 2D 256x256 x8 coils", Shape{256, 256, 8}, 2);
  fftCase("fft 3D 128^3", Shape{128, 128, 128}, 3);
  fftCase("fft 3D 256^3", Shape{256, 256, 256}, 3);

  // Cartesian recon 256^2 (readout 2x oversampled), 32 coils, 64 slices (8 on the CPU: minutes otherwise).
  {
    const index_t slices = gpu ? 64 : 8, coils = 32;
    Dataset d;
    d.source = "bench";
    d.header.encoded[0] = 512, d.header.encoded[1] = 256, d.header.encoded[2] = 1;
    d.header.recon[0] = 256, d.header.recon[1] = 256, d.header.recon[2] = 1;
    d.header.encodedFovMm[0] = 512, d.header.reconFovMm[0] = 256;
    d.header.coils = coils, d.header.slices = slices;
    d.kspace = randomArray(Shape{512, 256, 1, coils, slices}, 3);
    d.sampled = Array<std::uint8_t>(Shape{256, 1, slices}, 1);
    d.calibration = Array<std::uint8_t>(Shape{256, 1, slices}, 0);
    ReconSettings s;
    s.keepCoilImages = false;  // what the CLI does: only the combined image comes back to the host
    Timings timings;
    const double ms = medianMs(be, [&] {
      Timings t;
      reconstructCartesian(be, d, s, t, {});
      timings = t;
    }, gpu ? 5 : 1, 1);
    const double bytes = static_cast<double>(d.kspace.size()) * sizeof(cfloat);
    std::string stages;
    for (const auto& st : timings.stages()) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s%s %.2f", stages.empty() ? "" : ", ", st.stage.c_str(), st.milliseconds);
      stages += buf;
    }
    record("cartesian recon 256^2 x32 coils x" + std::to_string(slices) + " slices (host in/out)", ms, bytes,
           2.0 * bytes / bandwidth * 1e3, stages);
  }
  return {{"suite", suite},
          {"device", {{"id", info.id}, {"name", info.name}, {"library", info.library}}},
          {"version", versionString()},
          {"date_utc", utcNow()},
          {"copy_bandwidth_gbs", bandwidth / 1e9},
          {"results", results}};
}

}  // namespace larmor::recon
