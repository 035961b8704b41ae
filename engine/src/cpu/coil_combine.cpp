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

}  // namespace

void CpuCoilCombineOps::adaptiveCombine(Buffer& out, const Buffer& in, const index_t dims[3], index_t coils,
                                        index_t batch, int window) {
  require(coils >= 1 && batch >= 1, "adaptive combine: coils and batch must be positive");
  require(window >= 1 && window <= 64, "adaptive combine: window must be 1 to 64, got " + std::to_string(window));
  for (int d = 0; d < 3; ++d) require(dims[d] >= 1, "adaptive combine: image dimensions must be positive");
  const index_t nx = dims[0], ny = dims[1], nz = dims[2], plane = nx * ny, voxels = plane * nz;
  require(static_cast<std::size_t>(voxels * coils * batch) * sizeof(cfloat) <= in.bytes(),
          "adaptive combine: the coil image buffer is too small");
  require(static_cast<std::size_t>(voxels * batch) * sizeof(cfloat) <= out.bytes(),
          "adaptive combine: the output buffer is too small");
  const index_t h = window / 2;
  const index_t hz = nz > 1 ? h : 0;
  const index_t u = coils * (coils + 1) / 2;  // entries a <= b of R
  const auto* x = static_cast<const cfloat*>(in.ptr());
  auto* y = static_cast<cfloat*>(out.ptr());

  std::vector<index_t> ea(static_cast<std::size_t>(u)), eb(static_cast<std::size_t>(u));
  for (index_t a = 0, e = 0; a < coils; ++a)
    for (index_t b = a; b < coils; ++b, ++e) ea[static_cast<std::size_t>(e)] = a, eb[static_cast<std::size_t>(e)] = b;

  const index_t ringSize = 2 * hz + 1;
  std::vector<std::vector<cfloat>> ring(static_cast<std::size_t>(ringSize));
  std::vector<index_t> ringPlane(static_cast<std::size_t>(ringSize), -1);
  std::vector<cfloat> tmp(static_cast<std::size_t>(plane * u));

  for (index_t bt = 0; bt < batch; ++bt) {
    const cfloat* xb = x + bt * coils * voxels;
    std::fill(ringPlane.begin(), ringPlane.end(), -1);
    // The x-y box-filtered covariance of plane z, into its ring slot.
    auto planeCovariance = [&](index_t z) {
      std::vector<cfloat>& dst = ring[static_cast<std::size_t>(z % ringSize)];
      dst.resize(static_cast<std::size_t>(plane * u));
      ringPlane[static_cast<std::size_t>(z % ringSize)] = z;
      const bool parallel = plane * u > kParallelWork;
#pragma omp parallel for schedule(static) if (parallel)
      for (index_t v = 0; v < plane; ++v) {
        cfloat* r = dst.data() + v * u;
        for (index_t e = 0; e < u; ++e)
          r[e] = xb[ea[static_cast<std::size_t>(e)] * voxels + z * plane + v] *
                 std::conj(xb[eb[static_cast<std::size_t>(e)] * voxels + z * plane + v]);
      }
#pragma omp parallel for schedule(static) if (parallel)
      for (index_t j = 0; j < ny; ++j) boxLine(dst.data() + j * nx * u, tmp.data() + j * nx * u, nx, 1, u, h);
#pragma omp parallel for schedule(static) if (parallel)
      for (index_t i = 0; i < nx; ++i) boxLine(tmp.data() + i * u, dst.data() + i * u, ny, nx, u, h);
    };

    for (index_t z = 0; z < nz; ++z) {
      const index_t z0 = std::max<index_t>(0, z - hz), z1 = std::min(nz - 1, z + hz);
      for (index_t p = z0; p <= z1; ++p)
        if (ringPlane[static_cast<std::size_t>(p % ringSize)] != p) planeCovariance(p);
#pragma omp parallel if (plane * coils * coils > kParallelWork / 8)
      {
        std::vector<cdouble> r(static_cast<std::size_t>(coils * coils)), v(static_cast<std::size_t>(coils)),
            w(static_cast<std::size_t>(coils));
#pragma omp for schedule(static)
        for (index_t i = 0; i < plane; ++i) {
          // R (Hermitian, column-major) summed over the window's planes.
          std::fill(r.begin(), r.end(), cdouble(0));
          for (index_t p = z0; p <= z1; ++p) {
            const cfloat* src = ring[static_cast<std::size_t>(p % ringSize)].data() + i * u;
            for (index_t e = 0; e < u; ++e) {
              const index_t a = ea[static_cast<std::size_t>(e)], b = eb[static_cast<std::size_t>(e)];
              r[static_cast<std::size_t>(a + coils * b)] += cdouble(src[e]);
            }
          }
          index_t best = 0;
          for (index_t a = 0; a < coils; ++a) {
            for (index_t b = 0; b < a; ++b)
              r[static_cast<std::size_t>(a + coils * b)] = std::conj(r[static_cast<std::size_t>(b + coils * a)]);
            if (r[static_cast<std::size_t>(a + coils * a)].real() > r[static_cast<std::size_t>(best + coils * best)].real())
              best = a;
          }
          // Power iteration from the column of the largest diagonal entry (never orthogonal to the
          // dominant eigenvector of a non-zero positive semidefinite R).
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
          // Phase: first coil's component real and positive (backend.hpp's contract).
          const double a0 = std::abs(v[0]);
          if (a0 > 0) {
            const cdouble ph = std::conj(v[0]) / a0;
            for (auto& e : v) e *= ph;
          }
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
