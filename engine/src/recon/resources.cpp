// The resource planner (larmor/recon/resources.hpp). Sizes: c = 8 bytes (a complex float), B = coils x
// slices, S = slices, C = coils; E = encoded voxels (readout oversampled), F = those voxels after the
// readout oversampling is cropped, O = output voxels (--matrix, else the header's recon matrix), K =
// k-space samples of the whole dataset. Every formula counts the backend buffers the code allocates
// (Backend::allocate, what ExecutionOps::memoryStats measures); the comments name them.
//
// FFT transients (fftTransientFactor, f): the CPU FFT (cpu/fft.cpp) shifts in place and FFTW transforms in
// place, so it needs nothing beside the array X (f = 0; until 2026-11-27 it shifted through a temporary as large
// as X, f = 1); the CUDA FFT (cuda/fft.cu) shifts by modulation in place
// and takes cuFFT's work area from the allocator, a size only cuFFT knows when it plans. Measured on the
// H100 (tests/gpu/memory_estimates.sh): X / 2 for the 3D Cartesian transform (the fft job's peak of 2 E B
// = E B k-space + E B / 2 images + the work area), so f = 1/2 on a GPU.
//
//   fft      max(2E B on a GPU or E B on the CPU, (E + F) B, (F + O + max(F, O)) B if O != F, O B + O S) c
//            (upload and transform; crop; resample to --matrix with its two FFTs; combine)
//   grappa   the pipeline's own batch (grappa::batchPlan: the batch of slices it sizes to 40 % of a GPU's
//            memory or 2 GiB on the CPU, and the buffers it allocates for it), never the whole data set
//   gridding, tron, dft (noncartesian.cpp; m = samples of one coil and slice, K = m B)
//            max(K c + I B c + 12 m + G min(B, 8) (1 + f) c, the fft rule's resample and combine terms)
//            the k-space on the device, the images, the plan's trajectory (3 floats a sample) and the
//            oversampled grid G = (sigma N)^rank of up to 8 coils at a time with its FFT (not for dft)
//   cg, cs   one slice at a time (iterative.cpp builds one slice's operators, solves, and frees them):
//            Cartesian data: cartesianIterative below; non-Cartesian:
//            (2 M C + I C (2 + 2^(rank+1)) + 10 I + T) c + the result O S c, M = samples of one slice,
//            I = image voxels of one slice, T = 3 G min(C, 8) (NUFFT grid)
//
// Host memory: the dataset (resident already) + the result O S c (+ O B c with coil images kept) and the
// writer's copy of it O S c (io::toBartImage, the magnitude of an image format) + the working set when the
// backend is the CPU, with the CPU's Eigen temporaries that are no backend buffer (untrackedBytes: ESPIRiT's
// products in double). Checked against the peak resident set of larmor-cli (/usr/bin/time -v) by
// tests/e2e/memory_planner.sh, within 1.3x for every method at a small and a larger size (docs/reliability.md).
#include "larmor/recon/resources.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/grappa.hpp"
#include "larmor/recon/iterative.hpp"
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

void cartesian(const Dataset& d, const ReconSettings& s, const DeviceInfo& dev, MemoryEstimate& e) {
  const Header& h = d.header;
  const CartesianGeometry g = cartesianGeometry(d, s);
  const double E = voxels(h.encoded), F = voxels(g.fov), O = voxels(g.out);
  const double B = static_cast<double>(h.coils * h.slices), S = static_cast<double>(h.slices);
  // The transform: the k-space E B, on a GPU also the images E B / 2 and cuFFT's work area (f E B); the CPU
  // transforms in place (f = 0).
  const double transform = dev.gpu ? 2 * E * B : E * B;
  double work = std::max({transform, (E + F) * B, finishTerm(F, O, B, S)}) * kComplex;
  std::string batch;
  if (s.method == Method::Grappa) {
    // The pipeline's own batch and buffers (one rule: grappa::batchPlan). A header read before the
    // samples has no sampling mask yet: then the fft rule plus the filled k-space, a lower bound.
    if (d.sampled.empty()) {
      work += E * B * kComplex;
    } else {
      const grappa::BatchPlan bp = grappa::batchPlan(d, s, dev);
      work = bp.bytes;
      batch = ", " + std::to_string(bp.slices) + " slices per batch";
    }
  }
  e.workBytes = work;
  e.resultBytes = O * S * kComplex * (s.keepCoilImages ? 2 + static_cast<double>(h.coils) : 2);
  e.rule = toString(s.method) + ": " + dimsText(h.encoded) + " encoded -> " + dimsText(g.out) + " x " +
           std::to_string(h.coils) + " coils x " + std::to_string(h.slices) + " slices" + batch;
}

