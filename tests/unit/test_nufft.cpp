// The CPU NUFFT plan against a brute-force double-precision non-uniform DFT written here (independent of
// the engine): the accuracy curve over kernel width W and oversampling sigma (printed; the two points of
// the issue asserted), adjointness, odd and non-square sizes, 3D, batches, table vs direct kernels,
// determinism across thread counts, spreadInterpolate's symmetry, and the errors for bad trajectories.
#include <gtest/gtest.h>
#include <omp.h>

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

/// exp(sign 2 pi i k . r_n) summed in double: the definitions of ops/nufft.hpp.
std::vector<cdouble> exactForward(const Problem& p, const std::vector<cfloat>& img, index_t batch) {
  std::vector<cdouble> out(static_cast<std::size_t>(p.m * batch));
  const index_t nv = p.voxels();
#pragma omp parallel for
  for (index_t j = 0; j < p.m; ++j) {
    for (index_t b = 0; b < batch; ++b) {
      cdouble s = 0;
      for (index_t v = 0; v < nv; ++v) {
        const index_t idx[3] = {v % p.n[0], (v / p.n[0]) % p.n[1], v / (p.n[0] * p.n[1])};
        double ph = 0;
        for (int d = 0; d < p.dims; ++d)
          ph += static_cast<double>(p.k[3 * j + d]) * static_cast<double>(idx[d] - p.n[d] / 2) / static_cast<double>(p.n[d]);
        s += cdouble(img[static_cast<std::size_t>(v + nv * b)]) * std::polar(1.0, -2 * std::numbers::pi * ph);
      }
      out[static_cast<std::size_t>(j + p.m * b)] = s;
    }
  }
  return out;
}

