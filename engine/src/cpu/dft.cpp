// CPU exact non-uniform DFT (Stone et al. 2008's F d and F^H d): every sample times every voxel.
//   forward  d_j   = sum_n rho_n exp(-2 pi i k_j . r_n)
//   adjoint  rho_n = sum_j d_j  exp(+2 pi i k_j . r_n)
// Work is split into voxel rows (x fastest) and blocks of samples held in L1; the inner loops run over a
// block of samples with unit stride (vectorised; AVX2/FMA and baseline clones are dispatched at run time).
// Each phasor is computed once per (voxel, sample) and applied to every coil of the batch.
//
// Trigonometry (DftOptions::trig):
//  - Accurate: the phase in cycles in double, reduced to f = phase - nearest integer (exact: sincospi's
//    reduction), then to an octant, and sin/cos of 2 pi g (|g| <= 1/8) by Taylor series to 1e-19:
//    about double precision, independent of |k r|.
//  - Fast: the argument 2 pi (k . r) formed in float and reduced with a single-precision pi/2 (no
//    Cody-Waite extension), then float polynomials: the CPU analogue of CUDA's __sincosf (Stone's
//    GPU.FastTrig), whose absolute error grows with the argument.
//  - Recurrence: one accurate phasor per sample and voxel row, then complex rotations by
//    exp(+-2 pi i kx / N0) along the row, in float (rounding errors grow along the row).
// Accumulation: per block of samples (or voxels) in the phasor's precision, across blocks in double.
// Cancellation: the caller's CancelScope is polled per block of samples (adjoint) or voxel row (forward), so
// Cancel stops a transform within one block; the output then holds no result.
//
// Twin: cuda/dft.cu (the same phases, split into an exact and a small part on the GPU).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "cpu_backend.hpp"
#include "larmor/traj/trajectory.hpp"
#include "larmor/util/cancel_scope.hpp"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LARMOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define LARMOR_CLONES
#endif