void nonCartesian(const Dataset& d, const ReconSettings& s, const DeviceInfo& dev, MemoryEstimate& e) {
  const Header& h = d.header;
  index_t out[3];
  outputMatrix(d, s, out);
  const int rank = nonCartesianRank(d, h.recon[2]);
  if (rank == 2) out[2] = 1;
  const index_t image[3] = {h.recon[0], h.recon[1], rank == 3 ? h.recon[2] : 1};
  const double I = voxels(image), O = voxels(out), K = kspaceElements(d);
  const double B = static_cast<double>(h.coils * h.slices), S = static_cast<double>(h.slices);
  const double G = I * std::pow(std::max(1.0, s.nufft.oversampling), rank);
  const double m = K / std::max(1.0, B);  // samples of one coil and slice
  // During the adjoint: the k-space (the density weights m c are freed before the plan), the images, the
  // plan's trajectory (3 floats = 1.5 c a sample), the oversampled grid of up to 8 coils and its FFT.
  const double grid = s.method == Method::Dft ? 0 : G * std::min(B, 8.0) * (1 + fftTransientFactor(dev.gpu));
  const double adjoint = K + I * B + 1.5 * m + grid;
  e.workBytes = std::max(adjoint, finishTerm(I, O, B, S)) * kComplex;
  e.resultBytes = O * S * kComplex * (s.keepCoilImages ? 2 + static_cast<double>(h.coils) : 2);
  e.rule = toString(s.method) + ": " + std::to_string(static_cast<long long>(K)) + " samples -> " + dimsText(out) +
           " x " + std::to_string(h.coils) + " coils x " + std::to_string(h.slices) + " slices";
}

// Cartesian cg/cs, one slice (iterative.cpp, buildCartesianOperators .. the solver). n = voxels of the
// solve grid (readout cropped to the FOV, all encoded lines and partitions), M = sampled points of the
// slice, N = the coil-map grid (calibrationGrid: n widened by the encoded/recon FOV ratio, the readout
// oversampling), g = coils per group of the coil maps (CoilSensitivities: 2^23 values a group), f = the
// FFT transient. Resident from the first stage to the last: the samples M C, the sampling plan's index
// (int64: M c per batch it is used with, 1 and g), the Gram operator's mask n. The peak is the largest of
//   plan       a group of G coils (cartesianPlanCoilGroup: as many as fit 16 MiB): their encoded k-space
//              G E1 (E1 one slice-coil volume) + the cropped G n + the readout FFT f G E1 + the gathered G M
//   coil maps  ESPIRiT (espirit.cpp): the calibration matrix and its Gram matrix, then the interpolated
//              covariances N L (L = C (C + 1) / 2) with their FFT f N L, the maps N C and eigenvalues N;
//              Walsh: the maps N C and their FFT f N C;
//              maps from the dataset or a file: none on the device
//   solve      the maps twice (per coil and per group: 2 C n), x, E^H d, the two diagonals, CG's r, p, q
//              and z and the preconditioner (9 n; FISTA's are fewer), the normal operator's tmp, acc and
//              group batch (2 + g) n, the plan's forward work g n and its FFT f g n
double cartesianIterative(const Dataset& d, const ReconSettings& s, const DeviceInfo& dev, const index_t dims[3],
                          const index_t grid[3], double* hostMaps = nullptr) {
  const Header& h = d.header;
  const index_t n = dims[0] * dims[1] * dims[2];
  const double f = fftTransientFactor(dev.gpu), C = static_cast<double>(std::max<index_t>(1, h.coils));
  const double N = voxels(grid), E1 = voxels(h.encoded), nn = static_cast<double>(n);
  // Sampled points of the slice: its sampled lines x the cropped readout (all points before the mask is read).
  double lines = static_cast<double>(h.encoded[1] * std::max<index_t>(1, h.encoded[2]));
  if (!d.sampled.empty()) {
    const index_t perSlice = d.sampled.size() / std::max<index_t>(1, h.slices);
    lines = 0;
    for (index_t i = 0; i < perSlice; ++i) lines += d.sampled[i] ? 1 : 0;
  }
  const double M = lines * nn / std::max(1.0, static_cast<double>(h.encoded[1] * std::max<index_t>(1, h.encoded[2])));
  const double g = std::clamp(std::floor(static_cast<double>(index_t(1) << 23) / std::max(1.0, nn)), 1.0, C);
  const double resident = M * C + M * (1 + g) + nn;
  const double G = static_cast<double>(cartesianPlanCoilGroup(static_cast<index_t>(E1), h.coils));
  const double plan = G * (E1 + nn + f * E1 + (G > 1 ? M : 0));
  double maps = 0;
  switch (s.iterative.coilMaps) {
    case CoilMapSource::Espirit: {
      // First the calibration matrix A (rows x K C, rows = kernel positions in the calibration box) and
      // its Gram matrix (K C)^2; then the interpolation.
      double K = 1, rows = 1;
      for (int i = 0; i < 3; ++i) {
        const index_t k = dims[i] > 1 ? 6 : 1;  // coil_maps.cpp: EspiritOptions{6, ...}
        const index_t box = std::max<index_t>(k, std::min<index_t>(s.iterative.calibrationSize, dims[i]));
        K *= static_cast<double>(k);
        rows *= static_cast<double>(box - k + 1);
      }
      const double L = C * (C + 1) / 2, KC = K * C;
      // On a GPU the Gram GEMM is reduction-shaped (rows > K C: cuda/linalg.cu accumulatesInDouble) and runs
      // in double on copies of A (A is both operands: one copy) and of the Gram matrix, 2 units each per
      // element. At small grids this phase is the peak: 32³ x 8 coils, measured 413 MB on the H100 against
      // the 123 MB of the float buffers alone.
      const double dbl = dev.gpu && rows > KC ? 2 : 0;
      // Then the eigen-decomposition (EspiritOps::gramKernels): the kernels K C x K C beside the Gram, and
      // on a GPU the Gram in double for zheevd (2 units an element).
      const double eigen = KC * KC * (1 + (dev.gpu ? 2 : 0));
      maps = std::max((rows * KC + KC * KC) * (1 + dbl) + eigen, N * (L * (1 + f) + C + 1));
      // The CPU backend accumulates the same product in double too (cpu/linalg.cpp, cpu/blocked_products.cpp), in
      // Eigen matrices that are not backend buffers: the Gram in double (2 units) beside the floats, A cast to
      // double one depth slice at a time (negligible), then the eigen-decomposition's double copy and eigenvectors
      // (4 units). Host memory, not in the tracked peak.
      if (!dev.gpu && hostMaps)
        *hostMaps = std::max(rows * KC + KC * KC * (1 + (rows > KC ? 2 : 0)), KC * KC * 6) * kComplex;
      break;
    }
    case CoilMapSource::Walsh: maps = N * C * (1 + f); break;
    default: break;
  }
  const double solve = nn * (2 * C + 9 + (2 + g) + g * (1 + f));
  if (hostMaps && *hostMaps > 0) *hostMaps += resident * kComplex;
  return (resident + std::max({plan, maps, solve})) * kComplex;
}

