// GRAPPA calibration and filling on a backend (see grappa_plan.hpp for the layouts). Listing 4.1 of the
// thesis, step by step, as backend calls:
//   1. set up A and B            gather through index tables built here once (thesis sec. 4.3.1)
//   2. normalize (and clip)      one broadcast product with a scale per equation (sec. 4.3.2, Alg. 4.3)
//   3. U = B A^H                 batched GEMM
//   4. V = (A A^H + λE)^{-1}     batched GEMM; λ = χ trace / rows by gather + two tiny GEMMs + scatter
//                                (sec. 4.3.2's "regularization done similarly"), then a batched Cholesky
//                                solve instead of an inverse (the thesis inverted on the host, 75-95 % of
//                                its time, sec. 5.3.1)
//   5. W = U V                   the solve's right-hand side is U^T, so it returns W^T
// and the reconstruction (eq. 2.5) as gather, one batched GEMM and a scatter into the missing lines.
// With pe2 acceleration the same steps run on the kernel over pe1 x pe2 (grappa_plan.hpp's Kernel): only
// the tables change (sources and targets carry a partition, PE shifts run over both directions).
#include "grappa_plan.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <memory>
#include <string>
#include <utility>

#include "larmor/util/background_release.hpp"
#include "larmor/util/cancel_scope.hpp"

