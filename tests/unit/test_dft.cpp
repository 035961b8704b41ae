// The CPU exact non-uniform DFT plan (Stone et al.'s F d and F^H d) in its three trigonometry modes
// against a float64 brute-force sum written here: errors printed (docs/nufft.md) and bounded, 2D and 3D,
// odd sizes, batches, adjointness, spreadInterpolate = forward(adjoint(.)), bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numbers>
#include <random>

#include "larmor/backend/registry.hpp"
#include "larmor/ops/nufft.hpp"
#include "test_nc_problem.hpp"

using namespace larmor;
using namespace larmor::nctest;

namespace {

std::shared_ptr<Backend> cpu() { return BackendRegistry::instance().select("cpu").backend; }

double phase(const Problem& p, index_t j, index_t v) {
  const index_t idx[3] = {v % p.n[0], (v / p.n[0]) % p.n[1], v / (p.n[0] * p.n[1])};
  double ph = 0;
  for (int d = 0; d < p.dims; ++d)
    ph += static_cast<double>(p.k[3 * j + d]) * static_cast<double>(idx[d] - p.n[d] / 2) / static_cast<double>(p.n[d]);
  return ph;
}

std::vector<cdouble> exactForward(const Problem& p, const std::vector<cfloat>& img, index_t batch) {
  std::vector<cdouble> out(static_cast<std::size_t>(p.m * batch));
#pragma omp parallel for
  for (index_t j = 0; j < p.m; ++j)
    for (index_t b = 0; b < batch; ++b) {
      cdouble s = 0;
      for (index_t v = 0; v < p.voxels(); ++v)
        s += cdouble(img[static_cast<std::size_t>(v + p.voxels() * b)]) * std::polar(1.0, -2 * std::numbers::pi * phase(p, j, v));
      out[static_cast<std::size_t>(j + p.m * b)] = s;
    }
  return out;
}

std::vector<cdouble> exactAdjoint(const Problem& p, const std::vector<cfloat>& d, index_t batch) {
  std::vector<cdouble> out(static_cast<std::size_t>(p.voxels() * batch));
#pragma omp parallel for
  for (index_t v = 0; v < p.voxels(); ++v)
    for (index_t b = 0; b < batch; ++b) {
      cdouble s = 0;
      for (index_t j = 0; j < p.m; ++j)
        s += cdouble(d[static_cast<std::size_t>(j + p.m * b)]) * std::polar(1.0, 2 * std::numbers::pi * phase(p, j, v));
      out[static_cast<std::size_t>(v + p.voxels() * b)] = s;
    }
  return out;
}

double relError(const std::vector<cfloat>& test, const std::vector<cdouble>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    num += std::norm(cdouble(test[i]) - ref[i]);
    den += std::norm(ref[i]);
  }
  return std::sqrt(num / den);
}

struct PlanRun {
  std::vector<cfloat> forward, adjoint;
};

PlanRun runPlan(Backend& be, const Problem& p, TrigMode mode, const std::vector<cfloat>& img,
                const std::vector<cfloat>& data, index_t batch) {
  DftOptions o;
  o.trig = mode;
  auto plan = be.makeDftPlan(p.geometry(), o);
  EXPECT_EQ(plan->samples(), p.m);
  auto imgBuf = be.allocate(img.size() * sizeof(cfloat));
  auto datBuf = be.allocate(data.size() * sizeof(cfloat));
  PlanRun r;
  r.forward.resize(data.size());
  r.adjoint.resize(img.size());
  be.upload(*imgBuf, img.data(), img.size() * sizeof(cfloat));
  plan->forward(*imgBuf, *datBuf, batch);
  be.download(r.forward.data(), *datBuf, data.size() * sizeof(cfloat));
  be.upload(*datBuf, data.data(), data.size() * sizeof(cfloat));
  plan->adjoint(*datBuf, *imgBuf, batch);
  be.download(r.adjoint.data(), *imgBuf, img.size() * sizeof(cfloat));
  return r;
}

const char* name(TrigMode m) {
  return m == TrigMode::Accurate ? "accurate" : m == TrigMode::Fast ? "fast" : "recurrence";
}

}  // namespace

