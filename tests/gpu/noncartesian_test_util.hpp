#pragma once
// Shared by the GPU tests of the non-Cartesian operators (test_gpu_nufft.cpp, test_gpu_dft.cpp,
// test_gpu_adaptive.cpp): the CUDA backend through the registry (skipping where none exists), problems
// (random and radial trajectories), a float64 brute-force non-uniform DFT written here, independent of
// the engine, and error measures.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <numbers>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "larmor/backend/backend.hpp"
#include "larmor/backend/registry.hpp"
#include "larmor/ops/nufft.hpp"
#include "larmor/traj/radial.hpp"
#include "../unit/test_nc_problem.hpp"

namespace nctest {

using larmor::Backend;
using larmor::Buffer;
using larmor::cdouble;
using larmor::cfloat;
using larmor::index_t;
using larmor::NufftGeometry;
using larmor::RArray;
using larmor::Shape;

/// The CUDA backend, shared by all tests of the process (creating one per test costs a stream and a
/// cuFFT handle each time); null with `why` set where there is none.
inline std::shared_ptr<Backend> gpu(std::string* why) {
  static std::shared_ptr<Backend> backend;
  static std::string reason;
  static bool tried = false;
  if (!tried) {
    tried = true;
    auto& reg = larmor::BackendRegistry::instance();
    reg.loadPlugins();
    reason = reg.whyNoGpu();
    if (reason.empty()) {
      try {
        backend = reg.select("cuda").backend;
      } catch (const std::exception& e) {
        reason = e.what();
      }
    }
    if (reason.rfind("no CUDA device", 0) != 0 && !reason.empty()) reason = "no CUDA device: " + reason;
  }
  *why = reason;
  return backend;
}

inline std::shared_ptr<Backend> cpu() { return larmor::makeCpuBackend(); }

/// A test fixture that skips with the reason where no CUDA device can be used.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    gpu_ = gpu(&why);
    if (!gpu_) GTEST_SKIP() << why;
  }
  std::shared_ptr<Backend> gpu_;
};

using larmor::nctest::Problem;
using larmor::nctest::randomComplex;
using larmor::nctest::randomProblem;

/// 2D radial for an N x N image (full spokes, readout 2N: k from -N/2 to N/2 - 1/2, so the footprints of
/// the outermost samples wrap around the oversampled grid).
inline Problem radialProblem(index_t n, index_t readout, index_t spokes, larmor::traj::RadialOrder order) {
  const larmor::traj::Trajectory t = larmor::traj::radial2D(readout, spokes, n, order);
  Problem p;
  p.dims = 2;
  p.n[0] = p.n[1] = n;
  p.k = t.k;
  p.m = t.samples();
  p.radial = t.radial;
  return p;
}

/// The definitions of ops/nufft.hpp in double, with the phasors separated per dimension
/// (exp(2 pi i k.r) = prod_d exp(2 pi i k_d (n_d - c_d) / N_d)) so that the sums need no trigonometry.
class ExactDft {
 public:
  explicit ExactDft(const Problem& p) : p_(p) {
    for (int d = 0; d < 3; ++d) {
      e_[d].resize(static_cast<std::size_t>(p.m * p.n[d]));
      for (index_t j = 0; j < p.m; ++j)
        for (index_t x = 0; x < p.n[d]; ++x) {
          const double ph = d < p.dims ? static_cast<double>(p.k[3 * j + d]) * static_cast<double>(x - p.n[d] / 2) /
                                             static_cast<double>(p.n[d])
                                       : 0.0;
          e_[d][static_cast<std::size_t>(j * p.n[d] + x)] = std::polar(1.0, 2 * std::numbers::pi * ph);
        }
    }
  }
  /// d_j = sum_n rho_n exp(-2 pi i k_j . r_n)
  std::vector<cdouble> forward(const std::vector<cfloat>& img, index_t batch) const {
    std::vector<cdouble> out(static_cast<std::size_t>(p_.m * batch));
    for (index_t b = 0; b < batch; ++b)
      for (index_t j = 0; j < p_.m; ++j) {
        cdouble s = 0;
        for (index_t z = 0; z < p_.n[2]; ++z)
          for (index_t y = 0; y < p_.n[1]; ++y) {
            const cdouble ezy = std::conj(phase(2, j, z) * phase(1, j, y));
            const cfloat* row = img.data() + ((b * p_.n[2] + z) * p_.n[1] + y) * p_.n[0];
            cdouble r = 0;
            for (index_t x = 0; x < p_.n[0]; ++x) r += cdouble(row[x]) * std::conj(phase(0, j, x));
            s += r * ezy;
          }
        out[static_cast<std::size_t>(j + p_.m * b)] = s;
      }
    return out;
  }
  /// rho_n = sum_j d_j exp(+2 pi i k_j . r_n)
  std::vector<cdouble> adjoint(const std::vector<cfloat>& data, index_t batch) const {
    const index_t nv = p_.voxels();
    std::vector<cdouble> out(static_cast<std::size_t>(nv * batch));
    for (index_t b = 0; b < batch; ++b)
      for (index_t j = 0; j < p_.m; ++j) {
        const cdouble dj = cdouble(data[static_cast<std::size_t>(j + p_.m * b)]);
        for (index_t z = 0; z < p_.n[2]; ++z)
          for (index_t y = 0; y < p_.n[1]; ++y) {
            const cdouble ezy = dj * phase(2, j, z) * phase(1, j, y);
            cdouble* row = out.data() + ((b * p_.n[2] + z) * p_.n[1] + y) * p_.n[0];
            for (index_t x = 0; x < p_.n[0]; ++x) row[x] += ezy * phase(0, j, x);
          }
      }
    return out;
  }

