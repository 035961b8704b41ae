// Adaptive coil combination (Walsh, Gmitro, Marcellin, MRM 43:682, 2000). With coil images x_c = s_c rho
// + noise, the SNR-optimal combination weights at a voxel are the dominant eigenvector v of the signal
// covariance; Walsh et al. estimate the covariance R = sum x x^H over a small neighbourhood (where the
// sensitivities s are nearly constant) and use v^H x. For noise-free data and constant s in the window,
// R = (sum |rho|^2) s s^H, v = s / |s| up to a phase, and v^H x = |s| rho e^{i arg s_0}: the magnitude is
// |rho| sqrt(sum_c |s_c|^2), what a sum of squares gives, with the object's phase kept (relative to the
// first coil's, the convention of backend.hpp).
//
// The covariance's C(C+1)/2 distinct entries are box-filtered separably: along x and y per plane, and
// along z (3D) through a ring of the 2h+1 planes the window needs, so memory stays at a few planes.
// The eigenvector comes from power iteration on the C x C matrix in double (a handful of iterations:
// where there is signal R is nearly rank one).
//
// Twin: cuda/coil_combine.cu (one thread group per voxel, same power iteration); both implement
// CoilCombineOps (larmor/backend/coil_combine_ops.hpp).
#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu_backend.hpp"
#include "larmor/kernels/kernel_math.hpp"

namespace larmor::cpu {

namespace {

using kernels::kPowerIterations;
// Below this much work per plane a loop runs on one thread (waking a team costs more).
constexpr index_t kParallelWork = 1 << 14;

/// Box sum of width 2h+1 (clamped at the borders) along a line of `n` points of `u` values each,
/// stride `stride` points between successive points.
void boxLine(const cfloat* in, cfloat* out, index_t n, index_t stride, index_t u, index_t h) {
  for (index_t i = 0; i < n; ++i) {
    const index_t a = std::max<index_t>(0, i - h), b = std::min(n - 1, i + h);
    cfloat* o = out + i * stride * u;
    std::fill(o, o + u, cfloat(0));
    for (index_t k = a; k <= b; ++k) {
      const cfloat* s = in + k * stride * u;
      for (index_t e = 0; e < u; ++e) o[e] += s[e];
    }
  }
}

/// The covariance's entries a <= b (index e < u = C(C+1)/2 of coils ea[e], eb[e]) of one batch item's coil images,
/// box-filtered along x and y per plane, kept for the ring of the 2 hz + 1 planes a window along z needs.
class CovarianceRing {
 public:
  CovarianceRing(const index_t dims[3], index_t coils, index_t h, index_t hz)
      : nx_(dims[0]), ny_(dims[1]), plane_(nx_ * ny_), voxels_(plane_ * dims[2]), coils_(coils),
        u_(coils * (coils + 1) / 2), h_(h), size_(2 * hz + 1), ea_(static_cast<std::size_t>(u_)),
        eb_(static_cast<std::size_t>(u_)), ring_(static_cast<std::size_t>(size_)),
        ringPlane_(static_cast<std::size_t>(size_), -1), tmp_(static_cast<std::size_t>(plane_ * u_)) {
    for (index_t a = 0, e = 0; a < coils; ++a)
      for (index_t b = a; b < coils; ++b, ++e)
        ea_[static_cast<std::size_t>(e)] = a, eb_[static_cast<std::size_t>(e)] = b;
  }

  /// A new batch item's coil images [voxels, coils]: forgets the planes held.
  void start(const cfloat* xb) {
    xb_ = xb;
    std::fill(ringPlane_.begin(), ringPlane_.end(), -1);
  }

  /// Planes z0 .. z1 filtered and held (those not held yet are computed).
  void hold(index_t z0, index_t z1) {
    for (index_t p = z0; p <= z1; ++p)
      if (ringPlane_[static_cast<std::size_t>(p % size_)] != p) filterPlane(p);
  }

  /// R (Hermitian, column-major, upper triangle only) at in-plane voxel i summed over the held planes z0 .. z1.
  void sum(index_t i, index_t z0, index_t z1, std::vector<cdouble>& r) const {
    std::fill(r.begin(), r.end(), cdouble(0));
    for (index_t p = z0; p <= z1; ++p) {
      const cfloat* src = ring_[static_cast<std::size_t>(p % size_)].data() + i * u_;
      for (index_t e = 0; e < u_; ++e) {
        const index_t a = ea_[static_cast<std::size_t>(e)], b = eb_[static_cast<std::size_t>(e)];
        r[static_cast<std::size_t>(a + coils_ * b)] += cdouble(src[e]);
      }
    }
  }

 private:
  /// The x-y box-filtered covariance of plane z, into its ring slot.
  void filterPlane(index_t z) {
    std::vector<cfloat>& dst = ring_[static_cast<std::size_t>(z % size_)];
    dst.resize(static_cast<std::size_t>(plane_ * u_));
    ringPlane_[static_cast<std::size_t>(z % size_)] = z;
    const bool parallel = plane_ * u_ > kParallelWork;
    const cfloat* xb = xb_;
#pragma omp parallel for schedule(static) if (parallel)
    for (index_t v = 0; v < plane_; ++v) {
      cfloat* r = dst.data() + v * u_;
      for (index_t e = 0; e < u_; ++e)
        r[e] = xb[ea_[static_cast<std::size_t>(e)] * voxels_ + z * plane_ + v] *
               std::conj(xb[eb_[static_cast<std::size_t>(e)] * voxels_ + z * plane_ + v]);
    }
#pragma omp parallel for schedule(static) if (parallel)
    for (index_t j = 0; j < ny_; ++j) boxLine(dst.data() + j * nx_ * u_, tmp_.data() + j * nx_ * u_, nx_, 1, u_, h_);
#pragma omp parallel for schedule(static) if (parallel)
    for (index_t i = 0; i < nx_; ++i) boxLine(tmp_.data() + i * u_, dst.data() + i * u_, ny_, nx_, u_, h_);
  }

