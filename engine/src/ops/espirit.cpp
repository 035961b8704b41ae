// ESPIRiT coil sensitivities (ops/espirit.hpp; Uecker et al., MRM 71:990, 2014): calibration matrix and
// its Gram matrix, the signal subspace by BART's threshold rule, the image-domain matrices M(x) (small
// grid, then sinc interpolation on the backend), and the pointwise eigenvectors (EspiritOps).
// Backend-neutral: the calibration matrix, FFTs, resizes, the Gram GEMM, the K C x K C eigen-decomposition
// (EspiritOps::gramKernels, double, the Gram never leaving the backend), the small grid's matrices and the
// pointwise kernel run on the backend; only the eigenvalues and the calibration's principal component are on
// the host.
#include "larmor/ops/espirit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "larmor/kernels/espirit_math.hpp"
#include "larmor/util/cancel_scope.hpp"
#include "larmor/util/error.hpp"

namespace larmor::ops {

namespace {
std::size_t bytesOf(index_t n) { return static_cast<std::size_t>(n) * sizeof(cfloat); }

/// Dominant eigenvector of the calibration's coil covariance, its largest component real and positive.
std::vector<cfloat> principalComponent(const CArray& cal, index_t points, index_t coils) {
  Eigen::MatrixXcd r = Eigen::MatrixXcd::Zero(coils, coils);
  for (index_t a = 0; a < coils; ++a)
    for (index_t b = 0; b <= a; ++b) {
      cdouble s = 0;
      for (index_t p = 0; p < points; ++p) s += cdouble(cal[p + points * a]) * std::conj(cdouble(cal[p + points * b]));
      r(a, b) = s;
      r(b, a) = std::conj(s);
    }
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXcd> es(r);
  Eigen::VectorXcd u = es.eigenvectors().col(coils - 1);
  index_t big = 0;
  for (index_t c = 1; c < coils; ++c)
    if (std::abs(u(c)) > std::abs(u(big))) big = c;
  if (std::abs(u(big)) > 0) u *= std::conj(u(big)) / std::abs(u(big));
  std::vector<cfloat> out(static_cast<std::size_t>(coils));
  for (index_t c = 0; c < coils; ++c) out[static_cast<std::size_t>(c)] = cfloat(u(c));
  return out;
}
}  // namespace

void espiritKernelSize(const index_t calibration[3], const index_t grid[3], int size, index_t kernel[3]) {
  require(size >= 1, "ESPIRiT: the kernel size must be >= 1");
  for (int d = 0; d < 3; ++d) {
    kernel[d] = grid[d] > 1 ? size : 1;
    require(calibration[d] >= kernel[d],
            "ESPIRiT: the calibration region " + std::to_string(calibration[0]) + "x" + std::to_string(calibration[1]) +
                "x" + std::to_string(calibration[2]) + " is smaller than the kernel " + std::to_string(size) +
                " along dimension " + std::to_string(d) + " (a larger fully sampled centre is needed)");
  }
}

namespace {

/// Step 1 and the Gram of step 2 on the backend: the box goes up (37 KB for 24^2 x 8 coils), A is made from it
/// there (830 KB), and its Gram A^H A (n x n, n = K C) stays there.
struct CalibrationGram {
  index_t kernel[3] = {1, 1, 1};
  index_t n = 0;
  std::unique_ptr<Buffer> gram;
};

CalibrationGram calibrationGram(Backend& be, const CArray& cal, const index_t grid[3], const EspiritOptions& o) {
  const Shape& s = cal.shape();
  require(s.rank() >= 3 && s.rank() <= 4, "ESPIRiT: calibration data must be [c0, c1, c2, coils], got " + s.str());
  const index_t box[3] = {s[0], s[1], s[2]}, coils = s.rank() > 3 ? s[3] : 1;
  require(grid[0] >= 1 && grid[1] >= 1 && grid[2] >= 1, "ESPIRiT: the image grid must be positive");
  require(o.threshold >= 0 && o.threshold < 1, "ESPIRiT: the threshold must be in [0, 1)");
  CalibrationGram g;
  espiritKernelSize(box, grid, o.kernel, g.kernel);
  const index_t* k = g.kernel;
  const index_t K = k[0] * k[1] * k[2], n = K * coils;
  g.n = n;
  const index_t rows = (box[0] - k[0] + 1) * (box[1] - k[1] + 1) * (box[2] - k[2] + 1);
  auto dcal = be.allocate(bytesOf(cal.size()));
  be.upload(*dcal, cal.data(), bytesOf(cal.size()));
  auto da = be.allocate(bytesOf(rows * n));
  const index_t box4[4] = {box[0], box[1], box[2], coils};
  be.espiritOps().calibrationMatrix(*da, *dcal, box4, k);
  dcal.reset();
  g.gram = be.allocate(bytesOf(n * n));
  const MatrixBatch ma{rows, n, rows, 0}, mg{n, n, n, 0};
  be.gemmBatched(MatOp::ConjTranspose, MatOp::None, n, n, rows, cfloat(1.f), *da, ma, *da, ma, cfloat(0.f), *g.gram, mg, 1);
  return g;
}

/// The L small-grid matrices' sinc interpolation to the image grid (zero-padded, inverse FFT, scaled by
/// sqrt(N / S)). On the host in groups of volumes with a cancellation check between (3D: 36 volumes of 4M voxels, a
/// single FFT of seconds; FFTW's per-volume transforms give the same bits in any batch); a GPU's in one call each.
void interpolateToGrid(Backend& be, Buffer& cov, Buffer& small, const index_t grid[3], const index_t s[3], index_t L) {
  const index_t N = grid[0] * grid[1] * grid[2], S = s[0] * s[1] * s[2];
  const cfloat scale(static_cast<float>(std::sqrt(static_cast<double>(N) / static_cast<double>(S))), 0.f);
  const index_t group = be.isGpu() ? L : std::max<index_t>(1, (index_t{1} << 22) / N);  // ~4M voxels per group
  for (index_t l0 = 0; l0 < L; l0 += group) {
    CancelScope::check();
    const index_t count = std::min(group, L - l0);
    const bool whole = count == L;
    auto part = whole ? nullptr : be.view(cov, bytesOf(N * l0), bytesOf(N * count));
    auto from = whole ? nullptr : be.view(small, bytesOf(S * l0), bytesOf(S * count));
    Buffer& to = whole ? cov : *part;
    const Shape bigShape{grid[0], grid[1], grid[2], count};
    be.resizeCentred(to, bigShape, whole ? small : *from, Shape{s[0], s[1], s[2], count});
    be.fft(to, bigShape, 3, FftDirection::Inverse);
    be.scale(to, scale, N * count);
  }
}

/// Steps 2 (the kept kernels) to 5 from the Gram's eigenvalues `ev` (ascending) and its kernels (conjugated
/// eigenvectors, largest first) on the backend.
EspiritResult mapsFromKernels(Backend& be, const CArray& cal, const index_t grid[3], const EspiritOptions& o,
                              const CalibrationGram& g, const std::vector<double>& ev, const Buffer& dkernels) {
  const Shape& s = cal.shape();
  const index_t box[3] = {s[0], s[1], s[2]}, coils = s.rank() > 3 ? s[3] : 1;
  EspiritResult res;
  std::copy_n(g.kernel, 3, res.kernel);
  const index_t* k = res.kernel;
  const index_t K = k[0] * k[1] * k[2], n = g.n;
  const double top = ev[static_cast<std::size_t>(n - 1)];
  require(top > 0 && std::isfinite(top), "ESPIRiT: the calibration region holds no signal");
  index_t kept = 0;
  while (kept < n && ev[static_cast<std::size_t>(n - 1 - kept)] > o.threshold * top) ++kept;
  res.kernelsKept = kept;
  res.kernelsTotal = n;

  // 3: u_i = centred inverse FFT of conj(V_i) zero-padded to the small grid (2k per dimension, or 1): the
  // first `kept` columns of the kernels are [k0, k1, k2, coils * kept]. The first `cols` columns are transformed,
  // kept rounded up to a power of two (the rest unused): with coils * kept itself, data-dependent, nearly every slice
  // made an FFT plan of its own and flushed the backend's plan cache (~23 plans, ~10 % of the cg-slices64 call on an
  // H200); now a Gram's size gives a few at most, for at most twice the (small) transforms.
  const index_t cols = std::min<index_t>(n, std::bit_ceil(static_cast<std::uint64_t>(kept)));
  const index_t small[3] = {k[0] > 1 ? 2 * k[0] : 1, k[1] > 1 ? 2 * k[1] : 1, k[2] > 1 ? 2 * k[2] : 1};
  const index_t S = small[0] * small[1] * small[2];
  const Shape uShape{small[0], small[1], small[2], coils * cols};
  auto du = be.allocate(bytesOf(uShape.size()));
  be.resizeCentred(*du, uShape, dkernels, Shape{k[0], k[1], k[2], coils * cols});
  be.fft(*du, uShape, 3, FftDirection::Inverse);
  // M on the small grid (EspiritOps, on the backend): (S / K) sum_i u_ia conj(u_ib) (S: the unitary FFT's
  // 1/sqrt(S) per factor undone).
  const index_t L = coils * (coils + 1) / 2;
  const Shape smallShape{small[0], small[1], small[2], L};
  auto dsmall = be.allocate(bytesOf(smallShape.size()));
  be.espiritOps().smallGridMatrices(*dsmall, *du, S, coils, kept, static_cast<double>(S) / static_cast<double>(K));
  du.reset();
  // Sinc interpolation to the image grid; values kept: the unitary pair scales by sqrt(S / N).
  const index_t N = grid[0] * grid[1] * grid[2];
  be.fft(*dsmall, smallShape, 3, FftDirection::Forward);
  auto dcov = be.allocate(bytesOf(N * L));
  interpolateToGrid(be, *dcov, *dsmall, grid, small, L);
  dsmall.reset();

  // 4-5: pointwise eigenvectors, crop and phase.
  auto dmaps = be.allocate(bytesOf(N * coils));
  auto dval = be.allocate(bytesOf(N));
  be.espiritOps().dominantEigenvectors(*dmaps, *dval, *dcov, N, coils, principalComponent(cal, box[0] * box[1] * box[2], coils),
                                       static_cast<float>(o.crop));
  if (o.keepOnDevice) {
    res.deviceMaps = std::move(dmaps);
    return res;
  }
  res.maps = CArray(Shape{grid[0], grid[1], grid[2], coils});
  be.download(res.maps.data(), *dmaps, bytesOf(N * coils));
  CArray val(Shape{N});  // array memory: huge pages for 3D grids (first touch, array.hpp)
  be.download(val.data(), *dval, bytesOf(N));
  res.eigenvalues = RArray(Shape{grid[0], grid[1], grid[2]});
  for (index_t x = 0; x < N; ++x) res.eigenvalues[x] = val[x].real();
  return res;
}

}  // namespace

EspiritResult espirit(Backend& be, const CArray& cal, const index_t grid[3], const EspiritOptions& o) {
  // 1-2: A, its Gram matrix and the Gram's eigen-decomposition (double) on the backend; only the eigenvalues
  // come to the host. The kernels come back conjugated, largest eigenvalue first.
  const CalibrationGram g = calibrationGram(be, cal, grid, o);
  std::vector<double> ev;  // ascending
  auto dkernels = be.allocate(bytesOf(g.n * g.n));
  be.espiritOps().gramKernels(*g.gram, g.n, ev, *dkernels);
  return mapsFromKernels(be, cal, grid, o, g, ev, *dkernels);
}

std::vector<EspiritResult> espiritBatch(Backend& be, const std::vector<CArray>& cals, const index_t grid[3],
                                        const EspiritOptions& o) {
  std::vector<CalibrationGram> grams;
  for (const CArray& cal : cals) grams.push_back(calibrationGram(be, cal, grid, o));
  // The eigen-solves batched over the Grams of each size (calibration boxes that differ between slices can give
  // Grams of other sizes); a Gram's result depends only on itself (EspiritOps::gramKernelsBatched).
  std::vector<std::vector<double>> ev(grams.size());
  std::vector<std::unique_ptr<Buffer>> kernels;
  for (std::size_t b = 0; b < grams.size(); ++b) kernels.push_back(be.allocate(bytesOf(grams[b].n * grams[b].n)));
  std::vector<index_t> batch(grams.size(), 1);
  std::vector<bool> done(grams.size(), false);
  for (std::size_t b0 = 0; b0 < grams.size(); ++b0) {
    if (done[b0]) continue;
    const index_t n = grams[b0].n;
    std::vector<std::size_t> members;
    std::vector<const Buffer*> g;
    std::vector<Buffer*> k;
    for (std::size_t b = b0; b < grams.size(); ++b)
      if (!done[b] && grams[b].n == n) {
        members.push_back(b);
        g.push_back(grams[b].gram.get());
        k.push_back(kernels[b].get());
        done[b] = true;
      }
    std::vector<std::vector<double>> values;
    const index_t used = be.espiritOps().gramKernelsBatched(g, n, values, k);
    for (std::size_t i = 0; i < members.size(); ++i) {
      ev[members[i]] = std::move(values[i]);
      batch[members[i]] = used;
    }
  }
  std::vector<EspiritResult> out;
  for (std::size_t b = 0; b < grams.size(); ++b) {
    grams[b].gram.reset();
    out.push_back(mapsFromKernels(be, cals[b], grid, o, grams[b], ev[b], *kernels[b]));
    out.back().eigenBatch = batch[b];
    kernels[b].reset();
  }
  return out;
}

}  // namespace larmor::ops