namespace larmor::cpu {

namespace {

constexpr index_t kBlock = 256;  // samples per block (both directions)
// Below this many (voxel, sample) pairs the transform runs on one thread (waking a team costs more).
constexpr double kParallelPairs = 1 << 16;

/// round-to-nearest without SSE4.1 (vectorises on baseline x86-64): valid for |x| < 2^51.
inline double roundNearest(double x) {
  const double magic = 6755399441055744.0;  // 1.5 * 2^52
  return (x + magic) - magic;
}
inline float roundNearest(float x) {
  const float magic = 12582912.0f;  // 1.5 * 2^23, valid for |x| < 2^22
  return (x + magic) - magic;
}

/// sin and cos of 2 pi f for any f (cycles), double accuracy.
inline void sincos2piAccurate(double f, double& s, double& c) {
  f -= roundNearest(f);                // [-1/2, 1/2]
  const double q = roundNearest(4 * f);  // octant centre: -2 .. 2
  const double t = 2 * 3.14159265358979323846 * (f - 0.25 * q);  // |t| <= pi/4
  const double t2 = t * t;
  const double sp =
      t * (1 + t2 * (-1.0 / 6 + t2 * (1.0 / 120 + t2 * (-1.0 / 5040 + t2 * (1.0 / 362880 + t2 * (-1.0 / 39916800 +
          t2 * (1.0 / 6227020800.0 + t2 * (-1.0 / 1307674368000.0 + t2 * (1.0 / 355687428096000.0)))))))));
  const double cp =
      1 + t2 * (-0.5 + t2 * (1.0 / 24 + t2 * (-1.0 / 720 + t2 * (1.0 / 40320 + t2 * (-1.0 / 3628800 +
          t2 * (1.0 / 479001600.0 + t2 * (-1.0 / 87178291200.0 + t2 * (1.0 / 20922789888000.0 +
          t2 * (-1.0 / 6402373705728000.0)))))))));
  // sin/cos(t + q pi/2) for q mod 4 = 0, 1, 2, 3 (q = -1 is 3, q = -2 is 2): swap for odd q, negate sin
  // for q mod 4 in {2, 3}, cos for {1, 2}. Arithmetic, not branches: quadrants are random from sample to
  // sample (a branch mispredicts half the time) and selects keep the loop vectorisable.
  const int qm = static_cast<int>(q) & 3;
  const double swap = static_cast<double>(qm & 1);
  const double signS = static_cast<double>(1 - (qm & 2)), signC = static_cast<double>(1 - ((qm + 1) & 2));
  s = signS * (sp + swap * (cp - sp));
  c = signC * (cp + swap * (sp - cp));
}

/// sin and cos of a (radians) in float with a naive reduction (see the top of the file).
inline void sincosFast(float a, float& s, float& c) {
  const float q = roundNearest(a * 0.636619772f);
  const float t = a - q * 1.57079637f;
  const float t2 = t * t;
  const float sp = t * (1 + t2 * (-1.f / 6 + t2 * (1.f / 120 + t2 * (-1.f / 5040 + t2 * (1.f / 362880)))));
  const float cp = 1 + t2 * (-0.5f + t2 * (1.f / 24 + t2 * (-1.f / 720 + t2 * (1.f / 40320))));
  const int qm = static_cast<int>(q) & 3;  // q mod 4 (two's complement), see sincos2piAccurate
  const float swap = static_cast<float>(qm & 1);
  const float signS = static_cast<float>(1 - (qm & 2)), signC = static_cast<float>(1 - ((qm + 1) & 2));
  s = signS * (sp + swap * (cp - sp));
  c = signC * (cp + swap * (sp - cp));
}

// --- phasors of one block of samples at one voxel: p_j = exp(sign 2 pi i (kx_j x + base_j)) -------------
LARMOR_CLONES
void phasorsAccurate(index_t n, const double* kx, const double* base, double x, double sign, double* pr, double* pi) {
#pragma omp simd
  for (index_t j = 0; j < n; ++j) {
    double s, c;
    sincos2piAccurate(kx[j] * x + base[j], s, c);
    pr[j] = c;
    pi[j] = sign * s;
  }
}

LARMOR_CLONES
void phasorsFast(index_t n, const float* kx, const float* base, float x, float sign, float* pr, float* pi) {
#pragma omp simd
  for (index_t j = 0; j < n; ++j) {
    float s, c;
    sincosFast(6.28318531f * (kx[j] * x + base[j]), s, c);
    pr[j] = c;
    pi[j] = sign * s;
  }
}

/// p *= rot (complex, elementwise): one step of the recurrence along a row.
LARMOR_CLONES
void rotate(index_t n, float* pr, float* pi, const float* rr, const float* ri) {
#pragma omp simd
  for (index_t j = 0; j < n; ++j) {
    const float a = pr[j], b = pi[j];
    pr[j] = a * rr[j] - b * ri[j];
    pi[j] = a * ri[j] + b * rr[j];
  }
}

/// (sum_j d_j p_j) for one coil: the adjoint's inner product over a block. (Overloads, not a template:
/// target_clones and templates do not mix reliably.)
#define LARMOR_DOT_BLOCK(T)                                                                              \
  LARMOR_CLONES void dotBlock(index_t n, const T* dr, const T* di, const T* pr, const T* pi, double& outR, \
                              double& outI) {                                                            \
    T sr = 0, si = 0;                                                                                    \
    _Pragma("omp simd reduction(+ : sr, si)") for (index_t j = 0; j < n; ++j) {                          \
      sr += dr[j] * pr[j] - di[j] * pi[j];                                                               \
      si += di[j] * pr[j] + dr[j] * pi[j];                                                               \
    }                                                                                                    \
    outR += sr;                                                                                          \
    outI += si;                                                                                          \
  }
LARMOR_DOT_BLOCK(double)
LARMOR_DOT_BLOCK(float)
#undef LARMOR_DOT_BLOCK

/// acc_j += v p_j for one coil: the forward's update of a block of samples by one voxel.
#define LARMOR_AXPY_BLOCK(T)                                                                     \
  LARMOR_CLONES void axpyBlock(index_t n, T vr, T vi, const T* pr, const T* pi, T* ar, T* ai) { \
    _Pragma("omp simd") for (index_t j = 0; j < n; ++j) {                                        \
      ar[j] += vr * pr[j] - vi * pi[j];                                                          \
      ai[j] += vi * pr[j] + vr * pi[j];                                                          \
    }                                                                                            \
  }
LARMOR_AXPY_BLOCK(double)
LARMOR_AXPY_BLOCK(float)
#undef LARMOR_AXPY_BLOCK

template <class T>
struct Split {
  std::vector<T> re, im;
  void resize(std::size_t n) {
    re.assign(n, T(0));
    im.assign(n, T(0));
  }
};

class CpuDftPlan final : public NufftPlan {
 public:
  CpuDftPlan(Backend&, const NufftGeometry& g, const DftOptions& o) : trig_(o.trig) {
    require(g.dims == 2 || g.dims == 3, "DFT: dims must be 2 or 3, got " + std::to_string(g.dims));
    dims_ = g.dims;
    for (int d = 0; d < 3; ++d) {
      n_[d] = d < dims_ ? g.image[d] : 1;
      require(n_[d] >= 1 && n_[d] <= 65536, "DFT: image size must be 1 to 65536 in each dimension");
    }
    require(dims_ == 3 || g.image[2] <= 1, "DFT: a 2D plan needs image[2] = 1");
    traj::validate(g.trajectory, dims_, n_, "DFT trajectory");
    m_ = g.samples();
    voxels_ = n_[0] * n_[1] * n_[2];
    for (int d = 0; d < 3; ++d) {
      k_[d].resize(static_cast<std::size_t>(m_));
      kf_[d].resize(static_cast<std::size_t>(m_));
      for (index_t j = 0; j < m_; ++j) {
        const double v = d < dims_ ? static_cast<double>(g.trajectory[3 * j + d]) : 0.0;
        k_[d][static_cast<std::size_t>(j)] = v;
        kf_[d][static_cast<std::size_t>(j)] = static_cast<float>(v);
      }
      r_[d].resize(static_cast<std::size_t>(n_[d]));
      for (index_t n = 0; n < n_[d]; ++n)
        r_[d][static_cast<std::size_t>(n)] = static_cast<double>(n - n_[d] / 2) / static_cast<double>(n_[d]);
    }
    if (trig_ == TrigMode::Recurrence) {
      // exp(+2 pi i kx / N0): the phasor's step from one voxel of a row to the next.
      rotR_.resize(static_cast<std::size_t>(m_));
      rotI_.resize(static_cast<std::size_t>(m_));
      for (index_t j = 0; j < m_; ++j) {
        double s, c;
        sincos2piAccurate(k_[0][static_cast<std::size_t>(j)] / static_cast<double>(n_[0]), s, c);
        rotR_[static_cast<std::size_t>(j)] = static_cast<float>(c);
        rotI_[static_cast<std::size_t>(j)] = static_cast<float>(s);
      }
    }
  }