void iterative(const Dataset& d, const ReconSettings& s, const DeviceInfo& dev, MemoryEstimate& e) {
  const Header& h = d.header;
  index_t out[3];
  outputMatrix(d, s, out);
  const bool cartesianData = h.trajectory == TrajectoryKind::Cartesian;
  const int rank = cartesianData ? (h.encoded[2] > 1 ? 3 : 2) : nonCartesianRank(d, out[2]);
  if (rank == 2) out[2] = 1;
  const double C = static_cast<double>(h.coils), S = static_cast<double>(h.slices);
  const std::string what = toString(s.method) + " (" + (cartesianData ? "Cartesian" : "non-Cartesian") + " SENSE, " +
                           (rank == 3 ? "3D" : "2D") + (h.slices > 1 ? ", slice by slice" : "") + "): ";
  if (cartesianData) {
    // The solve grid: the FOV's readout, every encoded line and partition (buildCartesianOperators).
    const CartesianGeometry g = cartesianGeometry(d, s);
    const index_t dims[3] = {g.fov[0], h.encoded[1], std::max<index_t>(1, h.encoded[2])};
    index_t grid[3];
    for (int i = 0; i < 3; ++i) {
      const double ratio = h.encodedFovMm[i] > 0 && h.reconFovMm[i] > 0 ? h.encodedFovMm[i] / h.reconFovMm[i] : 1.0;
      const auto widened = static_cast<index_t>(std::lround(static_cast<double>(dims[i]) * ratio));
      grid[i] = dims[i] > 1 ? std::max<index_t>(dims[i], widened) : 1;
    }
    // Then the images to the output (IterativeProblem::toOutput): the readout-cropped image and the output
    // image on the backend, beside the downloaded result (resultBytes); at --matrix 1024^3 this is the peak.
    const double cropped = static_cast<double>(g.fov[0]) * static_cast<double>(std::min(g.fov[1], dims[1])) *
                           static_cast<double>(std::min(std::max<index_t>(1, g.fov[2]), dims[2]));
    const double O = voxels(out);
    const bool resampled = O != static_cast<double>(dims[0] * dims[1] * dims[2]);
    const double toOutput = resampled ? (cropped + O * (1 + fftTransientFactor(dev.gpu))) * kComplex : 0;
    double hostMaps = 0;
    e.workBytes = std::max(cartesianIterative(d, s, dev, dims, grid, &hostMaps), toOutput);
    e.resultBytes = voxels(out) * S * kComplex * (s.keepCoilImages ? 2 + C : 2);
    // The maps' host peak comes before the result exists: the host peak is the larger of the two phases.
    e.untrackedBytes = std::max(0.0, hostMaps - e.workBytes - e.resultBytes);
    e.rule = what + dimsText(dims) + " solve grid x " + std::to_string(h.coils) + " coils" +
             (s.iterative.coilMaps == CoilMapSource::Espirit ? ", ESPIRiT maps on " + dimsText(grid) : "");
    return;
  }
  const double I = voxels(out);
  const double M = kspaceElements(d) / std::max(1.0, C * S);
  // The operator's transform: the NUFFT's oversampled grid in chunks of up to 8 coils.
  const double transform = 3 * I * std::pow(std::max(1.0, s.nufft.oversampling), rank) * std::min(C, 8.0);
  const double work = 2 * M * C + I * C * (2 + std::pow(2.0, rank + 1)) + 10 * I + transform;
  e.workBytes = work * kComplex;
  e.resultBytes = I * S * kComplex * (s.keepCoilImages ? 2 + C : 2);
  e.rule = what + dimsText(out) + " x " + std::to_string(h.coils) + " coils";
}

