#pragma once
// The tests' moves between host vectors and backend buffers, outputs poisoned with NaN (so an element a
// kernel forgets to write fails the comparison), one plan's forward and adjoint run, and the adjointness
// measure. Any backend.
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "larmor/backend/backend.hpp"
#include "larmor/ops/nufft.hpp"

namespace larmor::test {

inline std::unique_ptr<Buffer> toBuffer(Backend& be, const std::vector<cfloat>& host) {
  auto b = be.allocate(host.size() * sizeof(cfloat));
  be.upload(*b, host.data(), host.size() * sizeof(cfloat));
  return b;
}

inline std::vector<cfloat> fromBuffer(Backend& be, const Buffer& b, index_t n) {
  std::vector<cfloat> host(static_cast<std::size_t>(n));
  be.download(host.data(), b, host.size() * sizeof(cfloat));
  return host;
}

/// A buffer of n complex values filled with NaN.
inline std::unique_ptr<Buffer> poisoned(Backend& be, index_t n) {
  auto b = be.allocate(static_cast<std::size_t>(n) * sizeof(cfloat));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  be.fill(*b, cfloat(nan, nan), n);
  return b;
}

inline bool allFinite(const std::vector<cfloat>& v) {
  for (const auto& x : v)
    if (!std::isfinite(x.real()) || !std::isfinite(x.imag())) return false;
  return true;
}

/// One plan's forward(img) and adjoint(data), each into a poisoned output.
struct PlanRun {
  std::vector<cfloat> forward, adjoint;
};

inline PlanRun runPlan(Backend& be, NufftPlan& plan, const std::vector<cfloat>& img, const std::vector<cfloat>& data,
                       index_t batch) {
  const index_t m = plan.samples(), nv = plan.imageShape().size();
  PlanRun r;
  auto imgIn = toBuffer(be, img);
  auto datOut = poisoned(be, m * batch);
  plan.forward(*imgIn, *datOut, batch);
  r.forward = fromBuffer(be, *datOut, m * batch);
  auto datIn = toBuffer(be, data);
  auto imgOut = poisoned(be, nv * batch);
  plan.adjoint(*datIn, *imgOut, batch);
  r.adjoint = fromBuffer(be, *imgOut, nv * batch);
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

/// |<A x, y> - <x, A^H y>| / |<A x, y>|: the CPU tests' form of the same check.
inline double adjointMismatchRelative(const std::vector<cfloat>& x, const std::vector<cfloat>& ax,
                                      const std::vector<cfloat>& y, const std::vector<cfloat>& ahy) {
  const cdouble lhs = dot(ax, y), rhs = dot(x, ahy);
  return std::abs(lhs - rhs) / std::abs(lhs);
}

}  // namespace larmor::test