  index_t samples() const override { return m_; }
  Shape imageShape() const override { return Shape{n_[0], n_[1], n_[2]}; }

  void adjoint(const Buffer& samples, Buffer& image, index_t batch) override {
    check(samples, m_ * batch, "sample");
    check(image, voxels_ * batch, "image");
    const auto* d = static_cast<const cfloat*>(samples.ptr());
    auto* out = static_cast<cfloat*>(image.ptr());
    if (trig_ == TrigMode::Accurate) adjointT<double>(d, out, batch);
    else adjointT<float>(d, out, batch);
  }

  void forward(const Buffer& image, Buffer& samples, index_t batch) override {
    check(image, voxels_ * batch, "image");
    check(samples, m_ * batch, "sample");
    const auto* in = static_cast<const cfloat*>(image.ptr());
    auto* d = static_cast<cfloat*>(samples.ptr());
    if (trig_ == TrigMode::Accurate) forwardT<double>(in, d, batch);
    else forwardT<float>(in, d, batch);
  }

  /// forward(adjoint(w)): the exact (Dirichlet-kernel) analogue of the NUFFT's interp(spread(w)).
  void spreadInterpolate(const Buffer& weights, Buffer& out) override {
    check(weights, m_, "weight");
    check(out, m_, "output");
    std::vector<cfloat> img(static_cast<std::size_t>(voxels_));
    const auto* w = static_cast<const cfloat*>(weights.ptr());
    if (trig_ == TrigMode::Accurate) {
      adjointT<double>(w, img.data(), 1);
      forwardT<double>(img.data(), static_cast<cfloat*>(out.ptr()), 1);
    } else {
      adjointT<float>(w, img.data(), 1);
      forwardT<float>(img.data(), static_cast<cfloat*>(out.ptr()), 1);
    }
  }