 private:
  cdouble phase(int d, index_t j, index_t x) const { return e_[d][static_cast<std::size_t>(j * p_.n[d] + x)]; }
  const Problem& p_;
  std::vector<cdouble> e_[3];
};

inline double relError(const std::vector<cfloat>& test, const std::vector<cdouble>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size() && i < test.size(); ++i) {
    num += std::norm(cdouble(test[i]) - ref[i]);
    den += std::norm(ref[i]);
  }
  if (test.size() != ref.size()) return std::numeric_limits<double>::infinity();
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

inline double relDiff(const std::vector<cfloat>& test, const std::vector<cfloat>& ref) {
  std::vector<cdouble> r(ref.begin(), ref.end());
  return relError(test, r);
}

inline bool allFinite(const std::vector<cfloat>& v) {
  for (const auto& x : v)
    if (!std::isfinite(x.real()) || !std::isfinite(x.imag())) return false;
  return true;
}

/// Backend buffer holding `host`.
inline std::unique_ptr<Buffer> toBackend(Backend& be, const std::vector<cfloat>& host) {
  auto b = be.allocate(host.size() * sizeof(cfloat));
  be.upload(*b, host.data(), host.size() * sizeof(cfloat));
  return b;
}

inline std::vector<cfloat> fromBackend(Backend& be, const Buffer& b, index_t n) {
  std::vector<cfloat> host(static_cast<std::size_t>(n));
  be.download(host.data(), b, host.size() * sizeof(cfloat));
  return host;
}

/// A backend buffer of n complex values filled with NaN: results must overwrite every element.
inline std::unique_ptr<Buffer> poisoned(Backend& be, index_t n) {
  auto b = be.allocate(static_cast<std::size_t>(n) * sizeof(cfloat));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  be.fill(*b, cfloat(nan, nan), n);
  return b;
}

/// Results of one plan on one backend: forward(img) and adjoint(data), on poisoned outputs.
struct PlanRun {
  std::vector<cfloat> forward, adjoint;
};

inline PlanRun runPlan(Backend& be, larmor::NufftPlan& plan, const Problem& p, const std::vector<cfloat>& img,
                       const std::vector<cfloat>& data, index_t batch) {
  PlanRun r;
  auto imgIn = toBackend(be, img);
  auto datOut = poisoned(be, p.m * batch);
  plan.forward(*imgIn, *datOut, batch);
  r.forward = fromBackend(be, *datOut, p.m * batch);
  auto datIn = toBackend(be, data);
  auto imgOut = poisoned(be, p.voxels() * batch);
  plan.adjoint(*datIn, *imgOut, batch);
  r.adjoint = fromBackend(be, *imgOut, p.voxels() * batch);
  return r;
}

/// sum conj(a) b in double.
inline cdouble dot(const std::vector<cfloat>& a, const std::vector<cfloat>& b) {
  cdouble s = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) s += std::conj(cdouble(a[i])) * cdouble(b[i]);
  return s;
}

/// |<A x, y> - <x, A^H y>| / (|A x| |y|): zero for an exact adjoint pair up to rounding.
inline double adjointMismatch(const std::vector<cfloat>& x, const std::vector<cfloat>& ax, const std::vector<cfloat>& y,
                              const std::vector<cfloat>& ahy) {
  const cdouble lhs = dot(ax, y), rhs = dot(x, ahy);
  const double na = std::sqrt(std::real(dot(ax, ax))), ny = std::sqrt(std::real(dot(y, y)));
  return std::abs(lhs - rhs) / (na * ny);
}

/// Runs f; expects a larmor::Error whose message contains `fragment`.
inline void expectError(const std::function<void()>& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no error, expected one containing: " << fragment;
  } catch (const larmor::Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

}  // namespace nctest
