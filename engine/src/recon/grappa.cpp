// GRAPPA reconstruction: the sampling pattern, the settings checks, and the pipeline that moves slices
// through the device in batches (grappa_plan.cpp does the calibration and filling of a batch).
//
// Domains. The basic calibration (findWs) keeps one weight set per segment of Δs readout columns "as the
// sensitivities of each coil are assumed to be approximately constant within each segment" (thesis sec.
// 2.6.2): coil sensitivities are a property of image space, so the segments are taken in hybrid space
// (x, ky) after an inverse FFT along the readout, where a 1D kernel along ky per column x is what GRAPPA
// needs. The improved calibration (findWsImproved) convolves k-space with a 2D K_PE x K_RO kernel, so it
// stays in (kx, ky). 3D data (acceleration along pe1 only) are first inverse transformed along pe2: each
// pe2 partition is then an independent 2D problem with its own weights (the coils differ along z), and all
// partitions of all slices of a batch go through one batched GEMM and one batched solve.
//
// 2D acceleration (pe1 x pe2, R = Ry Rz; Blaimer et al., "2D-GRAPPA-operator", MRM 56:1359, 2006; Brau
// et al., "Comparison of reconstruction accuracy and efficiency among autocalibrating data-driven parallel
// imaging methods", MRM 59:382, 2008, whose k-space GRAPPA with a kernel over ky and kz is what this is).
// The data stay in k-space along pe2 (a pe2 FFT would spread the missing partitions over all of z), and
// each slice's volume is one problem. The acquired points form the lattice (h0 + kRy... in short
// (y, z) = (g0 + k Ry, h0 + l Rz)) plus the fully sampled centre box found by recon/calibration.hpp's
// findCalibrationBox (the one calibration-region module, ESPIRiT's too). For the cell of lattice point
// (y, z) the missing points (y + my, z + mz), (my, mz) in [0, Ry) x [0, Rz) \ {(0, 0)}, are
//     S_c(kx, y + my, z + mz) = Σ_{c', kpe < P, kpz < P2, kro < K_RO} w^{(my,mz)}_{c,c',kpe,kpz,kro}
//                                S_c'(kx - Δ_RO + kro, y - Δ + kpe Ry, z - Δz + kpz Rz)
// with one weight set per offset (my, mz) (the rows of W), Δ = Ry(⌊P/2⌋ - 1), Δz = Rz max(⌊P2/2⌋ - 1, 0);
// the weights are fitted exactly as in 1D (same normal equations, normalization per PE shift, Cholesky
// solve) on every kernel position inside the box (PE shifts over pe1 x pe2, RO shifts across the readout).
// The basic calibration keeps its hybrid space (x, ky, kz) and segments along x with P x P2 source blocks.
// Sources outside the volume or not measured count as zero; measured points are never overwritten.
#include "larmor/recon/grappa.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <string>

#include "grappa_plan.hpp"
#include "larmor/backend/registry.hpp"
#include "larmor/recon/calibration.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/coil_compression.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/recon/settings_table.hpp"

namespace larmor::recon {

namespace grappa {

namespace {

std::string str(index_t v) { return std::to_string(v); }

bool isBasic(const GrappaSettings& s) { return s.calibration == GrappaCalibration::Basic; }

/// (kx, ky, kz) -> the calibration domain: 3D accelerated along pe1 only (pe2ToImage) (kx, ky, z) by an
/// inverse 3D FFT followed by a forward 2D one (the backend transforms leading dimensions only; the pair
/// leaves pe2 alone transformed); basic also x by an inverse FFT along the readout.
void toCalibrationDomain(Backend& be, Buffer& data, index_t n0, index_t n1, index_t n2, index_t batch, bool basic,
                         bool pe2ToImage) {
  if (n2 > 1 && pe2ToImage) {
    be.fft(data, Shape{n0, n1, n2, batch}, 3, FftDirection::Inverse);
    be.fft(data, Shape{n0, n1, n2 * batch}, 2, FftDirection::Forward);
  }
  if (basic) be.fft(data, Shape{n0, n1 * n2 * batch}, 1, FftDirection::Inverse);
}

/// The calibration domain -> k-space: the inverse of toCalibrationDomain (basic: the readout back to kx;
/// pe2 partitions back to kz by an inverse 2D and a forward 3D FFT).
void fromCalibrationDomain(Backend& be, Buffer& data, index_t n0, index_t n1, index_t n2, index_t batch, bool basic,
                           bool pe2ToImage) {
  if (basic) be.fft(data, Shape{n0, n1 * n2 * batch}, 1, FftDirection::Forward);
  if (n2 > 1 && pe2ToImage) {
    be.fft(data, Shape{n0, n1, n2 * batch}, 2, FftDirection::Inverse);
    be.fft(data, Shape{n0, n1, n2, batch}, 3, FftDirection::Forward);
  }
}

/// The calibration domain -> image space: inverse 2D over (x, y) (z is already in image space); basic data
/// were already in x, which a forward FFT along the readout gives back. kz in k-space (2D acceleration):
/// basic data back to kx first, then one inverse 3D FFT.
void toImage(Backend& be, Buffer& data, index_t n0, index_t n1, index_t n2, index_t batch, bool basic, bool kz) {
  if (kz && n2 > 1) {
    if (basic) be.fft(data, Shape{n0, n1 * n2 * batch}, 1, FftDirection::Forward);
    be.fft(data, Shape{n0, n1, n2, batch}, 3, FftDirection::Inverse);
    return;
  }
  be.fft(data, Shape{n0, n1, n2 * batch}, 2, FftDirection::Inverse);
  if (basic) be.fft(data, Shape{n0, n1 * n2 * batch}, 1, FftDirection::Forward);
}

index_t gcd(index_t a, index_t b) { return b == 0 ? a : gcd(b, a % b); }

/// A timed stage when there is somewhere to record it; nothing (no synchronisation) otherwise, so that a
/// benchmark's batches run back to back.
class Stage {
 public:
  Stage(Timings* t, std::string name, Backend* be) {
    if (t) stage_.emplace(*t, std::move(name), be);
  }