// cs with lambda by cross-validation (recon/lambda_cv.hpp; cs's default rule auto on a 2D slice): the training and
// held-out problems (90 % and 10 % of the samples, the maps copied) beside the slice's own: about its work again;
// and the two halves of the dataset on the host.
void crossValidation(const Dataset& d, const ReconSettings& s, MemoryEstimate& e) {
  const LambdaRule r = s.iterative.lambdaRule;
  index_t out[3];
  outputMatrix(d, s, out);
  const bool twoD = d.header.trajectory == TrajectoryKind::Cartesian ? d.header.encoded[2] <= 1
                                                                     : nonCartesianRank(d, out[2]) == 2;
  if (s.method != Method::Cs || !(r == LambdaRule::CrossValidation || (r == LambdaRule::Auto && twoD))) return;
  e.workBytes *= 2;
  e.untrackedBytes += 2 * static_cast<double>(arrayBytes(d));
  e.rule += "; lambda by cross-validation: its two problems beside the slice's";
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

// "FILE: " for the refusals, "" for a dataset without a file (simulated in memory).
std::string sourcePrefix(const MemoryEstimate& e) {
  return e.source.empty() || e.source == "simulated" ? std::string() : e.source + ": ";
}

}  // namespace

double fftTransientFactor(bool gpu) { return gpu ? 0.5 : 0.0; }

MemoryEstimate estimateMemory(const Dataset& d, const ReconSettings& s, const DeviceInfo& dev) {
  MemoryEstimate e;
  e.datasetBytes = arrayBytes(d);
  e.source = d.source;
  e.onDevice = dev.gpu;
  switch (s.method) {
    case Method::Fft:
    case Method::Grappa:
      cartesian(d, s, dev, e);
      break;
    case Method::Gridding:
    case Method::Tron:
    case Method::Dft:
      nonCartesian(d, s, dev, e);
      break;
    case Method::Cg:
    case Method::Cs:
      iterative(d, s, dev, e);
      crossValidation(d, s, e);
      break;
  }
  return e;
}

MemoryEstimate estimateMemory(const Dataset& d, const ReconSettings& s, bool gpu) {
  DeviceInfo dev;
  dev.gpu = gpu;
  return estimateMemory(d, s, dev);
}