std::vector<cdouble> exactAdjoint(const Problem& p, const std::vector<cfloat>& d, index_t batch) {
  const index_t nv = p.voxels();
  std::vector<cdouble> out(static_cast<std::size_t>(nv * batch));
#pragma omp parallel for
  for (index_t v = 0; v < nv; ++v) {
    const index_t idx[3] = {v % p.n[0], (v / p.n[0]) % p.n[1], v / (p.n[0] * p.n[1])};
    for (index_t b = 0; b < batch; ++b) {
      cdouble s = 0;
      for (index_t j = 0; j < p.m; ++j) {
        double ph = 0;
        for (int dd = 0; dd < p.dims; ++dd)
          ph += static_cast<double>(p.k[3 * j + dd]) * static_cast<double>(idx[dd] - p.n[dd] / 2) /
                static_cast<double>(p.n[dd]);
        s += cdouble(d[static_cast<std::size_t>(j + p.m * b)]) * std::polar(1.0, 2 * std::numbers::pi * ph);
      }
      out[static_cast<std::size_t>(v + nv * b)] = s;
    }
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

PlanRun runPlan(Backend& be, const Problem& p, const NufftOptions& o, const std::vector<cfloat>& img,
            const std::vector<cfloat>& data, index_t batch) {
  auto plan = be.makeNufftPlan(p.geometry(), o);
  EXPECT_EQ(plan->samples(), p.m);
  EXPECT_EQ(plan->imageShape(), (Shape{p.n[0], p.n[1], p.n[2]}));
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

void expectError(const std::function<void()>& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no error, expected one containing: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

}  // namespace

// The accuracy requirement, and the curve for docs/nufft.md. 2D, 32x32 image, 2000 samples
// uniform over the band; relative 2-norm error of forward and adjoint against the exact sums.
//
// W here is NufftOptions::width, the FULL kernel width in oversampled grid points
// (larmor/kernels/kernel_math.hpp, Beatty et al. 2005). The "1e-2 at W=2, sigma=1.25" cannot hold for
// a full width of 2: a 2-point kernel at sigma = 1.25 aliases at about 1e-1 whatever its shape (the 1D
// optimum over beta is 0.099, docs/nufft.md), and the measured value is ~0.19. It does hold in TRON's
// convention, where w is the half-width (Smith et al. 2019: beta = 2.34 J with J = 2w points, Fessler's
// notation), i.e. a full width of 4 points; that is the point asserted. "1e-4 at W=6, sigma=2" holds with W
// as the full width (and so a fortiori as the half-width).
TEST(Nufft, AccuracyCurveAgainstExactDft) {
  auto be = cpu();
  const Problem p = randomProblem(2, 32, 32, 1, 2000, 7);
  const auto img = randomComplex(p.voxels(), 1), data = randomComplex(p.m, 2);
  const auto exF = exactForward(p, img, 1), exA = exactAdjoint(p, data, 1);
  std::printf("NUFFT relative error vs exact DFT (2D 32x32, 2000 random samples), forward / adjoint;\n"
              "W = full kernel width in oversampled grid points:\n");
  std::printf("   W   sigma=1.25             sigma=1.5              sigma=2\n");
  const double sigmas[3] = {1.25, 1.5, 2.0};
  double err[7][3];
  for (int w = 2; w <= 6; ++w) {
    std::printf("  %2d", w);
    for (int si = 0; si < 3; ++si) {
      NufftOptions o;
      o.width = w;
      o.oversampling = sigmas[si];
      const PlanRun r = runPlan(*be, p, o, img, data, 1);
      const double ef = relError(r.forward, exF), ea = relError(r.adjoint, exA);
      std::printf("   %.2e / %.2e", ef, ea);
      err[w][si] = std::max(ef, ea);
    }
    std::printf("\n");
  }
  // TRON's w = 2 (full width 4) at sigma = 1.25, and W = 6 at sigma = 2.
  EXPECT_LE(err[4][0], 1e-2);
  EXPECT_LE(err[6][2], 1e-4);
  // A full width of 2 at sigma 1.25 stays near the KB limit (regression bound, not a requirement).
  EXPECT_LE(err[2][0], 0.25);
  // More width or more oversampling always helps.
  for (int w = 2; w <= 6; ++w)
    for (int si = 0; si < 3; ++si) {
      if (w > 2) EXPECT_LT(err[w][si], err[w - 1][si]) << "W " << w << " sigma " << sigmas[si];
      if (si > 0) EXPECT_LT(err[w][si], err[w][si - 1]) << "W " << w << " sigma " << sigmas[si];
    }
}

TEST(Nufft, OddNonSquareAnd3D) {
  auto be = cpu();
  NufftOptions o;
  o.width = 6;
  o.oversampling = 2;
  {
    const Problem p = randomProblem(2, 15, 22, 1, 700, 11);
    const auto img = randomComplex(p.voxels(), 3), data = randomComplex(p.m, 4);
    const PlanRun r = runPlan(*be, p, o, img, data, 1);
    EXPECT_LE(relError(r.forward, exactForward(p, img, 1)), 1e-4);
    EXPECT_LE(relError(r.adjoint, exactAdjoint(p, data, 1)), 1e-4);
  }
  {
    const Problem p = randomProblem(3, 9, 12, 7, 600, 12);
    const auto img = randomComplex(p.voxels(), 5), data = randomComplex(p.m, 6);
    const PlanRun r = runPlan(*be, p, o, img, data, 1);
    EXPECT_LE(relError(r.forward, exactForward(p, img, 1)), 1e-4);
    EXPECT_LE(relError(r.adjoint, exactAdjoint(p, data, 1)), 1e-4);
  }
}

// Samples exactly on the band edge k = -N/2 and a little beyond (the periodic wrap of the grid matches
// the DFT's periodicity in k).
TEST(Nufft, BandEdgeSamples) {
  auto be = cpu();
  Problem p = randomProblem(2, 16, 16, 1, 200, 13);
  p.k[0] = -8.f, p.k[1] = -8.f;
  p.k[3] = 8.05f, p.k[4] = -8.07f;
  const auto img = randomComplex(p.voxels(), 7), data = randomComplex(p.m, 8);
  NufftOptions o;
  o.width = 6;
  const PlanRun r = runPlan(*be, p, o, img, data, 1);
  EXPECT_LE(relError(r.forward, exactForward(p, img, 1)), 1e-4);
  EXPECT_LE(relError(r.adjoint, exactAdjoint(p, data, 1)), 1e-4);
}

// <F x, y> = <x, F^H y>: the adjoint is the exact transpose of the forward (spread = interp^T, IFFT =
// FFT^H, crop = pad^T, real diagonal deapodization), to float rounding.
TEST(Nufft, Adjointness) {
  auto be = cpu();
  for (int dims : {2, 3}) {
    const Problem p = dims == 2 ? randomProblem(2, 32, 24, 1, 2000, 21) : randomProblem(3, 12, 10, 14, 1500, 22);
    NufftOptions o;
    o.width = 4;
    o.oversampling = 1.5;
    const auto x = randomComplex(p.voxels(), 9), y = randomComplex(p.m, 10);
    const PlanRun r = runPlan(*be, p, o, x, y, 1);
    cdouble lhs = 0, rhs = 0;  // <F x, y> and <x, F^H y>
    for (index_t j = 0; j < p.m; ++j) lhs += std::conj(cdouble(r.forward[j])) * cdouble(y[j]);
    for (index_t v = 0; v < p.voxels(); ++v) rhs += std::conj(cdouble(x[v])) * cdouble(r.adjoint[v]);
    EXPECT_LE(std::abs(lhs - rhs) / std::abs(lhs), 1e-5) << "dims " << dims;
  }
}

TEST(Nufft, BatchEqualsSingleCoilsAndChunks) {
  auto be = cpu();
  const Problem p = randomProblem(2, 20, 20, 1, 500, 31);
  const index_t batch = 11;  // more than one chunk of 8 coils
  const auto img = randomComplex(p.voxels() * batch, 11), data = randomComplex(p.m * batch, 12);
  NufftOptions o;
  const PlanRun all = runPlan(*be, p, o, img, data, batch);
  for (index_t b : {index_t{0}, index_t{7}, index_t{10}}) {
    std::vector<cfloat> i1(img.begin() + p.voxels() * b, img.begin() + p.voxels() * (b + 1));
    std::vector<cfloat> d1(data.begin() + p.m * b, data.begin() + p.m * (b + 1));
    const PlanRun one = runPlan(*be, p, o, i1, d1, 1);
    for (index_t j = 0; j < p.m; ++j) EXPECT_EQ(one.forward[j], all.forward[j + p.m * b]);
    for (index_t v = 0; v < p.voxels(); ++v) EXPECT_EQ(one.adjoint[v], all.adjoint[v + p.voxels() * b]);
  }
}

TEST(Nufft, TableMatchesDirectKernel) {
  auto be = cpu();
  const Problem p = randomProblem(2, 24, 24, 1, 800, 41);
  const auto img = randomComplex(p.voxels(), 13), data = randomComplex(p.m, 14);
  NufftOptions o;
  o.width = 5;
  const PlanRun table = runPlan(*be, p, o, img, data, 1);
  o.kernel = KernelEvaluation::Direct;
  const PlanRun direct = runPlan(*be, p, o, img, data, 1);
  std::vector<cdouble> ref(direct.forward.begin(), direct.forward.end());
  EXPECT_LE(relError(table.forward, ref), 2e-6);
  ref.assign(direct.adjoint.begin(), direct.adjoint.end());
  EXPECT_LE(relError(table.adjoint, ref), 2e-6);
}

// The spreader's tiles are owned by one thread each and filled in a fixed order, so the adjoint is
// bitwise the same with 1 or several threads (no data races, no order-dependent rounding).
TEST(Nufft, DeterministicAcrossThreadCounts) {
  auto be = cpu();
  const Problem p = randomProblem(2, 64, 64, 1, 20000, 51);
  const auto img = randomComplex(p.voxels(), 15), data = randomComplex(p.m, 16);
  NufftOptions o;
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const PlanRun one = runPlan(*be, p, o, img, data, 1);
  omp_set_num_threads(std::max(2, saved));
  const PlanRun many = runPlan(*be, p, o, img, data, 1);
  omp_set_num_threads(saved);
  EXPECT_EQ(one.adjoint, many.adjoint);
  EXPECT_EQ(one.forward, many.forward);
}

// interp(spread(.)) is a real symmetric operator with a positive diagonal: <SI a, b> = <a, SI b>.
TEST(Nufft, SpreadInterpolateIsSymmetric) {
  auto be = cpu();
  const Problem p = randomProblem(2, 32, 32, 1, 1000, 61);
  auto plan = be->makeNufftPlan(p.geometry(), NufftOptions{});
  const auto a = randomComplex(p.m, 17), b = randomComplex(p.m, 18);
  const std::size_t bytes = a.size() * sizeof(cfloat);
  auto ba = be->allocate(bytes), bb = be->allocate(bytes), out = be->allocate(bytes);
  std::vector<cfloat> sa(a.size()), sb(a.size()), ones(a.size(), cfloat(1)), sOnes(a.size());
  be->upload(*ba, a.data(), bytes);
  plan->spreadInterpolate(*ba, *out);
  be->download(sa.data(), *out, bytes);
  be->upload(*bb, b.data(), bytes);
  plan->spreadInterpolate(*bb, *out);
  be->download(sb.data(), *out, bytes);
  cdouble l = 0, r = 0;
  for (std::size_t j = 0; j < a.size(); ++j) {
    l += std::conj(cdouble(sa[j])) * cdouble(b[j]);
    r += std::conj(cdouble(a[j])) * cdouble(sb[j]);
  }
  EXPECT_LE(std::abs(l - r) / std::abs(l), 1e-5);
  be->upload(*ba, ones.data(), bytes);
  plan->spreadInterpolate(*ba, *out);
  be->download(sOnes.data(), *out, bytes);
  for (const cfloat& v : sOnes) {
    EXPECT_GT(v.real(), 0.f);
    EXPECT_NEAR(v.imag(), 0.f, 1e-5f * v.real());
  }
}

TEST(Nufft, BadInput) {
  auto be = cpu();
  Problem p = randomProblem(2, 16, 16, 1, 10, 71);
  p.k[3 * 4] = 12.f;  // |k| = 12 > 1.01 * 8: a trajectory in another unit
  expectError([&] { be->makeNufftPlan(p.geometry(), NufftOptions{}); }, "wrong trajectory scale?");
  p = randomProblem(2, 16, 16, 1, 10, 71);
  p.k[3 * 2 + 1] = std::numeric_limits<float>::quiet_NaN();
  expectError([&] { be->makeNufftPlan(p.geometry(), NufftOptions{}); }, "NaN");
  p.k = RArray(Shape{3, 0});
  expectError([&] { be->makeNufftPlan(p.geometry(), NufftOptions{}); }, "empty");
  p = randomProblem(2, 16, 16, 1, 10, 71);
  NufftOptions o;
  o.width = 1;
  expectError([&] { be->makeNufftPlan(p.geometry(), o); }, "kernel width");
  o = NufftOptions{};
  o.oversampling = 0.5;
  expectError([&] { be->makeNufftPlan(p.geometry(), o); }, "oversampling");
  auto plan = be->makeNufftPlan(p.geometry(), NufftOptions{});
  auto small = be->allocate(8);
  auto img = be->allocate(16 * 16 * sizeof(cfloat));
  expectError([&] { plan->adjoint(*small, *img, 1); }, "buffer");
}