 private:
  std::optional<ScopedStage> stage_;
};

bool variesAlongPe2(const Dataset& d) {
  for (index_t z = 1; z < d.header.encoded[2]; ++z)
    for (index_t y = 0; y < d.header.encoded[1]; ++y)
      if ((d.sampled(y, z, 0) != 0) != (d.sampled(y, 0, 0) != 0) ||
          (d.calibration(y, z, 0) != 0) != (d.calibration(y, 0, 0) != 0))
        return true;
  return false;
}

/// Pe1 x pe2: the lattice of acquired points and the fully sampled centre box (see the top of the file).
Sampling analyseSampling2D(const Dataset& d) {
  const Header& h = d.header;
  const std::string src = d.source.empty() ? "the data" : d.source;
  const index_t n1 = h.encoded[1], n2 = h.encoded[2], slices = h.slices;
  Sampling s;
  s.lines = n1;
  s.depth = n2;
  s.acquired.assign(static_cast<std::size_t>(n1 * n2), 0);
  auto at = [&](index_t y, index_t z, index_t sl) { return d.sampled(y, z, sl) != 0 || d.calibration(y, z, sl) != 0; };
  for (index_t z = 0; z < n2; ++z)
    for (index_t y = 0; y < n1; ++y) s.acquired[static_cast<std::size_t>(y + n1 * z)] = at(y, z, 0) ? 1 : 0;
  for (index_t sl = 1; sl < slices; ++sl)
    for (index_t z = 0; z < n2; ++z)
      for (index_t y = 0; y < n1; ++y)
        if (at(y, z, sl) != s.isAcquired(y, z))
          throw Error(src + ": GRAPPA needs the same k-space points in every slice; (pe1 " + str(y) + ", pe2 " + str(z) +
                      ") differs at slice " + str(sl));
  if (std::all_of(s.acquired.begin(), s.acquired.end(), [](std::uint8_t a) { return a != 0; }))
    throw Error(src + ": GRAPPA has nothing to fill: the data are fully sampled (R = 1); use --method fft");
  // The calibration region: the largest fully sampled centred box (the module ESPIRiT uses).
  const CalibrationBox box = findCalibrationBox(d, 0, std::max(n1, n2));
  s.acsCount = box.extent[1];
  s.acsCountPe2 = box.extent[2];
  s.acsFirst = n1 / 2 - s.acsCount / 2;
  s.acsFirstPe2 = n2 / 2 - s.acsCountPe2 / 2;
  require(s.acsCount >= 2 && s.acsCountPe2 >= 2,
          src + ": GRAPPA needs calibration (ACS) lines: a fully sampled k-space centre; this data set's is " +
              box.str() + " (simulate with --accel RyxRz --acs N, or acquire an ACS block)");
  auto inBox = [&](index_t y, index_t z) {
    return y >= s.acsFirst && y < s.acsFirst + s.acsCount && z >= s.acsFirstPe2 && z < s.acsFirstPe2 + s.acsCountPe2;
  };
  // The lattice: the acquired points outside the box and not flagged as calibration.
  std::vector<std::pair<index_t, index_t>> grid;
  for (index_t z = 0; z < n2; ++z)
    for (index_t y = 0; y < n1; ++y)
      if (s.isAcquired(y, z) && !inBox(y, z) && d.calibration(y, z, 0) == 0) grid.emplace_back(y, z);
  require(!grid.empty(), src + ": GRAPPA needs undersampled points outside the calibration block; there are none");
  index_t Ry = h.accelerationPe1 > 1 ? h.accelerationPe1 : 0, Rz = h.accelerationPe2 > 1 ? h.accelerationPe2 : 0;
  const bool ryFromData = Ry == 0, rzFromData = Rz == 0;
  for (const auto& [y, z] : grid) {
    if (ryFromData) Ry = gcd(Ry, std::abs(y - grid.front().first));
    if (rzFromData) Rz = gcd(Rz, std::abs(z - grid.front().second));
  }
  if (Ry == 0) Ry = 1;
  if (Rz == 0) Rz = 1;
  require(Ry * Rz >= 2, src + ": GRAPPA has nothing to fill: the lattice of acquired points is fully sampled (R = 1)");
  require(Ry == 1 || Ry < n1, src + ": acceleration R = " + str(Ry) + " must be smaller than the " + str(n1) + " pe1 lines");
  require(Rz == 1 || Rz < n2, src + ": acceleration R = " + str(Rz) + " along pe2 must be smaller than its " + str(n2) +
                                  " partitions");
  s.accel = static_cast<int>(Ry);
  s.accelPe2 = static_cast<int>(Rz);
  s.gridFirst = grid.front().first % Ry;
  s.gridFirstPe2 = grid.front().second % Rz;
  for (const auto& [y, z] : grid)
    if (y % Ry != s.gridFirst || z % Rz != s.gridFirstPe2)
      throw Error(src + ": GRAPPA needs regular undersampling: point (pe1 " + str(y) + ", pe2 " + str(z) +
                  ") is off the lattice of every " + str(Ry) + "th line and " + str(Rz) + "th partition");
  return s;
}

}  // namespace

Sampling analyseSampling(const Dataset& d) {
  const Header& h = d.header;
  const std::string src = d.source.empty() ? "the data" : d.source;
  require(h.trajectory == TrajectoryKind::Cartesian,
          src + ": GRAPPA needs Cartesian data; this file has a " + toString(h.trajectory) + " trajectory");
  const index_t n1 = h.encoded[1], n2 = h.encoded[2], slices = h.slices;
  require(h.accelerationPe2 <= 1 || n2 > 1, src + ": the header states acceleration " +
                                                std::to_string(h.accelerationPe2) +
                                                " along pe2 but the data have one pe2 partition");
  if (n2 > 1 && (h.accelerationPe2 > 1 || variesAlongPe2(d))) return analyseSampling2D(d);
  Sampling s;
  s.lines = n1;
  s.acquired.assign(static_cast<std::size_t>(n1), 0);
  std::vector<std::uint8_t> cal(static_cast<std::size_t>(n1), 0);
  for (index_t y = 0; y < n1; ++y) {
    s.acquired[static_cast<std::size_t>(y)] = d.sampled(y, 0, 0) ? 1 : 0;
    cal[static_cast<std::size_t>(y)] = d.calibration(y, 0, 0) ? 1 : 0;
  }
  for (index_t sl = 0; sl < slices; ++sl)
    for (index_t z = 0; z < n2; ++z)
      for (index_t y = 0; y < n1; ++y) {
        const bool a = d.sampled(y, z, sl) != 0, c = d.calibration(y, z, sl) != 0;
        // (Patterns that differ along pe2 within slice 0 took the 2D path above.)
        const auto where = [&] { return "slice " + str(sl) + (n2 > 1 ? ", pe2 " + str(z) : ""); };
        if (a != (s.acquired[static_cast<std::size_t>(y)] != 0))
          throw Error(src + ": GRAPPA needs the same pe1 lines in every slice; line " + str(y) + " differs at " + where());
        if (c != (cal[static_cast<std::size_t>(y)] != 0))
          throw Error(src + ": GRAPPA needs the calibration lines to be the same in every slice; line " + str(y) +
                      " differs at " + where());
      }
  if (std::all_of(s.acquired.begin(), s.acquired.end(), [](std::uint8_t a) { return a != 0; }))
    throw Error(src + ": GRAPPA has nothing to fill: the data are fully sampled along pe1 (R = 1); use --method fft");
  // The calibration block: one contiguous run of ACS lines.
  index_t first = -1, count = 0;
  for (index_t y = 0; y < n1; ++y)
    if (cal[static_cast<std::size_t>(y)]) {
      if (first < 0) first = y;
      require(y == first + count, src + ": GRAPPA needs one contiguous block of calibration lines; line " + str(y) +
                                      " starts a second one");
      ++count;
    }
  require(count > 0, src + ": GRAPPA needs calibration (ACS) lines and this data set has none (simulate with "
                           "--accel R --acs N, or acquire an ACS block)");
  s.acsFirst = first;
  s.acsCount = count;
  // R: the header's where it states one, else the spacing of the lines outside the calibration block.
  std::vector<index_t> grid;
  for (index_t y = 0; y < n1; ++y)
    if (s.acquired[static_cast<std::size_t>(y)] && !cal[static_cast<std::size_t>(y)]) grid.push_back(y);
  index_t R = h.accelerationPe1 > 1 ? h.accelerationPe1 : 0;
  if (R == 0) {
    for (std::size_t i = 1; i < grid.size(); ++i) R = gcd(R, grid[i] - grid[i - 1]);
    if (R == 0) R = 1;
  }
  require(R >= 2, src + ": GRAPPA has nothing to fill: the data are fully sampled along pe1 (R = 1); use --method fft");
  require(R < n1, src + ": acceleration R = " + str(R) + " must be smaller than the " + str(n1) + " pe1 lines");
  require(!grid.empty(), src + ": GRAPPA needs undersampled lines outside the calibration block; there are none");
  s.accel = static_cast<int>(R);
  s.gridFirst = grid.front() % R;
  for (index_t y : grid)
    require(y % R == s.gridFirst, src + ": GRAPPA needs regular undersampling: line " + str(y) +
                                      " is off the grid of every " + str(R) + "th line through line " +
                                      str(grid.front()));
  // The grid must continue through the calibration block, which holds every line.
  return s;
}

void validate(const GrappaSettings& s, const Sampling& smp, index_t columns, index_t coils) {
  {
    ReconSettings ranges;
    ranges.grappa = s;
    settings::validate(ranges, "grappa");  // the table's ranges: chi, eta, kappa, kernel, blocks, segment
  }
  if (smp.twoD())
    require(smp.accel * smp.accelPe2 >= 2 && (smp.accel == 1 || smp.accel < smp.lines) &&
                (smp.accelPe2 == 1 || smp.accelPe2 < smp.depth),
            "GRAPPA: acceleration " + std::to_string(smp.accel) + "x" + std::to_string(smp.accelPe2) +
                " must be 2 or more in all and smaller than the " + str(smp.lines) + " x " + str(smp.depth) + " lines");
  else
    require(smp.accel >= 2 && smp.accel < smp.lines, "GRAPPA: acceleration R = " + std::to_string(smp.accel) +
                                                         " must be 2 or more and smaller than the " + str(smp.lines) +
                                                         " lines");
  require(smp.acsCount > 0, "GRAPPA: no calibration (ACS) lines");
  require(s.outCoils >= 0 && s.outCoils <= coils,
          "GRAPPA: --out-coils " + std::to_string(s.outCoils) + " must be 0 (off) or 1 to the " + str(coils) + " coils");
  const Kernel k = Kernel::make(s, smp.accel, columns, std::max<index_t>(coils, 1), smp.accelPe2);
  if (smp.twoD()) {
    require(k.pe2 >= 1 && k.pe2 <= 64, "GRAPPA: --grappa-kernel-pe2 " + std::to_string(k.pe2) + " must be 1 to 64");
    require(k.span() <= smp.acsCount && k.spanPe2() <= smp.acsCountPe2,
            "GRAPPA: the kernel (" + std::to_string(k.pe) + "x" + std::to_string(k.pe2) + " sources at R = " +
                std::to_string(smp.accel) + "x" + std::to_string(smp.accelPe2) + ") spans " + str(k.span()) + "x" +
                str(k.spanPe2()) + " points, more than the fully sampled centre " + str(smp.acsCount) + "x" +
                str(smp.acsCountPe2) + "; use a smaller kernel or acquire more ACS lines");
    return;
  }
  require(k.span() <= smp.acsCount,
          "GRAPPA: the kernel (" + (k.improved ? std::to_string(k.pe) + "x" + std::to_string(k.ro) + " kernel"
                                               : std::to_string(k.pe) + " blocks") +
              " at R = " + std::to_string(smp.accel) + ") spans " + str(k.span()) + " lines, more than the " +
              str(smp.acsCount) + " calibration lines; use a smaller kernel or acquire more ACS lines");
}

CArray calibrationDomain(const Dataset& d, const GrappaSettings& s) {
  const Header& h = d.header;
  const index_t n0 = h.encoded[0], n1 = h.encoded[1], n2 = h.encoded[2], vox = n0 * n1 * n2, slices = h.slices;
  CArray k = d.kspace;
  index_t coils = h.coils;
  if (s.outCoils > 0) {
    const CoilCompression cc = computeCoilCompression(d, s.outCoils);
    k = applyCoilCompression(cc, k, vox);
    coils = s.outCoils;
  }
  const bool twoD = analyseSampling(d).twoD();
  auto cpu = makeCpuBackend();
  CDeviceArray buf = CDeviceArray::upload(*cpu, k);
  toCalibrationDomain(*cpu, buf.buffer(), n0, n1, n2, coils * slices, isBasic(s), !twoD);
  CArray t = buf.download();
  if (twoD) {
    t.reshape(Shape{n0, n1, n2, coils, slices});
    return t;
  }
  CArray out(Shape{n0, n1, 1, coils, n2 * slices});
  for (index_t sl = 0; sl < slices; ++sl)
    for (index_t z = 0; z < n2; ++z)
      for (index_t c = 0; c < coils; ++c)
        for (index_t y = 0; y < n1; ++y)
          std::copy_n(t.data() + n0 * (y + n1 * (z + n2 * (c + coils * sl))), n0,
                      out.data() + n0 * (y + n1 * (c + coils * (z + n2 * sl))));
  return out;
}

namespace {

/// The calibration block [columns, acsCount, acsCountPe2, coils, problems] of planes [columns, lines,
/// depth, coils, problems].
CArray acsBlock(const CArray& planes, const Sampling& smp) {
  const index_t n0 = planes.shape()[0], coils = planes.shape()[3], q = planes.shape()[4];
  CArray acs(Shape{n0, smp.acsCount, smp.acsCountPe2, coils, q});
  for (index_t p = 0; p < q; ++p)
    for (index_t c = 0; c < coils; ++c)
      for (index_t z = 0; z < smp.acsCountPe2; ++z)
        for (index_t y = 0; y < smp.acsCount; ++y)
          std::copy_n(&planes(0, smp.acsFirst + y, smp.acsFirstPe2 + z, c, p), n0, &acs(0, y, z, c, p));
  return acs;
}

}  // namespace

CArray calibrationWeights(Backend& backend, const CArray& planes, const Sampling& smp, const GrappaSettings& s) {
  require(planes.shape().rank() == 5, "GRAPPA: planes must be [columns, lines, depth, coils, problems]");
  const index_t n0 = planes.shape()[0], n1 = planes.shape()[1], depth = planes.shape()[2];
  const index_t coils = planes.shape()[3], q = planes.shape()[4];
  require(n1 == smp.lines && depth == smp.depth, "GRAPPA: planes and sampling differ in their lines");
  validate(s, smp, n0, coils);
  const Kernel k = Kernel::make(s, smp.accel, n0, coils, smp.accelPe2);
  Plan plan(backend, k, smp, Addressing{n0, n1, coils, 1, depth}, s, q);
  std::vector<float> scales;
  if (!plan.scalesOnDevice()) scales = equationScales(acsBlock(planes, smp), k, plan.calibrationGeometry(), smp, s, q);
  CDeviceArray data = CDeviceArray::upload(backend, planes);
  plan.calibrate(data.buffer(), &scales);
  plan.checkCalibration();
  CArray w(Shape{k.rowsA(), k.rowsB(), plan.entries()});
  backend.download(w.data(), plan.weights(), static_cast<std::size_t>(w.size()) * sizeof(cfloat));
  return w;
}

// Fill from given weights: one plan for all of d's problems, as calibrationWeights makes them, its weights uploaded
// instead of solved; the data go to the calibration domain and back as in the pipeline.
CArray fillFromWeights(Backend& backend, const Dataset& d, const GrappaSettings& s, const CArray& weights) {
  require(s.outCoils == 0, d.source + ": GRAPPA fill from weights: coil compression (--out-coils " +
                               std::to_string(s.outCoils) + ") is not supported (the weights act on the data's coils)");
  const Header& h = d.header;
  const index_t n0 = h.encoded[0], n1 = h.encoded[1], n2 = h.encoded[2], coils = h.coils, slices = h.slices;
  const Sampling smp = analyseSampling(d);
  validate(s, smp, n0, coils);
  const Kernel k = Kernel::make(s, smp.accel, n0, coils, smp.accelPe2);
  const bool twoD = smp.twoD();
  Plan plan(backend, k, smp, Addressing{n0, n1, coils, twoD ? 1 : n2, twoD ? n2 : 1}, s, twoD ? slices : n2 * slices);
  const Shape need{k.rowsA(), k.rowsB(), plan.entries()};
  require(weights.shape() == need, d.source + ": GRAPPA fill from weights: the weights are " + weights.shape().str() +
                                       ", this data and kernel need " + need.str() + " (rows(A), rows(B), entries)");
  CDeviceArray data = CDeviceArray::upload(backend, d.kspace);
  toCalibrationDomain(backend, data.buffer(), n0, n1, n2, coils * slices, isBasic(s), !twoD);
  backend.upload(plan.weights(), weights.data(), static_cast<std::size_t>(weights.size()) * sizeof(cfloat));
  plan.fill(data.buffer());
  fromCalibrationDomain(backend, data.buffer(), n0, n1, n2, coils * slices, isBasic(s), !twoD);
  return data.download();
}

// --- the pipeline ------------------------------------------------------------------------------------------

struct Pipeline::Impl {
  Backend& be;
  /// The backend that transforms the host's copy of the calibration block (scalesFor: settings whose equation
  /// scales have no device primitive). Plain: the run's own backend, which a CPU run uses. Fast path of a GPU run:
  /// a CPU backend of the pipeline's own, so that the host transforms its copy while the device transforms the
  /// batch, and the block never goes to the device and back.
  std::shared_ptr<Backend> scalesBackendOwned;
  GrappaSettings settings;
  Combine combine;
  bool keepCoilImages;
  std::string source;
  bool basic;
  index_t n0, n1, n2, slices, coilsIn, coils;  // coils: after compression
  index_t partitions = 1;  ///< problems per slice: pe2 partitions (pe1 acceleration) or 1 (pe1 x pe2)
  bool twoD = false;       ///< pe1 x pe2 acceleration: kz stays in k-space, a volume is one problem
  index_t out[3], fov[3];
  int rank;
  Sampling smp;
  Kernel kernel;
  index_t batchSlices = 1, capacity = 1, subBatches = 1;
  bool compact = false;
  std::unique_ptr<Plan> plan;
  std::vector<std::unique_ptr<Buffer>> compactTables;  ///< per sub-batch: compact element -> batch element
  std::unique_ptr<Buffer> kin, kwork, compactBuf, compression;
  CDeviceArray images, resampled, combined;  ///< [fov or out, coils x batch] and [out, batch]
  bool resample = false;
  PartialFourierMethod pfMethod = PartialFourierMethod::Pocs;  ///< the filler after GRAPPA's (partial_fourier.hpp)
  PartialFourierReport pf;                                     ///< the region, and what the last batch did

