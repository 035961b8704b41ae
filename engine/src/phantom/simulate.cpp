// The simulator (simulate.hpp): analytic k-space of the Shepp-Logan phantom times coil sensitivities.
// Cartesian: the header and masks, then slice by slice and plane by plane the sampled rows, each the sum of
// the coil model's terms over shifted phantom lines (each distinct line transformed once); SCALING below
// gives the unitary-DFT factor. Non-Cartesian: the phantom's transform at the trajectory's points.
#include "larmor/phantom/simulate.hpp"

#include <algorithm>
#include <cmath>

#include "larmor/phantom/coils.hpp"
#include "larmor/phantom/phantom.hpp"
#include "simulate_parts.hpp"
#include "larmor/traj/cartesian.hpp"
#include "larmor/traj/radial.hpp"
#include "larmor/traj/spiral.hpp"

namespace larmor::phantom {

namespace {

std::string matrixText(const index_t m[3]) {
  return std::to_string(m[0]) + "x" + std::to_string(m[1]) + "x" + std::to_string(m[2]);
}

}  // namespace

void validateSettings(const SimulateSettings& s) {
  require(s.phantom == "shepp-logan", "simulate: phantom '" + s.phantom + "' is unknown (available: shepp-logan)");
  require(s.trajectory != TrajectoryKind::Other,
          "simulate: trajectory 'other' cannot be simulated (choose cartesian, radial, golden, spiral, "
          "stack-of-spirals or radial3d)");
  for (int i = 0; i < 3; ++i)
    require(s.matrix[i] >= 1 && s.matrix[i] <= 65536,
            "simulate: matrix " + matrixText(s.matrix) + " must have 1 to 65536 points in each dimension");
  require(s.slices >= 1 && s.slices <= 4096, "simulate: slices must be 1 to 4096, got " + std::to_string(s.slices));
  require(s.matrix[2] == 1 || s.slices == 1,
          "simulate: 3D (matrix z > 1) takes slices = 1, got " + std::to_string(s.slices));
  require(s.coils >= 1 && s.coils <= 128, "simulate: coils must be 1 to 128, got " + std::to_string(s.coils));
  require(s.accel >= 1, "simulate: acceleration must be at least 1, got " + std::to_string(s.accel));
  require(s.acs >= 0, "simulate: ACS lines must not be negative, got " + std::to_string(s.acs));
  require(s.coilRings >= 0 && s.coilRings <= 8, "simulate: coil rings must be 0 (auto) to 8, got " +
                                                     std::to_string(s.coilRings));
  require(s.coilRings <= 1 || s.matrix[2] > 1, "simulate: several coil rings need 3D data (matrix z > 1)");
  require(s.accelPe2 >= 1, "simulate: acceleration along pe2 must be at least 1, got " + std::to_string(s.accelPe2));
  require(s.accelPe2 == 1 || (s.matrix[2] > 1 && s.trajectory == TrajectoryKind::Cartesian),
          "simulate: acceleration along pe2 needs 3D Cartesian data (matrix z > 1)");
  require(std::isfinite(s.readoutOversampling) && s.readoutOversampling >= 1 && s.readoutOversampling <= 8,
          "simulate: readout oversampling must be 1 to 8, got " + std::to_string(s.readoutOversampling));
  require(std::isfinite(s.noiseSigma) && s.noiseSigma >= 0,
          "simulate: noise sigma must be finite and non-negative, got " + std::to_string(s.noiseSigma));
  require(std::isfinite(s.fovMm) && s.fovMm > 0, "simulate: FOV must be positive, got " + std::to_string(s.fovMm));
  require(std::isfinite(s.sliceThicknessMm) && s.sliceThicknessMm > 0,
          "simulate: slice thickness must be positive, got " + std::to_string(s.sliceThicknessMm));
  require(s.frames >= 1 && s.frames <= 65536, "simulate: frames must be 1 to 65536, got " + std::to_string(s.frames));
  require(s.spokesPerFrame >= 0, "simulate: spokes per frame must not be negative, got " +
                                     std::to_string(s.spokesPerFrame));
  if (s.trajectory != TrajectoryKind::Cartesian) return;  // counted once the trajectory exists
  const double samples = std::round(s.matrix[0] * static_cast<double>(s.readoutOversampling)) *
                         static_cast<double>(s.matrix[1]) * static_cast<double>(s.matrix[2]) * s.coils *
                         static_cast<double>(s.slices);
  require(samples <= 2147483648.0, "simulate: " + matrixText(s.matrix) + " x " + std::to_string(s.coils) +
                                       " coils x " + std::to_string(s.slices) + " slices is too large");
}

namespace {

// How the terms of a coil model map onto shifted readout lines. Sample n of a line at (k1, k2) of coil
// c needs F(k0_n - m0/P, k1 - m1/P, k2 - m2/P) for every term m. The shifted readout positions of all
// (n, m0) form one sorted set `readout`; the shifted lines (m1, m2) are looked up per plane.
struct TermPlan {
  std::vector<double> readout;             // distinct k0_n - m0/P
  std::vector<index_t> readoutIndex;       // [n + e0 * i0] → position in `readout`
  std::vector<int> termM0;                 // term → i0
  std::vector<std::array<int, 2>> pairs;   // distinct (m1, m2)
  std::vector<int> termPair;               // term → pair
};

TermPlan planTerms(const CoilModel& model, index_t e0, double l0) {
  TermPlan plan;
  std::vector<int> m0s;
  for (const auto& f : model.terms) {
    auto it = std::find(m0s.begin(), m0s.end(), f[0]);
    if (it == m0s.end()) {
      m0s.push_back(f[0]);
      it = m0s.end() - 1;
    }
    plan.termM0.push_back(static_cast<int>(it - m0s.begin()));
    const std::array<int, 2> pair = {f[1], f[2]};
    auto pt = std::find(plan.pairs.begin(), plan.pairs.end(), pair);
    if (pt == plan.pairs.end()) {
      plan.pairs.push_back(pair);
      pt = plan.pairs.end() - 1;
    }
    plan.termPair.push_back(static_cast<int>(pt - plan.pairs.begin()));
  }
  const index_t c0 = e0 / 2;
  std::vector<double> all;
  for (int m0 : m0s)
    for (index_t n = 0; n < e0; ++n) all.push_back(static_cast<double>(n - c0) / l0 - m0 / model.period);
  std::vector<double> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  const double tol = 1e-9;
  for (double v : sorted)
    if (plan.readout.empty() || v - plan.readout.back() > tol) plan.readout.push_back(v);
  plan.readoutIndex.resize(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto it = std::lower_bound(plan.readout.begin(), plan.readout.end(), all[i] - tol);
    plan.readoutIndex[i] = it - plan.readout.begin();
  }
  return plan;
}


/// Coil rings along z: the setting, or 2 when pe2 is accelerated (one ring around z = 0 barely encodes z).
int coilRings(const SimulateSettings& s) { return s.coilRings > 0 ? s.coilRings : s.accelPe2 > 1 ? 2 : 1; }

// The object and coils of each slice: 2D phantom (single slice), 3D phantom's cross-sections
// (multi-slice 2D) or the 3D phantom, with matching coil models.
void makeObjects(const SimulateSettings& s, std::vector<Phantom>& phantoms, std::vector<CoilModel>& models) {
  const bool is3D = s.matrix[2] > 1;
  const int coils = s.coils;
  if (is3D) {
    phantoms.push_back(Phantom::sheppLogan3D());
    models.push_back(makeCoilModel(coils, 3, 2, coilRings(s)));
  } else if (s.slices == 1) {
    phantoms.push_back(Phantom::sheppLogan2D());
    models.push_back(makeCoilModel(coils, 2));
  } else {
    const CoilModel model3D = makeCoilModel(coils, 3);
    for (index_t sl = 0; sl < s.slices; ++sl) {
      const double z = simulatedSliceZ(sl, s.slices);
      phantoms.push_back(Phantom::sheppLogan3DSlice(z));
      models.push_back(sliceCoilModel(model3D, z));
    }
  }
}

// The rasterised phantom (not coil-weighted) and the true sensitivities on the recon raster (what a
// perfect coil-map estimate would give), so a sum-of-squares reconstruction can be compared with
// |rho| sqrt(sum_c |s_c|^2).
void attachTruth(Dataset& d, const SimulateSettings& s, const std::vector<Phantom>& phantoms,
                 const std::vector<CoilModel>& models) {
  const bool is3D = s.matrix[2] > 1;
  const index_t m0 = s.matrix[0], m1 = s.matrix[1], m2 = s.matrix[2], slices = s.slices;
  const int coils = s.coils;
  CArray reference(Shape{m0, m1, m2, 1, slices});
  for (index_t sl = 0; sl < slices; ++sl) {
    const CArray img = phantoms[static_cast<std::size_t>(is3D ? 0 : sl)].rasterize(
        is3D ? Shape{m0, m1, m2} : Shape{m0, m1});
    std::copy(img.data(), img.data() + img.size(), reference.data() + img.size() * sl);
  }
  d.reference = std::move(reference);
  CArray maps(Shape{m0, m1, m2, coils, slices});
  for (index_t sl = 0; sl < slices; ++sl) {
    const CArray m = coilMaps(models[static_cast<std::size_t>(is3D ? 0 : sl)], is3D ? Shape{m0, m1, m2} : Shape{m0, m1});
    std::copy(m.data(), m.data() + m.size(), maps.data() + m.size() * sl);
  }
  d.coilMaps = std::move(maps);
}

// The trajectory of a non-Cartesian simulation, with the defaults of simulate.hpp resolved.
traj::Trajectory makeTrajectory(const SimulateSettings& s) {
  const TrajectoryKind kind = s.trajectory;
  const index_t n = s.matrix[0];
  const std::string name = toString(kind);
  require(s.matrix[1] == n, "simulate: " + name + " needs a square in-plane matrix, got " + matrixText(s.matrix));
  if (kind == TrajectoryKind::Radial3D)
    require(s.matrix[2] == n, "simulate: radial3d needs a cubic matrix (NxNxN), got " + matrixText(s.matrix));
  else if (kind == TrajectoryKind::StackOfSpirals)
    require(s.matrix[2] > 1, "simulate: stack-of-spirals needs a 3D matrix (z > 1), got " + matrixText(s.matrix));
  else
    require(s.matrix[2] == 1, "simulate: " + name + " is 2D (use stack-of-spirals or radial3d for 3D), got matrix " +
                                  matrixText(s.matrix));
  require(n >= 4, "simulate: " + name + " needs a matrix of at least 4, got " + matrixText(s.matrix));
  require(s.spokes >= 0 && s.readout >= 0 && s.interleaves >= 0, "simulate: spokes, readout and interleaves must not be negative");
  // Readout: 2x oversampled by default (readoutOversampling), as scanners sample a spoke.
  const index_t readout =
      s.readout > 0 ? s.readout : std::max<index_t>(2, std::llround(static_cast<double>(n) * s.readoutOversampling));
  try {
    switch (kind) {
      case TrajectoryKind::Radial:
        return traj::radial2D(readout, s.spokes > 0 ? s.spokes : traj::nyquistSpokes(n, 2), n, traj::RadialOrder::Linear180);
      case TrajectoryKind::GoldenAngle:
        return traj::radial2D(readout, s.spokes > 0 ? s.spokes : traj::nyquistSpokes(n, 2), n, traj::RadialOrder::GoldenAngle);
      case TrajectoryKind::Radial3D:
        return traj::radial3D(readout, s.spokes > 0 ? s.spokes : traj::nyquistSpokes(n, 3), n);
      case TrajectoryKind::Spiral:
      case TrajectoryKind::StackOfSpirals: {
        traj::SpiralDesign design;
        design.matrix = n;
        design.interleaves = s.interleaves > 0 ? s.interleaves : 16;
        design.readout = s.readout;
        design.readoutOversampling = s.readoutOversampling;
        return kind == TrajectoryKind::Spiral ? traj::spiral2D(design) : traj::stackOfSpirals(design, s.matrix[2]);
      }
      default:
        break;
    }
  } catch (const Cancelled&) {
    throw;
  } catch (const Error& e) {
    throw Error(std::string("simulate: ") + e.what());
  }
  throw Error("simulate: trajectory " + name + " cannot be simulated");
}

// SCALING (non-Cartesian). A sample at k (cycles per recon FOV) stores d = F(k) sqrt(N0 N1 N2), N the
// recon matrix. The encoding operator of the reconstructions, E rho = N^{-1/2} sum_n rho_n
// exp(-2 pi i k . r_n) with r_n the recon raster (ops/nufft.hpp's forward sum times N^{-1/2}), then
// reproduces d for rho = the phantom's pixel values: sum_n rho(r_n) exp(-2 pi i k r_n) is the Riemann sum
// N ∫ rho(r) exp(-2 pi i k r) dr = N F(k) (pixel area 1/N). On a Cartesian grid E is the centred unitary
// DFT, so both kinds of data share one scale (docs/conventions.md).
Dataset simulateNonCartesian(const SimulateSettings& s, const Progress& progress) {
  traj::Trajectory t = makeTrajectory(s);
  const bool is3D = s.matrix[2] > 1;
  const index_t m = t.samples(), slices = s.slices;
  const int coils = s.coils;
  require(static_cast<double>(m) * coils * static_cast<double>(slices) <= 2147483648.0,
          "simulate: " + std::to_string(m) + " samples x " + std::to_string(coils) + " coils x " +
              std::to_string(slices) + " slices is too large");

  Dataset d;
  d.source = "simulated";
  d.header = detail::nonCartesianHeader(s, t.kind);

  std::vector<Phantom> phantoms;
  std::vector<CoilModel> models;
  makeObjects(s, phantoms, models);

  std::vector<double> k(static_cast<std::size_t>(3 * m));
  for (index_t j = 0; j < 3 * m; ++j) k[static_cast<std::size_t>(j)] = t.k[j];
  if (!is3D)
    for (index_t j = 0; j < m; ++j) k[static_cast<std::size_t>(3 * j + 2)] = 0;
  const double scale = std::sqrt(static_cast<double>(s.matrix[0]) * static_cast<double>(s.matrix[1]) *
                                 static_cast<double>(s.matrix[2]));
  d.kspace = CArray(Shape{t.readout(), t.profiles(), 1, coils, slices});
  std::vector<cdouble> f(static_cast<std::size_t>(m * coils));
  for (index_t sl = 0; sl < slices; ++sl) {
    progress.report(static_cast<double>(sl) / static_cast<double>(slices + 1),
                    "simulating " + toString(t.kind) + " k-space: slice " + std::to_string(sl + 1) + "/" +
                        std::to_string(slices));
    multiCoilKspace(phantoms[static_cast<std::size_t>(sl)], models[static_cast<std::size_t>(sl)], k.data(), m, f.data());
    for (int c = 0; c < coils; ++c) {
      cfloat* dst = d.kspace.data() + m * (c + static_cast<index_t>(coils) * sl);
      const cdouble* src = f.data() + m * c;
#pragma omp parallel for schedule(static)
      for (index_t j = 0; j < m; ++j) dst[j] = cfloat(scale * src[j]);
      if (s.noiseSigma > 0)
        addNoise(dst, m, s.noiseSigma, deriveSeed(s.seed, static_cast<std::uint64_t>(c + coils * sl)));
    }
  }
  d.trajectory = std::move(t.k);
  progress.report(static_cast<double>(slices) / static_cast<double>(slices + 1),
                  "rasterising the reference image and coil maps");
  attachTruth(d, s, phantoms, models);
  progress.report(1.0, "simulation done");
  return d;
}

using detail::CartesianGrid;

// Masks: the same lines in every slice. 3D accelerated along pe1 only: the ACS block spans all of pe2;
// along pe2 too: an acs x min(acs, pe2) centre box (2D GRAPPA's calibration region). Returns one slice's
// sampling mask [m1, m2]; d.sampled and d.calibration get it for every slice.
Array<std::uint8_t> cartesianMasks(const SimulateSettings& s, const CartesianGrid& g, Dataset& d) {
  const index_t m1 = g.m1, m2 = g.m2;
  const bool accelerated = s.accel > 1 || s.accelPe2 > 1;
  const int acs = accelerated ? s.acs : 0;
  const int acsPe2 = acs == 0 ? 0 : s.accelPe2 > 1 ? static_cast<int>(std::min<index_t>(acs, m2)) : static_cast<int>(m2);
  Array<std::uint8_t> cal2;
  Array<std::uint8_t> mask2;
  try {
    mask2 = traj::cartesianMask(m1, m2, s.accel, s.accelPe2, acs, acsPe2, &cal2);
  } catch (const Error& e) {
    throw Error(std::string("simulate: ") + e.what());
  }
  d.sampled = Array<std::uint8_t>(Shape{m1, m2, g.slices});
  d.calibration = Array<std::uint8_t>(Shape{m1, m2, g.slices});
  for (index_t sl = 0; sl < g.slices; ++sl)
    for (index_t i = 0; i < m1 * m2; ++i) {
      d.sampled[i + m1 * m2 * sl] = mask2[i];
      d.calibration[i + m1 * m2 * sl] = cal2[i];
    }
  return mask2;
}

/// One slice's object and coils as its planes use them.
struct SliceModel {
  const Phantom& ph;
  const CoilModel& model;
  TermPlan plan;
  std::vector<cdouble> phases;  ///< ph.readoutPhases(plan.readout)
  std::size_t nr = 0, nt = 0;   ///< distinct readout positions, coil terms
  index_t hMin = 0, hCount = 0;  ///< the range of h1 (below)
};

// Shifted lines are keyed by integers (P = 2, L1 = L2 = 1): k1 = (j - c1) - m1/2 = h1/2 with
// h1 = 2(j - c1) - m1, and k2 = (l - c2) - m2/2 = h2/2 with h2 = 2(l - c2) - m2 (0 in 2D). Each
// distinct line is transformed once, however many (row, term) pairs use it, and in 3D the lines of
// one h2 are kept for the next plane (plane l's m2 = -1 lines are plane l+1's m2 = +1 lines).
struct LineSet {
  index_t h2;
  std::vector<cdouble> f;          // [(h1 - hMin) * nr + readout]
  std::vector<std::uint8_t> done;  // [h1 - hMin]
};

/// The shifted lines that plane l's rows need, computed into `cache` where missing; row r, term t reads
/// the line at [r * nt + t] of the result.
std::vector<const cdouble*> shiftedLines(const SliceModel& sm, const CartesianGrid& g, index_t l,
                                         const std::vector<index_t>& rows, std::vector<LineSet>& cache) {
  const TermPlan& plan = sm.plan;
  const index_t c1 = g.m1 / 2, c2 = g.m2 / 2, hMin = sm.hMin;
  const std::size_t nr = sm.nr, nt = sm.nt;
  std::vector<index_t> pairH2(plan.pairs.size());
  for (std::size_t p = 0; p < plan.pairs.size(); ++p) pairH2[p] = g.is3D ? 2 * (l - c2) - plan.pairs[p][1] : 0;
  std::erase_if(cache, [&](const LineSet& c) {
    return std::find(pairH2.begin(), pairH2.end(), c.h2) == pairH2.end();
  });
  std::vector<std::size_t> pairSet(plan.pairs.size());
  for (std::size_t p = 0; p < plan.pairs.size(); ++p) {
    auto it = std::find_if(cache.begin(), cache.end(), [&](const LineSet& c) { return c.h2 == pairH2[p]; });
    if (it == cache.end()) {
      cache.push_back({pairH2[p], std::vector<cdouble>(static_cast<std::size_t>(sm.hCount) * nr),
                       std::vector<std::uint8_t>(static_cast<std::size_t>(sm.hCount), 0)});
      it = cache.end() - 1;
    }
    pairSet[p] = static_cast<std::size_t>(it - cache.begin());
  }
  std::vector<std::pair<std::size_t, index_t>> todo;  // (set, h1)
  for (index_t j : rows)
    for (std::size_t p = 0; p < plan.pairs.size(); ++p) {
      const index_t h1 = 2 * (j - c1) - plan.pairs[p][0];
      auto& done = cache[pairSet[p]].done[static_cast<std::size_t>(h1 - hMin)];
      if (!done) {
        done = 1;
        todo.emplace_back(pairSet[p], h1);
      }
    }
  const index_t nTodo = static_cast<index_t>(todo.size());
#pragma omp parallel for schedule(dynamic, 4)
  for (index_t u = 0; u < nTodo; ++u) {
    const auto [set, h1] = todo[static_cast<std::size_t>(u)];
    LineSet& ls = cache[set];
    sm.ph.kspaceLine(plan.readout, sm.phases, 0.5 * static_cast<double>(h1), 0.5 * static_cast<double>(ls.h2),
                     ls.f.data() + static_cast<std::size_t>(h1 - hMin) * nr);
  }
  std::vector<const cdouble*> termLine(rows.size() * nt);
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::size_t t = 0; t < nt; ++t) {
      const std::size_t p = static_cast<std::size_t>(plan.termPair[t]);
      const index_t h1 = 2 * (rows[r] - c1) - plan.pairs[p][0];
      termLine[r * nt + t] = cache[pairSet[p]].f.data() + static_cast<std::size_t>(h1 - hMin) * nr;
    }
  return termLine;
}

// k-space of s_c·ρ on plane l of slice sl: Σ_m a_{c,m} F(k - m/P), then the unitary-DFT scaling and the
// noise. The coils × terms multiply-adds per sample are the cost here: gather each term's shifted line once
// into split real/imaginary arrays, and accumulate in plain real arithmetic (vectorises; complex
// operator* would add NaN-recovery branches).
void accumulateRows(const SimulateSettings& s, const CartesianGrid& g, const SliceModel& sm, index_t sl, index_t l,
                    const std::vector<index_t>& rows, const std::vector<const cdouble*>& termLine, Dataset& d) {
  const index_t e0 = g.e0, m1 = g.m1, m2 = g.m2;
  const int coils = g.coils;
  const double scale = std::sqrt(static_cast<double>(e0) * static_cast<double>(m1) * static_cast<double>(m2)) / g.l0;
  const TermPlan& plan = sm.plan;
  const std::size_t nt = sm.nt;
  const index_t nRows = static_cast<index_t>(rows.size());
  const std::size_t ne = static_cast<std::size_t>(e0);
#pragma omp parallel
  {
    std::vector<double> accRe(static_cast<std::size_t>(coils) * ne), accIm(accRe.size());
    std::vector<double> gRe(ne), gIm(ne);
#pragma omp for schedule(dynamic, 2)
    for (index_t r = 0; r < nRows; ++r) {
      std::fill(accRe.begin(), accRe.end(), 0.0);
      std::fill(accIm.begin(), accIm.end(), 0.0);
      for (std::size_t t = 0; t < nt; ++t) {
        const cdouble* fl = termLine[static_cast<std::size_t>(r) * nt + t];
        const index_t* idx = plan.readoutIndex.data() + e0 * plan.termM0[t];
        for (std::size_t n = 0; n < ne; ++n) {
          gRe[n] = fl[idx[n]].real();
          gIm[n] = fl[idx[n]].imag();
        }
        for (int c = 0; c < coils; ++c) {
          const cdouble a = sm.model.coefficient(c, t);
          const double ar = a.real(), ai = a.imag();
          if (ar == 0 && ai == 0) continue;
          double* outRe = accRe.data() + static_cast<std::size_t>(c) * ne;
          double* outIm = accIm.data() + static_cast<std::size_t>(c) * ne;
          for (std::size_t n = 0; n < ne; ++n) {
            outRe[n] += ar * gRe[n] - ai * gIm[n];
            outIm[n] += ar * gIm[n] + ai * gRe[n];
          }
        }
      }
      const index_t j = rows[static_cast<std::size_t>(r)];
      for (int c = 0; c < coils; ++c) {
        const index_t lineIndex = j + m1 * (l + m2 * (c + static_cast<index_t>(coils) * sl));
        cfloat* dst = d.kspace.data() + e0 * lineIndex;
        const double* re = accRe.data() + static_cast<std::size_t>(c) * ne;
        const double* im = accIm.data() + static_cast<std::size_t>(c) * ne;
        for (std::size_t n = 0; n < ne; ++n)
          dst[n] = cfloat(static_cast<float>(scale * re[n]), static_cast<float>(scale * im[n]));
        if (s.noiseSigma > 0)
          addNoise(dst, e0, s.noiseSigma, deriveSeed(s.seed, static_cast<std::uint64_t>(lineIndex)));
      }
    }
  }
}

/// Slice sl's k-space, plane by plane (one plane in 2D), at the rows `mask2` samples.
void simulateSlice(const SimulateSettings& s, const CartesianGrid& g, const Array<std::uint8_t>& mask2,
                   const Phantom& ph, const CoilModel& model, index_t sl, const Progress& progress, Dataset& d) {
  require(model.period == 2, "simulate: the coil model's period must be 2 FOVs");  // keys use P = 2
  SliceModel sm{ph, model, planTerms(model, g.e0, g.l0), {}, 0, 0, 0, 0};
  sm.phases = ph.readoutPhases(sm.plan.readout);
  sm.nr = sm.plan.readout.size(), sm.nt = model.terms.size();
  sm.hMin = -2 * (g.m1 / 2) - model.order, sm.hCount = 2 * (g.m1 - 1) + 2 * model.order + 1;
  const double totalWork = static_cast<double>(g.slices * g.m2) + 1;  // + the reference image
  std::vector<LineSet> cache;
  for (index_t l = 0; l < g.m2; ++l) {
    const index_t plane = sl * g.m2 + l;
    progress.report(static_cast<double>(plane) / totalWork,
                    g.is3D ? "simulating k-space: plane " + std::to_string(l + 1) + "/" + std::to_string(g.m2)
                           : "simulating k-space: slice " + std::to_string(sl + 1) + "/" + std::to_string(g.slices));
    std::vector<index_t> rows;
    for (index_t j = 0; j < g.m1; ++j)
      if (mask2(j, l)) rows.push_back(j);
    if (rows.empty()) continue;
    const std::vector<const cdouble*> termLine = shiftedLines(sm, g, l, rows, cache);
    accumulateRows(s, g, sm, sl, l, rows, termLine, d);
  }
}

}  // namespace