 private:
  void check(const Buffer& b, index_t elements, const char* what) const {
    require(elements >= 0 && static_cast<std::size_t>(elements) * sizeof(cfloat) <= b.bytes(),
            std::string("DFT: the ") + what + " buffer holds " + std::to_string(b.bytes() / sizeof(cfloat)) +
                " complex values, " + std::to_string(elements) + " are needed");
  }

  /// Phasors of samples [j0, j0 + n) at voxel x of a row whose (y, z) part of the phase is base.
  template <class T>
  void phasors(index_t j0, index_t n, index_t x, const T* base, double sign, T* pr, T* pi) const {
    if constexpr (std::is_same_v<T, double>) {
      phasorsAccurate(n, k_[0].data() + j0, base, r_[0][static_cast<std::size_t>(x)], sign, pr, pi);
    } else {
      phasorsFast(n, kf_[0].data() + j0, base, static_cast<float>(r_[0][static_cast<std::size_t>(x)]),
                  static_cast<float>(sign), pr, pi);
    }
  }

  /// The (y, z) part of the phase of samples [j0, j0 + n) for row (y, z), in cycles; for the recurrence
  /// also the accurate phasor at x = 0 of the row.
  template <class T>
  void rowStart(index_t j0, index_t n, index_t y, index_t z, double sign, T* base, T* pr, T* pi) const {
    const double ry = r_[1][static_cast<std::size_t>(y)], rz = r_[2][static_cast<std::size_t>(z)];
    const double rx0 = r_[0][0];
    for (index_t j = 0; j < n; ++j) {
      const std::size_t s = static_cast<std::size_t>(j0 + j);
      const double b = k_[1][s] * ry + k_[2][s] * rz;
      if (trig_ == TrigMode::Recurrence) {
        double sn, cs;
        sincos2piAccurate(k_[0][s] * rx0 + b, sn, cs);
        pr[j] = static_cast<T>(cs);
        pi[j] = static_cast<T>(sign * sn);
      } else if (trig_ == TrigMode::Fast) {
        base[j] = static_cast<T>(static_cast<float>(kf_[1][s]) * static_cast<float>(ry) +
                                 static_cast<float>(kf_[2][s]) * static_cast<float>(rz));
      } else {
        base[j] = static_cast<T>(b);
      }
    }
  }

  template <class T>
  void adjointT(const cfloat* d, cfloat* out, index_t batch) const {
    const index_t m = m_, n0 = n_[0], rows = n_[1] * n_[2];
    // Samples split into real and imaginary arrays of the phasor's type, per coil.
    Split<T> data;
    data.resize(static_cast<std::size_t>(m * batch));
    const bool parallel = static_cast<double>(m) * static_cast<double>(voxels_) * static_cast<double>(batch) > kParallelPairs;
    ParallelCancel cancel;
#pragma omp parallel for schedule(static) if (parallel)
    for (index_t i = 0; i < m * batch; ++i) {
      data.re[static_cast<std::size_t>(i)] = static_cast<T>(d[i].real());
      data.im[static_cast<std::size_t>(i)] = static_cast<T>(d[i].imag());
    }
#pragma omp parallel if (parallel)
    {
      std::vector<T> base(kBlock), pr(kBlock), pi(kBlock);
      std::vector<double> acc(static_cast<std::size_t>(2 * n0 * batch));
#pragma omp for schedule(dynamic, 1)
      for (index_t row = 0; row < rows; ++row) {
        const index_t y = row % n_[1], z = row / n_[1];
        std::fill(acc.begin(), acc.end(), 0.0);
        for (index_t j0 = 0; j0 < m && !cancel.stop(); j0 += kBlock) {
          const index_t n = std::min(kBlock, m - j0);
          rowStart<T>(j0, n, y, z, +1.0, base.data(), pr.data(), pi.data());
          for (index_t x = 0; x < n0; ++x) {
            if (trig_ == TrigMode::Recurrence) {
              if (x > 0) {
                if constexpr (std::is_same_v<T, float>)
                  rotate(n, pr.data(), pi.data(), rotR_.data() + j0, rotI_.data() + j0);
              }
            } else {
              phasors<T>(j0, n, x, base.data(), +1.0, pr.data(), pi.data());
            }
            for (index_t c = 0; c < batch; ++c) {
              const std::size_t off = static_cast<std::size_t>(c * m + j0);
              dotBlock(n, data.re.data() + off, data.im.data() + off, pr.data(), pi.data(),
                          acc[static_cast<std::size_t>(2 * (x * batch + c))],
                          acc[static_cast<std::size_t>(2 * (x * batch + c) + 1)]);
            }
          }
        }
        for (index_t c = 0; c < batch; ++c)
          for (index_t x = 0; x < n0; ++x)
            out[c * voxels_ + row * n0 + x] =
                cfloat(static_cast<float>(acc[static_cast<std::size_t>(2 * (x * batch + c))]),
                       static_cast<float>(acc[static_cast<std::size_t>(2 * (x * batch + c) + 1)]));
      }
    }
    cancel.rethrow();
  }

