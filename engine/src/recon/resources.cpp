// The resource planner (larmor/recon/resources.hpp). Sizes: c = 8 bytes (a complex float), B = coils x
// slices, S = slices, C = coils; E = encoded voxels (readout oversampled), F = those voxels after the
// readout oversampling is cropped, O = output voxels (--matrix, else the header's recon matrix), K =
// k-space samples of the whole dataset. The CPU FFT (cpu/fft.cpp) shifts into a temporary as large as
// the array it transforms, and cuFFT's workspace is assumed the same size, so every FFT of X counts 2X.
//
//   fft      max(2E B, (E + F) B, (F + O + max(F, O)) B if O != F, O B + O S) c
//            (upload and transform; crop; resample to --matrix with its two FFTs; combine)
//   grappa   the fft rule with E B more (the filled k-space next to the measured one)
//   gridding, tron, dft (G = oversampled grid voxels of the image, (sigma N)^rank, in chunks of up to
//            8 coils; I = image voxels at the recon matrix)
//            max((2K + I B + 3 G min(B, 8)) c, the fft rule's resample and combine terms with F = I)
//   cg, cs   slice by slice (the per-slice path exists: only one slice's operators are resident):
//            (2 M C + I C (2 + 2^(rank+1)) + 10 I + T) c + the result O S c, M = samples of one slice,
//            I = image voxels of one slice, T = 3 G min(C, 8) (NUFFT grid) or 2 I C (Cartesian FFT)
//
// Host memory: the dataset (resident already) + the result O S c (+ O B c with coil images kept) + the
// working set when the backend is the CPU. Verified on a 2-core machine against /proc/self/status VmHWM
// (docs/perf.md): within 30 %.
#include "larmor/recon/resources.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/noncartesian.hpp"
#include "larmor/util/error.hpp"

namespace larmor::recon {

namespace {

constexpr double kComplex = 8;

double voxels(const index_t v[3]);

// K: the k-space's elements, or for a header read before the samples (loadDataset's beforeData) what the
// header implies: Cartesian encoded x coils x slices; non-Cartesian unknown yet, 0 (a lower bound).
double kspaceElements(const Dataset& d) {
  if (!d.kspace.empty()) return static_cast<double>(d.kspace.size());
  const Header& h = d.header;
  return h.trajectory == TrajectoryKind::Cartesian
             ? voxels(h.encoded) * static_cast<double>(h.coils) * static_cast<double>(h.slices)
             : 0;
}

double arrayBytes(const Dataset& d) {
  double b = kspaceElements(d) * kComplex + static_cast<double>(d.sampled.size()) +
             static_cast<double>(d.calibration.size()) + static_cast<double>(d.trajectory.size()) * 4;
  if (d.reference) b += static_cast<double>(d.reference->size()) * kComplex;
  if (d.coilMaps) b += static_cast<double>(d.coilMaps->size()) * kComplex;
  b += static_cast<double>(d.acquisitions.size()) * sizeof(AcquisitionInfo);
  return b;
}

double voxels(const index_t v[3]) {
  return static_cast<double>(v[0]) * static_cast<double>(v[1]) * static_cast<double>(std::max<index_t>(1, v[2]));
}

std::string dimsText(const index_t v[3]) {
  return std::to_string(v[0]) + "x" + std::to_string(v[1]) + (v[2] > 1 ? "x" + std::to_string(v[2]) : "");
}

// Resample to the output matrix and combine (finishCoilImages): images I B, out O B, FFT temporaries.
double finishTerm(double image, double out, double b, double s) {
  const double resample = out != image ? (image + out + std::max(image, out)) * b : 0;
  return std::max(resample, out * b + out * s);
}

void cartesian(const Dataset& d, const ReconSettings& s, MemoryEstimate& e) {
  const Header& h = d.header;
  const CartesianGeometry g = cartesianGeometry(d, s);
  const double E = voxels(h.encoded), F = voxels(g.fov), O = voxels(g.out);
  const double B = static_cast<double>(h.coils * h.slices), S = static_cast<double>(h.slices);
  double work = std::max({2 * E * B, (E + F) * B, finishTerm(F, O, B, S)});
  if (s.method == Method::Grappa) work += E * B;
  e.workBytes = work * kComplex;
  e.resultBytes = O * S * kComplex * (s.keepCoilImages ? 1 + static_cast<double>(h.coils) : 1);
  e.rule = toString(s.method) + ": " + dimsText(h.encoded) + " encoded -> " + dimsText(g.out) + " x " +
           std::to_string(h.coils) + " coils x " + std::to_string(h.slices) + " slices";
}

void nonCartesian(const Dataset& d, const ReconSettings& s, MemoryEstimate& e) {
  const Header& h = d.header;
  index_t out[3];
  outputMatrix(d, s, out);
  const int rank = nonCartesianRank(d, h.recon[2]);
  if (rank == 2) out[2] = 1;
  const index_t image[3] = {h.recon[0], h.recon[1], rank == 3 ? h.recon[2] : 1};
  const double I = voxels(image), O = voxels(out), K = kspaceElements(d);
  const double B = static_cast<double>(h.coils * h.slices), S = static_cast<double>(h.slices);
  const double G = I * std::pow(std::max(1.0, s.nufft.oversampling), rank);
  const double adjoint = 2 * K + I * B + (s.method == Method::Dft ? 0 : 3 * G * std::min(B, 8.0));
  e.workBytes = std::max(adjoint, finishTerm(I, O, B, S)) * kComplex;
  e.resultBytes = O * S * kComplex * (s.keepCoilImages ? 1 + static_cast<double>(h.coils) : 1);
  e.rule = toString(s.method) + ": " + std::to_string(static_cast<long long>(K)) + " samples -> " + dimsText(out) +
           " x " + std::to_string(h.coils) + " coils x " + std::to_string(h.slices) + " slices";
}

void iterative(const Dataset& d, const ReconSettings& s, MemoryEstimate& e) {
  const Header& h = d.header;
  index_t out[3];
  outputMatrix(d, s, out);
  const bool cartesianData = h.trajectory == TrajectoryKind::Cartesian;
  const int rank = cartesianData ? (h.encoded[2] > 1 ? 3 : 2) : nonCartesianRank(d, out[2]);
  if (rank == 2) out[2] = 1;
  const double I = voxels(out), C = static_cast<double>(h.coils), S = static_cast<double>(h.slices);
  const double M = kspaceElements(d) / std::max(1.0, C * S);
  // The operator's transform: the NUFFT's oversampled grid in chunks of up to 8 coils (non-Cartesian) or
  // the FFT's temporary of all coils (Cartesian).
  const double transform = cartesianData ? 2 * I * C
                                         : 3 * I * std::pow(std::max(1.0, s.nufft.oversampling), rank) * std::min(C, 8.0);
  const double work = 2 * M * C + I * C * (2 + std::pow(2.0, rank + 1)) + 10 * I + transform;
  e.workBytes = work * kComplex;
  e.resultBytes = I * S * kComplex * (s.keepCoilImages ? 1 + C : 1);
  e.rule = toString(s.method) + ", slice by slice: " + dimsText(out) + " x " + std::to_string(h.coils) + " coils";
}

std::uint64_t statusField(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, key.size(), key) == 0 && line.size() > key.size() && line[key.size()] == ':') {
      std::istringstream v(line.substr(key.size() + 1));
      std::uint64_t kb = 0;
      if (v >> kb) return kb * 1024;
    }
  return 0;
}

}  // namespace