namespace larmor::recon::grappa {

namespace {

index_t floorDiv(index_t a, index_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/// λ gets this added so that an all-zero problem (the padding of a partial batch, a partition without
/// signal) still has a positive definite system; its weights come out 0. Far below any real data's λ.
constexpr float kLambdaFloor = 1e-30f;

}  // namespace

Kernel Kernel::make(const GrappaSettings& s, int accel, index_t columns, index_t coils, int accelPe2) {
  Kernel k;
  k.improved = s.calibration == GrappaCalibration::Improved;
  k.accel = accel;
  k.accelPe2 = accelPe2;
  k.pe = k.improved ? s.kernelPe : s.blocks;
  k.pe2 = accelPe2 > 1 ? s.kernelPe2 : 1;
  // The readout extent fits the data: a plane with fewer readout columns than the kernel (a ky-kz plane after the
  // readout's inverse FFT has one) gets the widest odd kernel it holds, so the kernel is then over pe1 x pe2.
  index_t ro = std::min<index_t>(s.kernelRo, std::max<index_t>(columns, 1));
  if (ro < s.kernelRo && ro % 2 == 0) --ro;
  k.ro = k.improved ? static_cast<int>(ro) : 1;
  k.roCentre = (k.ro - 1) / 2;
  k.coils = coils;
  if (k.improved) {
    k.segment = columns;
    k.segments = 1;
  } else {
    k.segment = std::min<index_t>(std::max(s.segment, 1), columns);
    k.segments = (columns + k.segment - 1) / k.segment;
  }
  return k;
}

CalibrationGeometry CalibrationGeometry::make(const Kernel& k, const Sampling& s, index_t columns) {
  CalibrationGeometry g;
  g.shiftsY = s.acsCount - k.span() + 1;
  g.shiftsZ = s.acsCountPe2 - k.spanPe2() + 1;
  g.shiftsPe = std::max<index_t>(g.shiftsY, 0) * std::max<index_t>(g.shiftsZ, 0);
  g.shiftsRo = k.improved ? columns - k.ro + 1 : k.segment;
  g.firstLine = s.acsFirst - k.low();
  g.firstPe2 = s.acsFirstPe2 - k.lowPe2();
  return g;
}

FillGeometry FillGeometry::make(const Kernel& k, const Sampling& s) {
  FillGeometry f;
  const index_t R = s.accel, Rz = s.accelPe2;
  const index_t kMin = floorDiv(-s.gridFirst - (R - 1), R), kMax = floorDiv(s.lines - 1 - s.gridFirst, R);
  const index_t lMin = floorDiv(-s.gridFirstPe2 - (Rz - 1), Rz), lMax = floorDiv(s.depth - 1 - s.gridFirstPe2, Rz);
  for (index_t l = lMin; l <= lMax; ++l)
    for (index_t g = kMin; g <= kMax; ++g) {
      const index_t grid = s.gridFirst + g * R, gridZ = s.gridFirstPe2 + l * Rz;
      bool needed = false;
      for (index_t t = 0; t < k.targets(); ++t) {
        const index_t y = grid + k.targetY(t) - k.delta(), z = gridZ + k.targetZ(t) - k.deltaPe2();
        needed = needed || (y >= 0 && y < s.lines && z >= 0 && z < s.depth && !s.isAcquired(y, z));
      }
      if (needed) {
        f.firstSource.push_back(grid - k.delta());
        f.firstSourcePe2.push_back(gridZ - k.deltaPe2());
      }
    }
  return f;
}

std::vector<float> equationScales(const CArray& acs, const Kernel& k, const CalibrationGeometry& g,
                                  const Sampling& s, const GrappaSettings& settings, index_t capacity) {
  const index_t columns = acs.shape()[0], acsLines = acs.shape()[1], acsParts = acs.shape()[2];
  const index_t coils = acs.shape()[3], problems = acs.shape()[4];
  require(acsLines == s.acsCount && acsParts == s.acsCountPe2 && coils == k.coils && problems <= capacity,
          "GRAPPA: the calibration block " + acs.shape().str() + " does not match the plan");
  const index_t nCol = g.equations(), S = k.segments, nA = k.rowsA(), nB = k.rowsB();
  std::vector<float> scales(static_cast<std::size_t>(nCol * S * capacity), 0.f);
  const double halfEta = settings.eta / 2;
  auto psi = [&](double p) { return p > 0 ? static_cast<float>(std::pow(p, -halfEta)) : 0.f; };

  for (index_t q = 0; q < problems; ++q) {
    // Power per ACS line (and partition) and column, summed over coils: every group power below is a box
    // sum of it.
    std::vector<double> power(static_cast<std::size_t>(columns * acsLines * acsParts), 0.0);
    for (index_t c = 0; c < coils; ++c)
      for (index_t z = 0; z < acsParts; ++z)
        for (index_t y = 0; y < acsLines; ++y)
          for (index_t x = 0; x < columns; ++x)
            power[static_cast<std::size_t>(x + columns * (y + acsLines * z))] += std::norm(cdouble(acs(x, y, z, c, q)));
    // `line` and `part` count from the plane's first line and partition; i is the PE shift.
    auto P = [&](index_t line, index_t part, index_t x) {
      return power[static_cast<std::size_t>(x + columns * (line - s.acsFirst + acsLines * (part - s.acsFirstPe2)))];
    };
    auto lineOf = [&](index_t i) { return g.firstLine + i % g.shiftsY; };
    auto partOf = [&](index_t i) { return g.firstPe2 + i / g.shiftsY; };
    if (!k.improved) {
      for (index_t seg = 0; seg < S; ++seg) {
        const index_t e = seg + S * q;
        for (index_t i = 0; i < g.shiftsPe; ++i) {
          double p = 0;  // Alg. 4.2, lines 10-14: the power of this block of B
          for (index_t xs = 0; xs < k.segment; ++xs) {
            const index_t x = seg * k.segment + xs;
            if (x >= columns) break;
            for (index_t t = 0; t < k.targets(); ++t) p += P(lineOf(i) + k.targetY(t), partOf(i) + k.targetZ(t), x);
          }
          const float f = psi(p);
          for (index_t xs = 0; xs < k.segment; ++xs)
            if (seg * k.segment + xs < columns) scales[static_cast<std::size_t>(xs + k.segment * i + nCol * e)] = f;
        }
      }
      continue;
    }
    // Improved (Alg. 4.3): p_col = pA nRowB + pB nRowA per equation, Ψ per PE shift, then the κ N_sh
    // equations of largest p_col are dropped.
    std::vector<double> pCol(static_cast<std::size_t>(nCol));
    for (index_t i = 0; i < g.shiftsPe; ++i) {
      double p = 0;
      for (index_t j = 0; j < g.shiftsRo; ++j) {
        double pA = 0, pB = 0;
        for (int kpz = 0; kpz < k.pe2; ++kpz)
          for (int kpe = 0; kpe < k.pe; ++kpe)
            for (int kro = 0; kro < k.ro; ++kro) pA += P(lineOf(i) + k.source(kpe), partOf(i) + k.sourcePe2(kpz), j + kro);
        for (index_t t = 0; t < k.targets(); ++t) pB += P(lineOf(i) + k.targetY(t), partOf(i) + k.targetZ(t), j + k.roCentre);
        const double pc = pA * static_cast<double>(nB) + pB * static_cast<double>(nA);
        pCol[static_cast<std::size_t>(j + g.shiftsRo * i)] = pc;
        p += pc;
      }
      const float f = psi(p);
      for (index_t j = 0; j < g.shiftsRo; ++j) scales[static_cast<std::size_t>(j + g.shiftsRo * i + nCol * q)] = f;
    }
    const auto discard = static_cast<index_t>(std::floor(settings.kappa * static_cast<double>(nCol)));
    if (discard > 0) {
      std::vector<index_t> order(static_cast<std::size_t>(nCol));
      std::iota(order.begin(), order.end(), index_t{0});
      // Largest power first; ties by position so that every run drops the same equations.
      std::partial_sort(order.begin(), order.begin() + discard, order.end(), [&](index_t a, index_t b) {
        const double pa = pCol[static_cast<std::size_t>(a)], pb = pCol[static_cast<std::size_t>(b)];
        return pa != pb ? pa > pb : a < b;
      });
      for (index_t d = 0; d < discard; ++d)
        scales[static_cast<std::size_t>(order[static_cast<std::size_t>(d)] + nCol * q)] = 0.f;
    }
  }
  return scales;
}

std::size_t Plan::bytesPerProblem(const Kernel& k, const Sampling& s, index_t columns, bool interpolate) {
  const CalibrationGeometry g = CalibrationGeometry::make(k, s, columns);
  const FillGeometry f = FillGeometry::make(k, s);
  const index_t nA = k.rowsA(), nB = k.rowsB(), S = k.segments;
  const index_t cal = g.equations() * S;                                        // equations per problem
  const index_t pos = (interpolate ? columns : k.segment * S) * f.placements(); // fill positions per problem
  const index_t tables = cal * (nA + nB) + pos * (nA + nB) + nA * S;
  const index_t work = std::max(cal * nA, pos * nA) + std::max(cal * nB, pos * nB) + nA * (nA + nB) * S + cal +
                       (interpolate ? nA * nB * columns : 0);
  return static_cast<std::size_t>(tables) * sizeof(index_t) + static_cast<std::size_t>(work) * sizeof(cfloat);
}

namespace {

/// A vector whose new elements are left uninitialised: the index tables are written whole by their loops, which
/// poll cancellation; zeroing one first (3D fill: 2.7 GB) was an uninterruptible memset of seconds.
template <class T>
struct Uninitialised : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = Uninitialised<U>;
  };
  Uninitialised() = default;
  template <class U>
  Uninitialised(const Uninitialised<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  // Large tables freed on the releasing thread (a cancel unwinds without unmapping GBs), allocated after the
  // frees pending (util/background_release.hpp).
  T* allocate(std::size_t n) {
    if (n * sizeof(T) >= kBackgroundRelease) waitForReleases();
    return std::allocator<T>::allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    releaseLater(p, n * sizeof(T), [](void* q) { ::operator delete(q); });
  }
};
using Table = std::vector<index_t, Uninitialised<index_t>>;

/// A table onto the backend in pieces of 64 MB with a cancellation check between them (3D: GB in one copy).
std::unique_ptr<Buffer> uploadInPieces(Backend& be, const index_t* table, std::size_t count) {
  constexpr std::size_t kPiece = std::size_t{64} << 20;
  const std::size_t bytes = count * sizeof(index_t);
  auto buf = be.allocate(std::max<std::size_t>(bytes, sizeof(index_t)));
  if (bytes <= kPiece) {
    be.upload(*buf, table, bytes);
    return buf;
  }
  for (std::size_t at = 0; at < bytes; at += kPiece) {
    CancelScope::check();
    const std::size_t n = std::min(kPiece, bytes - at);
    auto part = be.view(*buf, at, n);
    be.upload(*part, reinterpret_cast<const char*>(table) + at, n);
  }
  return buf;
}

}  // namespace

std::unique_ptr<Buffer> Plan::upload(const std::vector<index_t>& table) {
  return uploadInPieces(be_, table.data(), table.size());
}

std::unique_ptr<Buffer> Plan::alloc(index_t elements) {
  return be_.allocate(static_cast<std::size_t>(std::max<index_t>(elements, 1)) * sizeof(cfloat));
}

Plan::Plan(Backend& backend, const Kernel& kernel, const Sampling& sampling, const Addressing& data,
           const GrappaSettings& settings, index_t capacity)
    : be_(backend), kernel_(kernel), sampling_(sampling), data_(data),
      cal_(CalibrationGeometry::make(kernel, sampling, data.columns)), fillGeo_(FillGeometry::make(kernel, sampling)),
      chi_(settings.chi), interpolate_(settings.interpolateSegments && !kernel.improved),
      deviceScales_(settings.eta == 1.0 && settings.kappa == 0.0), capacity_(capacity) {
  require(capacity_ >= 1, "GRAPPA: a plan needs room for at least one problem");
  require(cal_.shiftsPe >= 1 && cal_.shiftsRo >= 1, "GRAPPA: the kernel does not fit the calibration block");
  nA_ = kernel_.rowsA();
  nB_ = kernel_.rowsB();
  nCol_ = cal_.equations();
  entries_ = kernel_.segments * capacity_;
  buildCalibrationTables();
  buildScaleTables();
  buildFillTables();
  allocateWork();
}

void Plan::buildCalibrationTables() {
  const Kernel& k = kernel_;
  const index_t columns = data_.columns, S = k.segments, E = entries_;
  // Step 1's tables: equation col of entry e reads row r of A (B) from data (thesis eqs. 4.1, 4.3).
  Table ga(static_cast<std::size_t>(nCol_ * E * nA_)), gb(static_cast<std::size_t>(nCol_ * E * nB_));
  for (index_t e = 0; e < E; ++e) {
    const index_t seg = e % S, q = e / S;
    for (index_t i = 0; i < cal_.shiftsPe; ++i) {
      CancelScope::check();  // 3D: one problem's tables take seconds
      for (index_t j = 0; j < cal_.shiftsRo; ++j) {
        const index_t col = j + cal_.shiftsRo * i, at = col + nCol_ * e;
        const index_t x0 = k.improved ? j : seg * k.segment + j;  // first source column (basic: the column)
        const index_t y0 = cal_.firstLine + i % cal_.shiftsY, z0 = cal_.firstPe2 + i / cal_.shiftsY;
        const bool inside = x0 < columns;
        for (index_t c = 0; c < k.coils; ++c) {
          for (int kpz = 0; kpz < k.pe2; ++kpz)
            for (int kpe = 0; kpe < k.pe; ++kpe)
              for (int kro = 0; kro < k.ro; ++kro)
                ga[static_cast<std::size_t>(at + nCol_ * E * k.rowA(c, kpe, kpz, kro))] =
                    inside ? data_.offset(q, c, y0 + k.source(kpe), x0 + kro, z0 + k.sourcePe2(kpz)) : -1;
          for (index_t t = 0; t < k.targets(); ++t)
            gb[static_cast<std::size_t>(at + nCol_ * E * k.rowB(c, t))] =
                inside ? data_.offset(q, c, y0 + k.targetY(t), x0 + k.roCentre, z0 + k.targetZ(t)) : -1;
        }
      }
    }
  }
  idxGA_ = uploadInPieces(be_, ga.data(), ga.size());
  idxGB_ = uploadInPieces(be_, gb.data(), gb.size());
}

// Steps 2 and 4's tables: the equations' groups for the device-side normalization (scalesOnDevice), and
// the diagonal of each entry's A A^H (λ).
void Plan::buildScaleTables() {
  const Kernel& k = kernel_;
  const index_t columns = data_.columns, S = k.segments, E = entries_;
  if (deviceScales_) {
    // Group g = PE shift + shiftsPe * entry; its equations are shiftsRo consecutive columns (basic: the Δs
    // columns of a segment, improved: the RO shifts). Invalid columns (past the last one) get Ψ = 0.
    const index_t n = nCol_ * E;
    std::vector<index_t> expand(static_cast<std::size_t>(n)), bothA, bothB;
    for (index_t e = 0; e < E; ++e)
      for (index_t i = 0; i < cal_.shiftsPe; ++i)
        for (index_t j = 0; j < cal_.shiftsRo; ++j) {
          const index_t col = j + cal_.shiftsRo * i, g = i + cal_.shiftsPe * e;
          const bool inside = k.improved || (e % S) * k.segment + j < columns;
          expand[static_cast<std::size_t>(col + nCol_ * e)] = inside ? g : -1;
          if (k.improved) {
            bothA.push_back(j + cal_.shiftsRo * (2 * g));
            bothB.push_back(j + cal_.shiftsRo * (2 * g + 1));
          }
        }
    idxExpand_ = upload(expand);
    colB_ = alloc(n);
    if (k.improved) {
      idxBothA_ = upload(bothA);
      idxBothB_ = upload(bothB);
      colA_ = alloc(n);
      both_ = alloc(2 * n);
    }
    groupNorm_ = alloc(cal_.shiftsPe * E);
    psi_ = alloc(cal_.shiftsPe * E);
  }
  std::vector<index_t> diag(static_cast<std::size_t>(nA_ * E));
  for (index_t e = 0; e < E; ++e)
    for (index_t i = 0; i < nA_; ++i) diag[static_cast<std::size_t>(i + nA_ * e)] = i + nA_ * i + nA_ * nA_ * e;
  idxDiag_ = upload(diag);
}

void Plan::buildFillTables() {
  const Kernel& k = kernel_;
  const index_t columns = data_.columns, lines = data_.lines, S = k.segments, E = entries_;
  const index_t depth = sampling_.depth;
  // Filling tables: position pos of entry e reads its sources (F) and writes its targets (T). Basic:
  // entries are segments (or single columns when interpolating); improved: one entry per problem.
  const index_t P = fillGeo_.placements();
  const index_t width = interpolate_ ? 1 : (k.improved ? columns : k.segment);
  fillEntries_ = interpolate_ ? columns * capacity_ : E;
  nPos_ = width * P;
  const index_t FE = fillEntries_;
  Table f(static_cast<std::size_t>(nPos_ * FE * nA_)), t(static_cast<std::size_t>(nPos_ * FE * nB_));
  for (index_t e = 0; e < FE; ++e) {
    const index_t q = interpolate_ ? e / columns : e / S;
    const index_t xFirst = interpolate_ ? e % columns : (k.improved ? 0 : (e % S) * k.segment);
    for (index_t p = 0; p < P; ++p) {
      CancelScope::check();  // 3D: one problem's tables take seconds
      const index_t first = fillGeo_.firstSource[static_cast<std::size_t>(p)];
      const index_t firstZ = fillGeo_.firstSourcePe2[static_cast<std::size_t>(p)];
      for (index_t xr = 0; xr < width; ++xr) {
        const index_t x = xFirst + xr, pos = xr + width * p, at = pos + nPos_ * e;
        const bool inside = x < columns;
        for (index_t c = 0; c < k.coils; ++c) {
          for (int kpz = 0; kpz < k.pe2; ++kpz)
            for (int kpe = 0; kpe < k.pe; ++kpe) {
              const index_t y = first + k.source(kpe), z = firstZ + k.sourcePe2(kpz);
              for (int kro = 0; kro < k.ro; ++kro) {
                const index_t xs = x - k.roCentre + kro;
                // Sources outside the plane or on lines not measured count as zero (gather's -1).
                const bool ok = inside && sampling_.isAcquired(y, z) && xs >= 0 && xs < columns;
                f[static_cast<std::size_t>(at + nPos_ * FE * k.rowA(c, kpe, kpz, kro))] =
                    ok ? data_.offset(q, c, y, xs, z) : -1;
              }
            }
          for (index_t tg = 0; tg < k.targets(); ++tg) {
            const index_t y = first + k.targetY(tg), z = firstZ + k.targetZ(tg);
            // Measured lines (the ACS block) are kept as measured: only missing lines are written.
            const bool ok = inside && y >= 0 && y < lines && z >= 0 && z < depth && !sampling_.isAcquired(y, z);
            t[static_cast<std::size_t>(at + nPos_ * FE * k.rowB(c, tg))] = ok ? data_.offset(q, c, y, x, z) : -1;
          }
        }
      }
    }
  }
  idxF_ = uploadInPieces(be_, f.data(), f.size());
  idxT_ = uploadInPieces(be_, t.data(), t.size());
}

void Plan::allocateWork() {
  const Kernel& k = kernel_;
  const index_t columns = data_.columns, S = k.segments, E = entries_, FE = fillEntries_;
  // Work buffers; the equation matrices and the filling matrices are never alive together.
  GA_ = alloc(std::max(nCol_ * E * nA_, nPos_ * FE * nA_));
  GB_ = alloc(std::max(nCol_ * E * nB_, nPos_ * FE * nB_));
  M_ = alloc(nA_ * nA_ * E);
  weights_ = alloc(nA_ * nB_ * E);
  diag_ = alloc(nA_ * E);
  lambda_ = alloc(E);
  onesA_ = alloc(nA_);
  be_.fill(*onesA_, cfloat(1), nA_);
  scales_ = alloc(nCol_ * E);
  if (interpolate_) {
    // Linear interpolation between segment centres (outside the first and last centre: constant).
    std::vector<cfloat> alpha(static_cast<std::size_t>(S * columns), cfloat(0));
    auto centre = [&](index_t s) {
      const index_t lo = s * k.segment, hi = std::min(columns, lo + k.segment);
      return 0.5 * static_cast<double>(lo + hi - 1);
    };
    for (index_t x = 0; x < columns; ++x) {
      const double xd = static_cast<double>(x);
      if (S == 1 || xd <= centre(0)) {
        alpha[static_cast<std::size_t>(S * x)] = 1;
      } else if (xd >= centre(S - 1)) {
        alpha[static_cast<std::size_t>(S - 1 + S * x)] = 1;
      } else {
        index_t s = 0;
        while (xd > centre(s + 1)) ++s;
        const double w = (xd - centre(s)) / (centre(s + 1) - centre(s));
        alpha[static_cast<std::size_t>(s + S * x)] = static_cast<float>(1 - w);
        alpha[static_cast<std::size_t>(s + 1 + S * x)] = static_cast<float>(w);
      }
    }
    alpha_ = alloc(S * columns);
    be_.upload(*alpha_, alpha.data(), alpha.size() * sizeof(cfloat));
    weightsPerColumn_ = alloc(nA_ * nB_ * columns * capacity_);
  }
}

namespace {

[[noreturn]] void throwCalibrationFailed(const Error& e) {
  throw Error(std::string("GRAPPA calibration failed (is there signal in the calibration lines? a larger "
                          "--chi regularizes more): ") + e.what());
}

}  // namespace

void Plan::calibrate(const Buffer& data, const std::vector<float>* hostScales) {
  const index_t E = entries_, nA = nA_, nB = nB_, nCol = nCol_;
  require(deviceScales_ || (hostScales && static_cast<index_t>(hostScales->size()) == nCol * E),
          "GRAPPA: equation scales do not match the plan");
  if (!deviceScales_) {
    const std::vector<cfloat> sc(hostScales->begin(), hostScales->end());
    be_.upload(*scales_, sc.data(), sc.size() * sizeof(cfloat));
  }

  // Step 1: A^T and B^T (one equation per row).
  be_.gather(*GA_, data, *idxGA_, nCol * E * nA);
  be_.gather(*GB_, data, *idxGB_, nCol * E * nB);
  if (deviceScales_) {
    // Step 2 with η = 1 on the device: sqrt(p) of each group as a root sum of squares of its columns' norms
    // (basic: p = |B_group|^2; improved: p = Σ_j nRowB |a_j|^2 + nRowA |b_j|^2), then Ψ = 1/sqrt(p) by the
    // backend's reciprocal, spread to the group's columns by a gather.
    const index_t n = nCol * E, groups = cal_.shiftsPe * E;
    be_.sumOfSquares(*colB_, *GB_, n, nB, 1);
    if (!kernel_.improved) {
      be_.sumOfSquares(*groupNorm_, *colB_, 1, cal_.shiftsRo, groups);
    } else {
      be_.sumOfSquares(*colA_, *GA_, n, nA, 1);
      be_.scale(*colA_, cfloat(static_cast<float>(std::sqrt(static_cast<double>(nB)))), n);
      be_.scale(*colB_, cfloat(static_cast<float>(std::sqrt(static_cast<double>(nA)))), n);
      be_.scatter(*both_, *colA_, *idxBothA_, n);
      be_.scatter(*both_, *colB_, *idxBothB_, n);
      be_.sumOfSquares(*groupNorm_, *both_, 1, 2 * cal_.shiftsRo, groups);
    }
    // Ψ = 1 / (sqrt(p) + floor): a group without power (zero padding) gets the tiny floor, its equations are
    // zero and Ψ does not matter. One pass (summed in double).
    be_.reciprocalDiagonal(*psi_, *groupNorm_, 1.0, nullptr, kLambdaFloor, groups);
    be_.gather(*scales_, *psi_, *idxExpand_, n);
  }
  // Step 2: each equation scaled by Ψ (0 when clipped).
  be_.multiply(*GA_, *scales_, nCol * E, *GA_, nCol * E * nA, false);
  be_.multiply(*GB_, *scales_, nCol * E, *GB_, nCol * E * nB, false);

  // Steps 3 + 4: (A A^H)^T = GA^H GA and U^T = (B A^H)^T = GA^H GB for every entry.
  const MatrixBatch ga{nCol, nA, nCol * E, nCol}, gb{nCol, nB, nCol * E, nCol};
  const MatrixBatch m{nA, nA, nA, nA * nA}, w{nA, nB, nA, nA * nB};
  be_.gemmBatched(MatOp::ConjTranspose, MatOp::None, nA, nA, nCol, cfloat(1), *GA_, ga, *GA_, ga, cfloat(0), *M_, m, E);
  be_.gemmBatched(MatOp::ConjTranspose, MatOp::None, nA, nB, nCol, cfloat(1), *GA_, ga, *GB_, gb, cfloat(0), *weights_,
                  w, E);

  // λ_e = χ trace_e / nA (+ a floor), added to every diagonal element, all on the device: the diagonals as
  // an nA x E matrix D, λ^T = (χ/nA) 1^T D, D += 1 λ^T.
  be_.gather(*diag_, *M_, *idxDiag_, nA * E);
  be_.fill(*lambda_, cfloat(kLambdaFloor), E);
  be_.gemmBatched(MatOp::None, MatOp::None, 1, E, nA, cfloat(static_cast<float>(chi_ / static_cast<double>(nA))),
                  *onesA_, MatrixBatch{1, nA, 1, 0}, *diag_, MatrixBatch{nA, E, nA, 0}, cfloat(1), *lambda_,
                  MatrixBatch{1, E, 1, 0}, 1);
  be_.gemmBatched(MatOp::None, MatOp::None, nA, E, 1, cfloat(1), *onesA_, MatrixBatch{nA, 1, nA, 0}, *lambda_,
                  MatrixBatch{1, E, 1, 0}, cfloat(1), *diag_, MatrixBatch{nA, E, nA, 0}, 1);
  be_.scatter(*M_, *diag_, *idxDiag_, nA * E);

  // Step 5 by Cholesky: (A A^H + λE)^T W^T = U^T. The thesis's V = (...)^{-1} is never formed. Queued: the
  // outcome is read by checkCalibration(), so that the host queues the fill and the transforms meanwhile.
  // (A backend that solves at once, the CPU's, throws here.)
  try {
    pendingChecks_.push_back(be_.grappaOps().choleskySolveBatchedQueued(*M_, m, *weights_, w, E));
  } catch (const Cancelled&) {
    throw;
  } catch (const Error& e) {
    throwCalibrationFailed(e);
  }
}

void Plan::checkCalibration() {
  std::vector<GrappaOps::SolveCheck> checks;
  checks.swap(pendingChecks_);
  for (const GrappaOps::SolveCheck& check : checks) {
    try {
      check();
    } catch (const Error& e) {
      throwCalibrationFailed(e);
    }
  }
}

void Plan::fill(Buffer& data) {
  const index_t nA = nA_, nB = nB_, FE = fillEntries_;
  const Buffer* w = weights_.get();
  if (interpolate_) {
    // W^T per column = Σ_s α(s, x) W_s^T: one GEMM per problem over the stacked segment weights.
    const index_t S = kernel_.segments, columns = data_.columns, wSize = nA * nB;
    be_.gemmBatched(MatOp::None, MatOp::None, wSize, columns, S, cfloat(1), *weights_,
                    MatrixBatch{wSize, S, wSize, wSize * S}, *alpha_, MatrixBatch{S, columns, S, 0}, cfloat(0),
                    *weightsPerColumn_, MatrixBatch{wSize, columns, wSize, wSize * columns}, capacity_);
    w = weightsPerColumn_.get();
  }
  // Eq. 2.5 for all missing lines at once: T = F W^T, then into the missing lines of every coil.
  be_.gather(*GA_, data, *idxF_, nPos_ * FE * nA);
  be_.gemmBatched(MatOp::None, MatOp::None, nPos_, nB, nA, cfloat(1), *GA_, MatrixBatch{nPos_, nA, nPos_ * FE, nPos_},
                  *w, MatrixBatch{nA, nB, nA, nA * nB}, cfloat(0), *GB_, MatrixBatch{nPos_, nB, nPos_ * FE, nPos_}, FE);
  be_.scatter(data, *GB_, *idxT_, nPos_ * FE * nB);
}

}  // namespace larmor::recon::grappa