namespace detail {

Header cartesianHeader(const SimulateSettings& s, const CartesianGrid& g) {
  Header h;
  h.encoded[0] = g.e0, h.encoded[1] = g.m1, h.encoded[2] = g.m2;
  h.recon[0] = g.m0, h.recon[1] = g.m1, h.recon[2] = g.m2;
  const float fovZ = g.is3D ? s.fovMm : s.sliceThicknessMm;
  h.encodedFovMm[0] = static_cast<float>(s.fovMm * g.l0), h.encodedFovMm[1] = s.fovMm, h.encodedFovMm[2] = fovZ;
  h.reconFovMm[0] = s.fovMm, h.reconFovMm[1] = s.fovMm, h.reconFovMm[2] = fovZ;
  h.coils = g.coils;
  h.slices = g.slices;
  h.trajectory = TrajectoryKind::Cartesian;
  const bool accelerated = s.accel > 1 || s.accelPe2 > 1;
  h.accelerationPe1 = s.accel;
  h.accelerationPe2 = s.accelPe2;
  h.calibrationLines = accelerated ? s.acs : 0;
  h.deviceDescription = "Larmor simulator";
  h.protocolName = "larmor-simulate shepp-logan";
  h.geometry.present = true;
  h.geometry.slicePositions.resize(static_cast<std::size_t>(g.slices));
  for (index_t i = 0; i < g.slices; ++i)
    h.geometry.slicePositions[static_cast<std::size_t>(i)] =
        static_cast<float>((static_cast<double>(i) - 0.5 * static_cast<double>(g.slices - 1)) * s.sliceThicknessMm);
  return h;
}

Header nonCartesianHeader(const SimulateSettings& s, TrajectoryKind kind) {
  const bool is3D = s.matrix[2] > 1;
  const index_t slices = s.slices;
  Header h;
  for (int i = 0; i < 3; ++i) h.encoded[i] = h.recon[i] = s.matrix[i];
  const float fovZ = is3D ? s.fovMm : s.sliceThicknessMm;
  h.encodedFovMm[0] = h.reconFovMm[0] = s.fovMm;
  h.encodedFovMm[1] = h.reconFovMm[1] = s.fovMm;
  h.encodedFovMm[2] = h.reconFovMm[2] = fovZ;
  h.coils = s.coils;
  h.slices = slices;
  h.trajectory = kind;
  h.deviceDescription = "Larmor simulator";
  h.protocolName = "larmor-simulate shepp-logan " + toString(kind);
  h.geometry.present = true;
  h.geometry.slicePositions.resize(static_cast<std::size_t>(slices));
  for (index_t i = 0; i < slices; ++i)
    h.geometry.slicePositions[static_cast<std::size_t>(i)] =
        static_cast<float>((static_cast<double>(i) - 0.5 * static_cast<double>(slices - 1)) * s.sliceThicknessMm);
  return h;
}

CartesianGrid cartesianGrid(const SimulateSettings& s) {
  CartesianGrid g;
  g.m0 = s.matrix[0], g.m1 = s.matrix[1], g.m2 = s.matrix[2];
  g.e0 = std::max<index_t>(g.m0, std::llround(static_cast<double>(g.m0) * s.readoutOversampling));
  g.l0 = static_cast<double>(g.e0) / static_cast<double>(g.m0);
  g.slices = s.slices;
  g.is3D = s.matrix[2] > 1;
  g.coils = s.coils;
  return g;
}

}  // namespace detail