MemoryEstimate estimateMemory(const Dataset& d, const ReconSettings& s, bool gpu) {
  MemoryEstimate e;
  e.datasetBytes = arrayBytes(d);
  e.onDevice = gpu;
  switch (s.method) {
    case Method::Fft:
    case Method::Grappa:
      cartesian(d, s, e);
      break;
    case Method::Gridding:
    case Method::Tron:
    case Method::Dft:
      nonCartesian(d, s, e);
      break;
    case Method::Cg:
    case Method::Cs:
      iterative(d, s, e);
      break;
  }
  return e;
}

std::uint64_t availableHostBytes() {
  std::uint64_t avail = statusField("/proc/meminfo", "MemAvailable");
  if (const char* cap = std::getenv("LARMOR_MEMORY_LIMIT"); cap && *cap) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(cap, &end, 10);
    if (end && *end == '\0' && (avail == 0 || v < avail)) avail = v;
  }
  return avail;
}

std::uint64_t residentBytes() { return statusField("/proc/self/status", "VmRSS"); }
std::uint64_t peakResidentBytes() { return statusField("/proc/self/status", "VmHWM"); }

std::string bytesText(double bytes) {
  char buf[32];
  if (bytes >= 1e9) std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  else std::snprintf(buf, sizeof buf, "%.0f MB", std::ceil(bytes / 1e6));
  return buf;
}

void checkMemory(const MemoryEstimate& e, const DeviceInfo& dev, bool datasetLoaded) {
  // A loaded dataset is resident already (MemAvailable no longer counts it): what is still to come must fit.
  const double resident = static_cast<double>(residentBytes());
  const double inUse = datasetLoaded ? std::max(resident, e.datasetBytes) : resident;
  const double more = std::max(0.0, e.hostBytes() - inUse);
  const std::uint64_t avail = availableHostBytes();
  if (avail > 0 && more > static_cast<double>(avail))
    throw Error("recon: " + e.rule + " needs about " + bytesText(e.hostBytes()) + " of host memory (" +
                bytesText(more) + " more than the " + bytesText(inUse) +
                " in use), " + bytesText(static_cast<double>(avail)) +
                " available (MemAvailable" + (std::getenv("LARMOR_MEMORY_LIMIT") ? " or LARMOR_MEMORY_LIMIT" : "") +
                "); use a smaller --matrix" + (e.rule.rfind("cg", 0) == 0 || e.rule.rfind("cs", 0) == 0
                                                   ? ""
                                                   : " or fewer coils/slices per run"));
  if (e.onDevice && dev.memoryBytes > 0 && e.deviceBytes() > static_cast<double>(dev.memoryBytes))
    throw Error("recon: " + e.rule + " needs about " + bytesText(e.deviceBytes()) + " of memory on " + dev.id +
                ", which has " + bytesText(static_cast<double>(dev.memoryBytes)) +
                "; use a smaller --matrix, or --device cpu (" + bytesText(e.hostBytes() + e.workBytes) +
                " of host memory)");
}

MemoryEstimate planMemory(const Dataset& d, const ReconSettings& s, const DeviceInfo& dev, bool autoDevice,
                          bool datasetLoaded, bool* cpuInstead) {
  if (cpuInstead) *cpuInstead = false;
  MemoryEstimate e = estimateMemory(d, s, dev.gpu);
  if (e.onDevice && autoDevice && dev.memoryBytes > 0 && e.deviceBytes() > static_cast<double>(dev.memoryBytes)) {
    MemoryEstimate host = estimateMemory(d, s, false);
    const auto avail = static_cast<double>(availableHostBytes());
    if (avail == 0 || host.hostBytes() < avail) {
      if (cpuInstead) *cpuInstead = true;
      host.rule += " (" + bytesText(e.deviceBytes()) + " would not fit on " + dev.id + ")";
      e = host;
    }
  }
  checkMemory(e, dev, datasetLoaded);
  return e;
}

}  // namespace larmor::recon