  Impl(Backend& backend, const Dataset& d, const ReconSettings& s, index_t slicesPerBatch, std::size_t budgetBytes);
  Backend& scalesBackend() { return scalesBackendOwned ? *scalesBackendOwned : be; }
  index_t volume() const { return n0 * n1 * n2; }
  index_t outVoxels() const { return out[0] * out[1] * out[2]; }
  index_t fovVoxels() const { return fov[0] * fov[1] * fov[2]; }
  void checkGeometry(const Dataset& d) const;
  std::vector<float> scalesFor(const Dataset& d, index_t first, index_t count, const CoilCompression* cc);
  // The stages of one batch (Pipeline::process), in their order.
  std::unique_ptr<CoilCompression> compressCoils(const Dataset& d, index_t first, index_t count, Timings* t);
  void calibrateAndFill(Buffer& work, const std::vector<float>& scales, Timings* t, const Progress& progress);
  bool fillPartialFourierEdge(Buffer& work, Timings* t);
  void basicSlicesToImages(Buffer& work, bool combineTransposed, Timings* t);
  void volumesToImages(Buffer& work, bool pfFill, Timings* t);
  void resampleAndCombine(bool combineHere, Timings* t);
};

Pipeline::Impl::Impl(Backend& backend, const Dataset& d, const ReconSettings& s, index_t slicesPerBatch,
                     std::size_t budgetBytes)
    : be(backend), settings(s.grappa), combine(s.combine), keepCoilImages(s.keepCoilImages), source(d.source) {
  const Header& h = d.header;
  smp = analyseSampling(d);
  pfMethod = s.partialFourier;
  pf.region = detectPartialFourier(d);
  n0 = h.encoded[0];
  n1 = h.encoded[1];
  n2 = h.encoded[2];
  slices = h.slices;
  coilsIn = h.coils;
  validate(settings, smp, n0, coilsIn);
  coils = settings.outCoils > 0 ? settings.outCoils : coilsIn;
  basic = isBasic(settings);
  kernel = Kernel::make(settings, smp.accel, n0, coils, smp.accelPe2);
  twoD = smp.twoD();
  partitions = twoD ? 1 : n2;
  if (be.isGpu()) scalesBackendOwned = makeCpuBackend();  // the fast path (scalesBackend)

  const CartesianGeometry g = cartesianGeometry(d, s);
  rank = g.rank;
  std::copy_n(g.fov, 3, fov);
  std::copy_n(g.out, 3, out);

  // Batches: batchPlan (grappa_batch.cpp), the rule the memory planner uses too.
  const BatchPlan bp = batchPlan(d, s, be.info(), budgetBytes, slicesPerBatch);
  batchSlices = bp.slices, capacity = bp.capacity, compact = bp.compact, subBatches = bp.subBatches;

  kin = be.allocate(static_cast<std::size_t>(volume() * coilsIn * batchSlices) * sizeof(cfloat));
  if (settings.outCoils > 0) {
    kwork = be.allocate(static_cast<std::size_t>(volume() * coils * batchSlices) * sizeof(cfloat));
    compression = be.allocate(static_cast<std::size_t>(coilsIn * coils * batchSlices) * sizeof(cfloat));
  }
  const Addressing whole{n0, n1, coils, partitions, twoD ? n2 : 1};
  if (compact) {
    const Addressing packed{n0, n1, coils, 1};
    compactBuf = be.allocate(static_cast<std::size_t>(n0 * n1 * coils * capacity) * sizeof(cfloat));
    for (index_t b = 0; b < subBatches; ++b) {
      std::vector<index_t> table(static_cast<std::size_t>(n0 * n1 * coils * capacity));
      for (index_t q = 0; q < capacity; ++q) {
        const index_t global = b * capacity + q;
        for (index_t c = 0; c < coils; ++c)
          for (index_t y = 0; y < n1; ++y)
            for (index_t x = 0; x < n0; ++x)
              table[static_cast<std::size_t>(packed.offset(q, c, y, x))] =
                  global < partitions * batchSlices ? whole.offset(global, c, y, x) : -1;
      }
      auto buf = be.allocate(table.size() * sizeof(index_t));
      be.upload(*buf, table.data(), table.size() * sizeof(index_t));
      compactTables.push_back(std::move(buf));
    }
    plan = std::make_unique<Plan>(be, kernel, smp, packed, settings, capacity);
  } else {
    plan = std::make_unique<Plan>(be, kernel, smp, whole, settings, capacity);
  }
  images = CDeviceArray(be, Shape{fov[0], fov[1], fov[2], 1, coils * batchSlices});
  resample = fov[0] != out[0] || fov[1] != out[1] || fov[2] != out[2];
  if (resample) resampled = CDeviceArray(be, Shape{out[0], out[1], out[2], 1, coils * batchSlices});
  combined = CDeviceArray(be, Shape{out[0], out[1], out[2], 1, batchSlices});
}

void Pipeline::Impl::checkGeometry(const Dataset& d) const {
  const Header& h = d.header;
  require(h.encoded[0] == n0 && h.encoded[1] == n1 && h.encoded[2] == n2 && h.coils == coilsIn && h.slices == slices &&
              d.kspace.size() == volume() * coilsIn * slices,
          d.source + ": GRAPPA pipeline: the data's geometry differs from the one it was planned for");
}

std::vector<float> Pipeline::Impl::scalesFor(const Dataset& d, index_t first, index_t count, const CoilCompression* cc) {
  // The calibration block of these slices, on the host, in the calibration domain: [n0, acs, nz, coils,
  // count] with nz all partitions (pe1 acceleration) or the box's (pe1 x pe2).
  const index_t acs = smp.acsCount, nz = twoD ? smp.acsCountPe2 : n2, z0 = twoD ? smp.acsFirstPe2 : 0;
  CArray block(Shape{n0, acs, nz, coilsIn, count});
  for (index_t sl = 0; sl < count; ++sl)
    for (index_t c = 0; c < coilsIn; ++c)
      for (index_t z = 0; z < nz; ++z)
        for (index_t y = 0; y < acs; ++y)
          std::copy_n(&d.kspace(0, smp.acsFirst + y, z0 + z, c, first + sl), n0, &block(0, y, z, c, sl));
  if (cc) block = applyCoilCompression(*cc, block, n0 * acs * nz);
  CDeviceArray hb = CDeviceArray::upload(scalesBackend(), block);
  toCalibrationDomain(scalesBackend(), hb.buffer(), n0, acs, nz, coils * count, basic, !twoD);
  const CArray t = hb.download();
  std::vector<float> all;
  const index_t problems = partitions * count, pz = twoD ? nz : 1;  // pz: the box's partitions per problem
  for (index_t b = 0; b < subBatches; ++b) {
    const index_t firstProblem = b * capacity, n = std::clamp<index_t>(problems - firstProblem, 0, capacity);
    CArray part(Shape{n0, acs, pz, coils, n});
    for (index_t q = 0; q < n; ++q) {
      const index_t global = firstProblem + q, p = global % partitions, sl = global / partitions;
      for (index_t c = 0; c < coils; ++c)
        for (index_t z = 0; z < pz; ++z)
          for (index_t y = 0; y < acs; ++y)
            std::copy_n(t.data() + n0 * (y + acs * (p + z + nz * (c + coils * sl))), n0, &part(0, y, z, c, q));
    }
    const std::vector<float> s = equationScales(part, kernel, plan->calibrationGeometry(), smp, settings, capacity);
    all.insert(all.end(), s.begin(), s.end());
  }
  return all;
}

Pipeline::Pipeline(Backend& backend, const Dataset& d, const ReconSettings& s, index_t slicesPerBatch,
                   std::size_t memoryBudgetBytes)
    : impl_(std::make_unique<Impl>(backend, d, s, slicesPerBatch, memoryBudgetBytes)) {}
Pipeline::~Pipeline() = default;

index_t Pipeline::slicesPerBatch() const { return impl_->batchSlices; }
index_t Pipeline::problemsPerCalibration() const { return impl_->capacity; }

ImageSet Pipeline::allocateOutput() const {
  const Impl& m = *impl_;
  ImageSet r;
  if (m.keepCoilImages) r.coilImages = CArray(Shape{m.out[0], m.out[1], m.out[2], m.coils, m.slices});
  r.combined = CArray(Shape{m.out[0], m.out[1], m.out[2], 1, m.slices});
  return r;
}

void Pipeline::upload(const Dataset& d, index_t first, index_t count) {
  Impl& m = *impl_;
  m.checkGeometry(d);
  require(first >= 0 && count >= 1 && count <= m.batchSlices && first + count <= m.slices,
          "GRAPPA pipeline: slices out of range");
  const std::size_t sliceBytes = static_cast<std::size_t>(m.volume() * m.coilsIn) * sizeof(cfloat);
  // A partial batch is padded with zeros: their problems calibrate to zero weights and fill nothing.
  if (count < m.batchSlices) m.be.fill(*m.kin, cfloat(0), m.volume() * m.coilsIn * m.batchSlices);
  m.be.upload(*m.kin, d.kspace.data() + static_cast<std::size_t>(first) * (sliceBytes / sizeof(cfloat)),
              sliceBytes * static_cast<std::size_t>(count));
}

// Coil compression (--grappa-out-coils) of the batch's slices into kwork: the compression of the slices
// [first, first + count) computed on the host; none (null, the data stay in kin) without it.
std::unique_ptr<CoilCompression> Pipeline::Impl::compressCoils(const Dataset& d, index_t first, index_t count,
                                                               Timings* t) {
  if (settings.outCoils <= 0) return nullptr;
  const index_t B = batchSlices;
  Stage st(t, "coil compression", &be);
  auto cc = std::make_unique<CoilCompression>(computeCoilCompression(d, settings.outCoils, first, count));
  // Slices of a partial batch beyond `count` get a zero matrix: zero virtual coils.
  CArray mat(Shape{coilsIn, coils, B}, cfloat(0));
  std::copy_n(cc->matrix.data(), cc->matrix.size(), mat.data());
  be.upload(*compression, mat.data(), static_cast<std::size_t>(mat.size()) * sizeof(cfloat));
  applyCoilCompression(be, *compression, coilsIn, coils, *kin, *kwork, volume(), B);
  return cc;
}

// The calibration and the fill of each sub-batch of problems (gathered into the compact buffer and scattered
// back when the problems are packed), with the host's equation scales where there are any.
void Pipeline::Impl::calibrateAndFill(Buffer& work, const std::vector<float>& scales, Timings* t,
                                      const Progress& progress) {
  const std::size_t perSub = static_cast<std::size_t>(plan->entries()) *
                             static_cast<std::size_t>(plan->calibrationGeometry().equations());
  const index_t compactElements = n0 * n1 * coils * capacity;
  for (index_t b = 0; b < subBatches; ++b) {
    Buffer& data = compact ? *compactBuf : work;
    if (compact) be.gather(*compactBuf, work, *compactTables[static_cast<std::size_t>(b)], compactElements);
    std::vector<float> sub;
    if (!scales.empty())
      sub.assign(scales.begin() + static_cast<std::ptrdiff_t>(perSub * b),
                 scales.begin() + static_cast<std::ptrdiff_t>(perSub * (b + 1)));
    const double share = 0.75 / static_cast<double>(subBatches);
    const std::string part = subBatches > 1 ? " " + str(b + 1) + "/" + str(subBatches) : std::string();
    {
      progress.report(0.15 + share * static_cast<double>(b), "calibration" + part);
      Stage st(t, "calibration", &be);
      plan->calibrate(data, &sub);
    }
    {
      progress.report(0.15 + share * (static_cast<double>(b) + 0.7), "fill" + part);
      Stage st(t, "fill", &be);
      plan->fill(data);
    }
    if (compact) be.scatter(work, *compactBuf, *compactTables[static_cast<std::size_t>(b)], compactElements);
  }
}

// Partial Fourier: GRAPPA filled the gaps of the acquired region; POCS or homodyne the missing edge, in
// k-space (back from the calibration domain where the kernels worked in a hybrid space). Whether it ran.
bool Pipeline::Impl::fillPartialFourierEdge(Buffer& work, Timings* t) {
  const index_t B = batchSlices;
  const bool pfFill = pf.region.any() && pfMethod != PartialFourierMethod::ZeroFill;
  if (pfFill) {
    Stage st(t, "partial Fourier (" + toString(pfMethod) + ")", &be);
    if (partitions > 1 || basic) fromCalibrationDomain(be, work, n0, n1, n2, coils * B, basic, !twoD);
    pf = fillPartialFourier(be, work, coils * B, n2 > 1 ? 3 : 2, pf.region, pfMethod);
  }
  return pfFill;
}

// Basic 2D slices are in (x, ky) after the fill, x already in image space: the readout's oversampling is
// cropped first, and only the remaining y transform runs, on the cropped half: each plane transposed so that
// y leads (the backend transforms leading dimensions; `work`, done with, holds it), one 1D inverse FFT. With
// the sum of squares and no coil images kept (combineTransposed) the coils combine in that layout and only the
// combined planes are transposed back (Table 5.1's 32-slice batch: 0.5 GB a pass of the cropped data; a 2D
// inverse FFT and a forward one along x did the same with three transform passes and two half-swaps).
void Pipeline::Impl::basicSlicesToImages(Buffer& work, bool combineTransposed, Timings* t) {
  const index_t B = batchSlices;
  const Shape encodedShape{n0, n1, n2, 1, coils * B};
  const Shape fovShape{fov[0], fov[1], fov[2], 1, coils * B};
  const index_t planes = coils * B, nx = fov[0], ny = n1;
  {
    Stage st(t, "crop oversampling", &be);
    be.resizeCentred(images.buffer(), fovShape, work, encodedShape);
  }
  {
    Stage st(t, "ifft", &be);
    be.grappaOps().transpose(work, images.buffer(), nx, ny, planes);
    be.fft(work, Shape{ny, nx * planes}, 1, FftDirection::Inverse);
    if (!combineTransposed) be.grappaOps().transpose(images.buffer(), work, ny, nx, planes);
  }
  if (combineTransposed) {
    Stage st(t, "combine " + toString(combine), &be);
    be.sumOfSquares(images.buffer(), work, nx * ny, coils, B);
    be.grappaOps().transpose(combined.buffer(), images.buffer(), ny, nx, B);
  }
}

// Any other batch: the k-space (from the calibration domain, unless the partial Fourier fill brought it back
// already) to coil images, the readout's oversampling cropped.
void Pipeline::Impl::volumesToImages(Buffer& work, bool pfFill, Timings* t) {
  const index_t B = batchSlices;
  const Shape encodedShape{n0, n1, n2, 1, coils * B};
  const Shape fovShape{fov[0], fov[1], fov[2], 1, coils * B};
  {
    Stage st(t, "ifft", &be);
    if (pfFill) toImage(be, work, n0, n1, n2, coils * B, false, true);
    else toImage(be, work, n0, n1, n2, coils * B, basic, twoD);
  }
  Stage st(t, "crop oversampling", &be);
  be.resizeCentred(images.buffer(), fovShape, work, encodedShape);
}

// The coil images resampled to the output matrix where it differs from the field of view, and combined (unless
// basicSlicesToImages combined them already: combineHere false).
void Pipeline::Impl::resampleAndCombine(bool combineHere, Timings* t) {
  const index_t B = batchSlices;
  const Shape fovShape{fov[0], fov[1], fov[2], 1, coils * B};
  const Shape outShape{out[0], out[1], out[2], 1, coils * B};
  if (resample) {
    Stage st(t, "resample to matrix", &be);
    resampleToMatrix(be, images.buffer(), fovShape, resampled.buffer(), outShape, rank);
  }
  if (combineHere) {
    Stage st(t, "combine " + toString(combine), &be);
    combineCoils(be, resample ? resampled : images, combined, outVoxels(), coils, B, combine);
  }
}

void Pipeline::process(const Dataset& d, index_t first, index_t count, Timings* timings, const Progress& progress) {
  Impl& m = *impl_;
  m.checkGeometry(d);
  require(first >= 0 && count >= 1 && count <= m.batchSlices && first + count <= m.slices,
          "GRAPPA pipeline: slices out of range");
  Timings* t = timings;
  Backend& be = m.be;
  const index_t B = m.batchSlices;
  const std::unique_ptr<CoilCompression> cc = m.compressCoils(d, first, count, t);
  Buffer& work = cc ? *m.kwork : *m.kin;
  if (m.partitions > 1 || m.basic) {
    progress.report(0.05, "fft to calibration domain");
    Stage st(t, "fft to calibration domain", &be);
    toCalibrationDomain(be, work, m.n0, m.n1, m.n2, m.coils * B, m.basic, !m.twoD);
  }
  // With η = 1 and κ = 0 (the defaults) the plan normalizes on the device. Otherwise the equation scales
  // come from the host's copy of the calibration block (p^{-η/2} and the clipping's sort have no backend
  // primitive), computed while the device transforms (queued above; nothing waits for it here).
  std::vector<float> scales;
  if (!m.plan->scalesOnDevice()) {
    Stage st(t, "calibration scales (host)", nullptr);
    scales = m.scalesFor(d, first, count, cc.get());
  }
  m.calibrateAndFill(work, scales, t, progress);
  const bool pfFill = m.fillPartialFourierEdge(work, t);
  progress.report(0.9, "ifft, combine");
  const bool basicY = m.basic && !pfFill && m.n2 == 1 && m.fov[1] == m.n1 && m.fov[2] == 1;
  // Basic 2D slices summed of squares, no coil images kept and no resampling: combined in the y-leading layout.
  const bool combineTransposed =
      basicY && !m.resample && m.combine == Combine::SumOfSquares && !m.keepCoilImages;
  if (basicY) m.basicSlicesToImages(work, combineTransposed, t);
  else m.volumesToImages(work, pfFill, t);
  m.resampleAndCombine(!combineTransposed, t);
  // Everything is queued: now wait for the calibrations' outcome (the first wait of the batch).
  m.plan->checkCalibration();
  progress.report(1.0, "batch done");
}

void Pipeline::download(ImageSet& out, index_t first, index_t count) {
  Impl& m = *impl_;
  require(first >= 0 && count >= 1 && count <= m.batchSlices && first + count <= m.slices,
          "GRAPPA pipeline: slices out of range");
  const Buffer& img = m.resample ? m.resampled.buffer() : m.images.buffer();
  if (m.keepCoilImages) {
    const std::size_t n = static_cast<std::size_t>(m.outVoxels() * m.coils);
    require(out.coilImages.size() == m.outVoxels() * m.coils * m.slices, "GRAPPA pipeline: output has the wrong size");
    m.be.download(out.coilImages.data() + n * static_cast<std::size_t>(first), img,
                  n * static_cast<std::size_t>(count) * sizeof(cfloat));
  }
  const std::size_t n = static_cast<std::size_t>(m.outVoxels());
  require(out.combined.size() == m.outVoxels() * m.slices, "GRAPPA pipeline: output has the wrong size");
  m.be.download(out.combined.data() + n * static_cast<std::size_t>(first), m.combined.buffer(),
                n * static_cast<std::size_t>(count) * sizeof(cfloat));
}

ImageSet Pipeline::run(const Dataset& d, Timings& timings, const Progress& progress) {
  Impl& m = *impl_;
  m.checkGeometry(d);
  ImageSet result = allocateOutput();
  Timings parts;  // per batch; summed per stage below so each stage appears once
  for (index_t first = 0; first < m.slices; first += m.batchSlices) {
    const index_t count = std::min(m.batchSlices, m.slices - first);
    const double from = 0.05 + 0.9 * static_cast<double>(first) / static_cast<double>(m.slices);
    const std::string slices = "GRAPPA: slices " + str(first + 1) + "-" + str(first + count) + " of " + str(m.slices);
    progress.report(from, slices);
    {
      ScopedStage st(parts, "upload", &m.be);
      upload(d, first, count);
    }
    process(d, first, count, &parts,
            Progress::Sub(progress, from, 0.05 + 0.9 * static_cast<double>(first + count) / static_cast<double>(m.slices),
                          slices + ": "));
    {
      ScopedStage st(parts, "download", &m.be);
      download(result, first, count);
    }
  }
  std::vector<std::string> order;
  std::map<std::string, std::pair<double, std::string>> sum;
  for (const auto& s : parts.stages()) {
    if (!sum.count(s.stage)) order.push_back(s.stage);
    sum[s.stage].first += s.milliseconds;
    sum[s.stage].second = s.device;
  }
  for (const auto& name : order) timings.add(name, sum[name].first, sum[name].second);
  if (m.pf.region.any()) {
    m.pf.method = m.pfMethod;
    result.partialFourier = m.pf.toJson();
    result.partialFourier["line"] = m.pf.line();
  }
  progress.report(1.0, "GRAPPA: done");
  return result;
}

}  // namespace grappa

ImageSet reconstructGrappa(Backend& backend, const Dataset& d, const ReconSettings& s, Timings& timings,
                           const Progress& progress) {
  progress.report(0.0, "GRAPPA: planning");
  grappa::Pipeline pipeline(backend, d, s);
  return pipeline.run(d, timings, progress);
}

}  // namespace larmor::recon