  template <class T>
  void forwardT(const cfloat* img, cfloat* d, index_t batch) const {
    const index_t m = m_, n0 = n_[0], rows = n_[1] * n_[2];
    const index_t blocks = (m + kBlock - 1) / kBlock;
    const bool parallel = static_cast<double>(m) * static_cast<double>(voxels_) * static_cast<double>(batch) > kParallelPairs;
    ParallelCancel cancel;
#pragma omp parallel if (parallel)
    {
      std::vector<T> base(kBlock), pr(kBlock), pi(kBlock);
      std::vector<T> partR(static_cast<std::size_t>(kBlock * batch)), partI(partR.size());
      std::vector<double> accR(partR.size()), accI(partR.size());
      std::vector<float> conjI(kBlock);
#pragma omp for schedule(dynamic, 1)
      for (index_t b = 0; b < blocks; ++b) {
        const index_t j0 = b * kBlock, n = std::min(kBlock, m - j0);
        std::fill(accR.begin(), accR.end(), 0.0);
        std::fill(accI.begin(), accI.end(), 0.0);
        if (trig_ == TrigMode::Recurrence)  // the conjugate step exp(-2 pi i kx / N0)
          for (index_t j = 0; j < n; ++j) conjI[static_cast<std::size_t>(j)] = -rotI_[static_cast<std::size_t>(j0 + j)];
        for (index_t row = 0; row < rows && !cancel.stop(); ++row) {
          const index_t y = row % n_[1], z = row / n_[1];
          std::fill(partR.begin(), partR.end(), T(0));
          std::fill(partI.begin(), partI.end(), T(0));
          rowStart<T>(j0, n, y, z, -1.0, base.data(), pr.data(), pi.data());
          for (index_t x = 0; x < n0; ++x) {
            if (trig_ == TrigMode::Recurrence) {
              if (x > 0) {
                if constexpr (std::is_same_v<T, float>)
                  rotate(n, pr.data(), pi.data(), rotR_.data() + j0, conjI.data());
              }
            } else {
              phasors<T>(j0, n, x, base.data(), -1.0, pr.data(), pi.data());
            }
            for (index_t c = 0; c < batch; ++c) {
              const cfloat v = img[c * voxels_ + row * n0 + x];
              axpyBlock(n, static_cast<T>(v.real()), static_cast<T>(v.imag()), pr.data(), pi.data(),
                           partR.data() + c * kBlock, partI.data() + c * kBlock);
            }
          }
          for (std::size_t i = 0; i < partR.size(); ++i) {
            accR[i] += partR[i];
            accI[i] += partI[i];
          }
        }
        for (index_t c = 0; c < batch; ++c)
          for (index_t j = 0; j < n; ++j)
            d[c * m + j0 + j] = cfloat(static_cast<float>(accR[static_cast<std::size_t>(c * kBlock + j)]),
                                       static_cast<float>(accI[static_cast<std::size_t>(c * kBlock + j)]));
      }
    }
    cancel.rethrow();
  }

  TrigMode trig_;
  int dims_ = 2;
  index_t n_[3] = {1, 1, 1}, m_ = 0, voxels_ = 1;
  std::vector<double> k_[3], r_[3];
  std::vector<float> kf_[3];
  std::vector<float> rotR_, rotI_;
};

}  // namespace

std::unique_ptr<NufftPlan> CpuBackend::makeDftPlan(const NufftGeometry& geometry, const DftOptions& options) {
  return std::make_unique<CpuDftPlan>(*this, geometry, options);
}

}  // namespace larmor::cpu