std::uint64_t availableHostBytes() {
  // Large blocks kept for reuse (array.hpp) are ours to hand back: an allocation that does not reuse one
  // releases them all first.
  std::uint64_t avail = statusField("/proc/meminfo", "MemAvailable");
  if (avail > 0) avail += keptHostBytes();
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

void requireHostMemory(double bytes, const std::string& file, const std::string& what) {
  const std::uint64_t avail = availableHostBytes();
  if (avail == 0 || bytes <= static_cast<double>(avail)) return;
  const bool capped = std::getenv("LARMOR_MEMORY_LIMIT") != nullptr;
  // Below a megabyte in bytes (a limit set for a test, a tiny array): "1 MB" would hide the figures.
  const auto text = [](double b) { return b < 1e6 ? std::to_string(static_cast<long long>(b)) + " bytes" : bytesText(b); };
  throw Error(file + ": " + what + " needs " + text(bytes) + " of memory, " + text(static_cast<double>(avail)) +
              " available (" +
              (capped ? "MemAvailable or LARMOR_MEMORY_LIMIT" : "MemAvailable") + "); not read");
}

void checkMemory(const MemoryEstimate& e, const DeviceInfo& dev, bool datasetLoaded) {
  // A loaded dataset is resident already (MemAvailable no longer counts it): what is still to come must fit.
  const double resident = static_cast<double>(residentBytes());
  const double inUse = datasetLoaded ? std::max(resident, e.datasetBytes) : resident;
  const double more = std::max(0.0, e.hostBytes() - inUse);
  const std::uint64_t avail = availableHostBytes();
  if (avail > 0 && more > static_cast<double>(avail))
    throw Error("recon: " + sourcePrefix(e) + e.rule + " needs about " + bytesText(e.hostBytes()) + " of host memory (" +
                bytesText(more) + " more than the " + bytesText(inUse) +
                " in use), " + bytesText(static_cast<double>(avail)) +
                " available (MemAvailable" + (std::getenv("LARMOR_MEMORY_LIMIT") ? " or LARMOR_MEMORY_LIMIT" : "") +
                "); use a smaller --matrix" + (e.rule.rfind("cg", 0) == 0 || e.rule.rfind("cs", 0) == 0
                                                   ? ""
                                                   : " or fewer coils/slices per run"));
  if (e.onDevice && dev.memoryBytes > 0 && e.deviceBytes() > static_cast<double>(dev.memoryBytes))
    throw Error("recon: " + sourcePrefix(e) + e.rule + " needs about " + bytesText(e.deviceBytes()) + " of memory on " + dev.id +
                ", which has " + bytesText(static_cast<double>(dev.memoryBytes)) +
                "; use a smaller --matrix, or --device cpu (" + bytesText(e.hostBytes() + e.workBytes) +
                " of host memory)");
}

MemoryEstimate estimateDynamicMemory(const std::vector<Dataset>& frames, const ReconSettings& s, const DeviceInfo& dev) {
  require(!frames.empty(), "recon: no frames");
  MemoryEstimate e = estimateMemory(frames.front(), s, dev);  // one frame's problem and its transient peak
  const Dataset& d = frames.front();
  const Header& h = d.header;
  index_t out[3];
  outputMatrix(d, s, out);
  const bool cartesianData = h.trajectory == TrajectoryKind::Cartesian;
  const int rank = cartesianData ? 2 : nonCartesianRank(d, out[2]);
  const double T = static_cast<double>(frames.size()), C = static_cast<double>(std::max<index_t>(1, h.coils));
  const double I = cartesianData ? voxels(h.encoded) : voxels(out);  // the solve grid (2D frames)
  const double M = kspaceElements(d) / std::max(1.0, C * static_cast<double>(h.slices));
  // Kept per frame: samples (M C), E^H d, x, the Jacobi diagonal (3 I), Q on the 2^rank-times grid.
  const double perFrame = M * C + 3 * I + std::pow(2.0, rank) * I;
  const double series = (5 + 3) * T * I;  // FISTA's vectors and the TV dual
  e.datasetBytes = 0;
  for (const Dataset& f : frames) e.datasetBytes += arrayBytes(f);
  e.workBytes += ((T - 1) * perFrame + series) * kComplex;
  // The results, and the merged samples the coil maps are estimated from: host memory on any backend.
  e.resultBytes = e.resultBytes * T + arrayBytes(d) * T;
  e.rule = "cs over " + std::to_string(frames.size()) + " frames jointly, " + e.rule;
  return e;
}

MemoryEstimate planDynamicMemory(const std::vector<Dataset>& frames, const ReconSettings& s, const DeviceInfo& dev) {
  MemoryEstimate e = estimateDynamicMemory(frames, s, dev);
  checkMemory(e, dev, true);
  return e;
}

MemoryEstimate planMemory(const Dataset& d, const ReconSettings& s, const DeviceInfo& dev, bool autoDevice,
                          bool datasetLoaded, bool* cpuInstead) {
  if (cpuInstead) *cpuInstead = false;
  MemoryEstimate e = estimateMemory(d, s, dev);
  if (e.onDevice && autoDevice && dev.memoryBytes > 0 && e.deviceBytes() > static_cast<double>(dev.memoryBytes)) {
    MemoryEstimate host = estimateMemory(d, s, DeviceInfo{});
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