// Each mode's error against float64, at two matrix sizes (the fast mode's error grows with |k r|, the
// recurrence's with the row length). Measured (forward / adjoint): accurate 2.5e-8 at both sizes; fast
// 7.8e-7 (24^2), 3.8e-6 (128^2); recurrence 3.3e-7, 1.6e-6 (docs/nufft.md). Bounds about 3x those.
TEST(Dft, TrigModesAgainstFloat64) {
  auto be = cpu();
  std::printf("Exact DFT relative error vs float64 (forward / adjoint):\n");
  for (index_t n : {index_t{24}, index_t{128}}) {
    const Problem p = randomProblem(2, n, n, 1, n == 24 ? 1500 : 200, 3);
    const index_t batch = 2;
    const auto img = randomComplex(p.voxels() * batch, 1), data = randomComplex(p.m * batch, 2);
    const auto exF = exactForward(p, img, batch), exA = exactAdjoint(p, data, batch);
    for (TrigMode mode : {TrigMode::Accurate, TrigMode::Fast, TrigMode::Recurrence}) {
      const PlanRun r = runPlan(*be, p, mode, img, data, batch);
      const double ef = relError(r.forward, exF), ea = relError(r.adjoint, exA);
      std::printf("  %3ldx%-3ld %-10s %.2e / %.2e\n", static_cast<long>(n), static_cast<long>(n), name(mode), ef, ea);
      const double bound = mode == TrigMode::Accurate ? 1e-7 : mode == TrigMode::Fast ? (n == 24 ? 3e-6 : 1.2e-5) : (n == 24 ? 1e-6 : 5e-6);
      EXPECT_LE(ef, bound) << name(mode) << " " << n;
      EXPECT_LE(ea, bound) << name(mode) << " " << n;
    }
  }
}

TEST(Dft, OddSizesAnd3D) {
  auto be = cpu();
  for (int dims : {2, 3}) {
    const Problem p = dims == 2 ? randomProblem(2, 13, 20, 1, 400, 5) : randomProblem(3, 7, 10, 9, 300, 6);
    const auto img = randomComplex(p.voxels(), 3), data = randomComplex(p.m, 4);
    const auto exF = exactForward(p, img, 1), exA = exactAdjoint(p, data, 1);
    for (TrigMode mode : {TrigMode::Accurate, TrigMode::Fast, TrigMode::Recurrence}) {
      const PlanRun r = runPlan(*be, p, mode, img, data, 1);
      EXPECT_LE(relError(r.forward, exF), mode == TrigMode::Accurate ? 1e-6 : 2e-5) << name(mode) << " dims " << dims;
      EXPECT_LE(relError(r.adjoint, exA), mode == TrigMode::Accurate ? 1e-6 : 2e-5) << name(mode) << " dims " << dims;
    }
  }
}

TEST(Dft, Adjointness) {
  auto be = cpu();
  const Problem p = randomProblem(2, 20, 16, 1, 700, 8);
  const auto x = randomComplex(p.voxels(), 5), y = randomComplex(p.m, 6);
  for (TrigMode mode : {TrigMode::Accurate, TrigMode::Fast, TrigMode::Recurrence}) {
    const PlanRun r = runPlan(*be, p, mode, x, y, 1);
    cdouble lhs = 0, rhs = 0;
    for (index_t j = 0; j < p.m; ++j) lhs += std::conj(cdouble(r.forward[j])) * cdouble(y[j]);
    for (index_t v = 0; v < p.voxels(); ++v) rhs += std::conj(cdouble(x[v])) * cdouble(r.adjoint[v]);
    EXPECT_LE(std::abs(lhs - rhs) / std::abs(lhs), mode == TrigMode::Accurate ? 1e-6 : 2e-5) << name(mode);
  }
}

TEST(Dft, SpreadInterpolateIsForwardOfAdjoint) {
  auto be = cpu();
  const Problem p = randomProblem(2, 12, 12, 1, 100, 9);
  const auto w = randomComplex(p.m, 7);
  auto plan = be->makeDftPlan(p.geometry(), DftOptions{});
  const std::size_t bytes = w.size() * sizeof(cfloat);
  auto in = be->allocate(bytes), out = be->allocate(bytes), img = be->allocate(p.voxels() * sizeof(cfloat));
  be->upload(*in, w.data(), bytes);
  plan->spreadInterpolate(*in, *out);
  std::vector<cfloat> si(w.size()), fa(w.size());
  be->download(si.data(), *out, bytes);
  plan->adjoint(*in, *img, 1);
  plan->forward(*img, *out, 1);
  be->download(fa.data(), *out, bytes);
  EXPECT_EQ(si, fa);
}

TEST(Dft, BadInput) {
  auto be = cpu();
  Problem p = randomProblem(2, 16, 16, 1, 10, 10);
  p.k[3 * 5 + 1] = -40.f;
  try {
    be->makeDftPlan(p.geometry(), DftOptions{});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("wrong trajectory scale?"), std::string::npos) << e.what();
  }
  p.k = RArray(Shape{3, 0});
  EXPECT_THROW(be->makeDftPlan(p.geometry(), DftOptions{}), Error);
}