  index_t nx_, ny_, plane_, voxels_, coils_, u_, h_, size_;
  std::vector<index_t> ea_, eb_;
  std::vector<std::vector<cfloat>> ring_;
  std::vector<index_t> ringPlane_;
  std::vector<cfloat> tmp_;
  const cfloat* xb_ = nullptr;
};

/// R's lower triangle from its upper one; returns the (first) coil of R's largest diagonal entry.
index_t completeHermitian(std::vector<cdouble>& r, index_t coils) {
  index_t best = 0;
  for (index_t a = 0; a < coils; ++a) {
    for (index_t b = 0; b < a; ++b)
      r[static_cast<std::size_t>(a + coils * b)] = std::conj(r[static_cast<std::size_t>(b + coils * a)]);
    if (r[static_cast<std::size_t>(a + coils * a)].real() > r[static_cast<std::size_t>(best + coils * best)].real())
      best = a;
  }
  return best;
}

/// v: R's dominant unit eigenvector by power iteration from column `best` (never orthogonal to the dominant
/// eigenvector of a non-zero positive semidefinite R; R = 0 gives e_0), its first coil's component made real and
/// positive (backend.hpp's contract). w is scratch of `coils` entries.
void dominantEigenvector(const std::vector<cdouble>& r, index_t coils, index_t best, std::vector<cdouble>& v,
                         std::vector<cdouble>& w) {
  double norm = 0;
  for (index_t a = 0; a < coils; ++a) {
    v[static_cast<std::size_t>(a)] = r[static_cast<std::size_t>(a + coils * best)];
    norm += std::norm(v[static_cast<std::size_t>(a)]);
  }
  if (norm == 0) {
    std::fill(v.begin(), v.end(), cdouble(0));
    v[0] = 1;
  } else {
    norm = std::sqrt(norm);
    for (auto& e : v) e /= norm;
    for (int it = 0; it < kPowerIterations; ++it) {
      double nw = 0;
      for (index_t a = 0; a < coils; ++a) {
        cdouble s = 0;
        for (index_t b = 0; b < coils; ++b)
          s += r[static_cast<std::size_t>(a + coils * b)] * v[static_cast<std::size_t>(b)];
        w[static_cast<std::size_t>(a)] = s;
        nw += std::norm(s);
      }
      if (nw == 0) break;
      nw = std::sqrt(nw);
      double change = 0;
      for (index_t a = 0; a < coils; ++a) {
        const cdouble nv = w[static_cast<std::size_t>(a)] / nw;
        change += std::norm(nv - v[static_cast<std::size_t>(a)]);
        v[static_cast<std::size_t>(a)] = nv;
      }
      if (change < 1e-14) break;
    }
  }
  const double a0 = std::abs(v[0]);
  if (a0 > 0) {
    const cdouble ph = std::conj(v[0]) / a0;
    for (auto& e : v) e *= ph;
  }
}

}  // namespace

void CpuCoilCombineOps::adaptiveCombine(Buffer& out, const Buffer& in, const index_t dims[3], index_t coils,
                                        index_t batch, int window) {
  require(coils >= 1 && batch >= 1, "adaptive combine: coils and batch must be positive");
  require(window >= 1 && window <= 64, "adaptive combine: window must be 1 to 64, got " + std::to_string(window));
  for (int d = 0; d < 3; ++d) require(dims[d] >= 1, "adaptive combine: image dimensions must be positive");
  const index_t nz = dims[2], plane = dims[0] * dims[1], voxels = plane * nz;
  require(static_cast<std::size_t>(voxels * coils * batch) * sizeof(cfloat) <= in.bytes(),
          "adaptive combine: the coil image buffer is too small");
  require(static_cast<std::size_t>(voxels * batch) * sizeof(cfloat) <= out.bytes(),
          "adaptive combine: the output buffer is too small");
  const index_t h = window / 2;
  const index_t hz = nz > 1 ? h : 0;
  const auto* x = static_cast<const cfloat*>(in.ptr());
  auto* y = static_cast<cfloat*>(out.ptr());
  CovarianceRing covariance(dims, coils, h, hz);

  for (index_t bt = 0; bt < batch; ++bt) {
    const cfloat* xb = x + bt * coils * voxels;
    covariance.start(xb);
    for (index_t z = 0; z < nz; ++z) {
      const index_t z0 = std::max<index_t>(0, z - hz), z1 = std::min(nz - 1, z + hz);
      covariance.hold(z0, z1);
#pragma omp parallel if (plane * coils * coils > kParallelWork / 8)
      {
        std::vector<cdouble> r(static_cast<std::size_t>(coils * coils)), v(static_cast<std::size_t>(coils)),
            w(static_cast<std::size_t>(coils));
#pragma omp for schedule(static)
        for (index_t i = 0; i < plane; ++i) {
          covariance.sum(i, z0, z1, r);
          dominantEigenvector(r, coils, completeHermitian(r, coils), v, w);
          cdouble s = 0;
          for (index_t c = 0; c < coils; ++c)
            s += std::conj(v[static_cast<std::size_t>(c)]) * cdouble(xb[c * voxels + z * plane + i]);
          y[bt * voxels + z * plane + i] = cfloat(s);
        }
      }
    }
  }
}

}  // namespace larmor::cpu