nlohmann::json toJson(const SimulateSettings& s) {
  nlohmann::json j{{"phantom", s.phantom},
                        {"matrix", nlohmann::json::array({s.matrix[0], s.matrix[1], s.matrix[2]})},
                        {"slices", s.slices},
                        {"coils", s.coils},
                        {"trajectory", toString(s.trajectory)},
                        {"accel", s.accel},
                        {"accelPe2", s.accelPe2},
                        {"coilRings", coilRings(s)},
                        {"acs", s.acs},
                        {"readoutOversampling", s.readoutOversampling},
                        {"noiseSigma", s.noiseSigma},
                        {"seed", s.seed},
                        {"fovMm", s.fovMm},
                        {"sliceThicknessMm", s.sliceThicknessMm},
                        {"spokes", s.spokes},
                        {"readout", s.readout},
                        {"interleaves", s.interleaves}};
  if (s.frames > 1) {
    j["frames"] = s.frames;
    j["spokesPerFrame"] = s.spokesPerFrame;
  }
  return j;
}

double simulatedSliceZ(index_t slice, index_t slices) {
  if (slices <= 1) return 0;
  return -0.35 + 0.7 * static_cast<double>(slice) / static_cast<double>(slices - 1);
}

// SCALING. Along a dimension the encoded grid has M points spanning L recon FOVs (L = encoded FOV /
// recon FOV: the readout oversampling along x, 1 along y and z). Sample j sits at
//   k_j = (j - c) / L cycles per recon FOV,  c = floor(M/2)      (spacing Δk = 1/L).
// The centred unitary inverse DFT gives x[n] = M^{-1/2} Σ_j X[j] exp(+2πi (j-c)(n-c)/M), at positions
// r_n = (n - c) L/M. The Riemann sum of ρ(r) = ∫ F(k) exp(2πi k r) dk on that k grid is
//   ρ(r_n) ≈ Δk Σ_j F(k_j) exp(2πi k_j r_n) = (1/L) Σ_j F(k_j) exp(2πi (j-c)(n-c)/M),
// since k_j r_n = (j-c)(n-c)/M. Matching the two: X[j] = F(k_j) · sqrt(M) / L, and in d dimensions
//   K = F(k) · sqrt(M_0 M_1 M_2) / (L_0 L_1 L_2).
// The sum is the exact DFT of the object aliased with period L ≥ 1 (no overlap: ρ lives inside
// [-0.5, 0.5)), band-limited to the sampled k (Gibbs ringing at edges). The image spacing L/M equals the
// recon spacing 1/N, so cropping the centred N of M readout points gives the recon FOV with pixel n at
// (n - floor(N/2))/N, the raster of Phantom::rasterize. L_0 = encoded[0]/recon[0], the rounded
// oversampling actually used, which keeps that spacing exact.
Dataset simulate(const SimulateSettings& s, const Progress& progress) {
  validateSettings(s);
  require(s.frames == 1, "simulate: " + std::to_string(s.frames) +
                             " frames are a series (phantom::simulateSeries), not one acquisition");
  if (s.trajectory != TrajectoryKind::Cartesian) return simulateNonCartesian(s, progress);
  const CartesianGrid g = detail::cartesianGrid(s);

  Dataset d;
  d.source = "simulated";
  d.header = detail::cartesianHeader(s, g);
  const Array<std::uint8_t> mask2 = cartesianMasks(s, g, d);
  // The object and coils of each slice.
  std::vector<Phantom> phantoms;
  std::vector<CoilModel> models;
  makeObjects(s, phantoms, models);
  d.kspace = CArray(Shape{g.e0, g.m1, g.m2, g.coils, g.slices}, cfloat(0));
  for (index_t sl = 0; sl < g.slices; ++sl) {
    const std::size_t k = static_cast<std::size_t>(g.is3D ? 0 : sl);
    simulateSlice(s, g, mask2, phantoms[k], models[k], sl, progress, d);
  }
  const double planes = static_cast<double>(g.slices * g.m2);
  progress.report(planes / (planes + 1), "rasterising the reference image and coil maps");
  attachTruth(d, s, phantoms, models);
  progress.report(1.0, "simulation done");
  return d;
}

}  // namespace larmor::phantom
