// The PCG of a 3D Toeplitz problem spread over devices by z slabs (recon/split_cg.hpp derives the split).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "larmor/backend/solver_ops.hpp"
#include "larmor/recon/split_cg.hpp"
#include "larmor/util/error.hpp"

namespace larmor::recon {

namespace {
constexpr std::size_t kC = sizeof(cfloat);

/// height blocks of width bytes from src (on srcBe) to dst (on dstBe): a peer copy where the devices reach each
/// other, else through the host.
void copyBlocks(Backend& dstBe, Buffer& dst, std::size_t dstOffset, std::size_t dstPitch, Backend& srcBe,
                const Buffer& src, std::size_t srcOffset, std::size_t srcPitch, std::size_t width, std::size_t height) {
  if (dstBe.copyFromPeer2D(dst, dstOffset, dstPitch, srcBe, src, srcOffset, srcPitch, width, height)) return;
  std::vector<char> host(width);
  for (std::size_t i = 0; i < height; ++i) {
    srcBe.download(host.data(), src, width, srcOffset + i * srcPitch);
    dstBe.upload(dst, host.data(), width, dstOffset + i * dstPitch);
  }
}

void copyBytes(Backend& dstBe, Buffer& dst, std::size_t dstOffset, Backend& srcBe, const Buffer& src,
               std::size_t srcOffset, std::size_t bytes) {
  copyBlocks(dstBe, dst, dstOffset, bytes, srcBe, src, srcOffset, bytes, bytes, 1);
}
}  // namespace

struct SplitToeplitzCg::Part {
  Backend* be = nullptr;
  index_t z0 = 0, nz = 0;  ///< its image planes
  index_t e0 = 0, ne = 0;  ///< the planes of its prior: its own and a halo plane on each side where one exists
  index_t y0 = 0, ny = 0;  ///< its band of the grid's y rows for the z pass
  std::unique_ptr<Buffer> qband;  ///< [G0, ny, G2]: its rows of the kernel
  std::unique_ptr<Buffer> a;      ///< [G0, G1, nz]: its planes padded (every device's z pass reads its band of rows)
  std::unique_ptr<ops::Regularizer> prior;  ///< on [N0, N1, ne]
  std::unique_ptr<Buffer> priorDiagonal;    ///< diag(W^H W) on its planes
  std::unique_ptr<Buffer> pe, ye;           ///< p with its halos, W^H W of it
  std::unique_ptr<Buffer> x, r, p, q, z, b, inverse, tmp, state;
  index_t n(const index_t* dims) const { return dims[0] * dims[1] * nz; }
};

bool SplitToeplitzCg::applies(const std::vector<Backend*>& backends, const index_t dims[3], const Shape& grid,
                              ops::RegularizerKind prior) {
  const auto devices = static_cast<index_t>(backends.size());
  if (devices < 1 || grid.rank() < 3 || dims[2] < std::max<index_t>(2, devices) || grid[1] < devices) return false;
  if (prior != ops::RegularizerKind::Tikhonov && prior != ops::RegularizerKind::FiniteDifference &&
      prior != ops::RegularizerKind::Anatomical)
    return false;
  if (grid[2] < dims[2] || grid[0] < dims[0] || grid[1] < dims[1]) return false;
  for (Backend* t : backends) {
    if (!t->canFftGramColumns(grid[0], grid[2])) return false;
    for (Backend* h : backends)  // t's z pass reads and writes h's planes where they are
      if (!t->canReadPeer(*h)) return false;
  }
  return true;
}

SplitToeplitzCg::SplitToeplitzCg(const std::vector<Backend*>& backends, const index_t dims[3], const Buffer& kernel,
                                 const Shape& grid, double gramDiagonal, const Prior& prior)
    : dims_{dims[0], dims[1], dims[2]}, grid_(grid), gramDiagonal_(gramDiagonal), prior_(prior.kind) {
  require(applies(backends, dims, grid, prior.kind), "split CG: this problem does not split over these devices");
  require(prior.kind != ops::RegularizerKind::Anatomical || (prior.reference && prior.delta > 0 &&
                                                             prior.reference->size() == dims[0] * dims[1] * dims[2]),
          "split CG: the anatomical prior needs the reference image and its edge scale");
  const auto devices = static_cast<index_t>(backends.size());
  const index_t plane = dims[0] * dims[1], g0 = grid[0], g1 = grid[1], g2 = grid[2];
  box0_ = g2 / 2 - dims[2] / 2;
  Backend& primary = *backends[0];
  for (index_t d = 0; d < devices; ++d) {
    auto part = std::make_unique<Part>();
    Part& t = *part;
    Backend& be = *backends[static_cast<std::size_t>(d)];
    t.be = &be;
    t.z0 = d * dims[2] / devices;
    t.nz = (d + 1) * dims[2] / devices - t.z0;
    t.e0 = std::max<index_t>(0, t.z0 - 1);
    t.ne = std::min(dims[2], t.z0 + t.nz + 1) - t.e0;
    t.y0 = d * g1 / devices;
    t.ny = (d + 1) * g1 / devices - t.y0;
    const index_t n = t.n(dims_), ne = plane * t.ne;
    t.qband = be.allocate(static_cast<std::size_t>(g0 * t.ny * g2) * kC);
    copyBlocks(be, *t.qband, 0, static_cast<std::size_t>(g0 * t.ny) * kC, primary, kernel,
               static_cast<std::size_t>(t.y0 * g0) * kC, static_cast<std::size_t>(g0 * g1) * kC,
               static_cast<std::size_t>(g0 * t.ny) * kC, static_cast<std::size_t>(g2));
    t.a = be.allocate(static_cast<std::size_t>(g0 * g1 * t.nz) * kC);
    const index_t ext[3] = {dims[0], dims[1], t.ne};
    if (prior.kind == ops::RegularizerKind::Tikhonov) {
      t.prior = ops::makeTikhonov(be, ext);
    } else if (prior.kind == ops::RegularizerKind::FiniteDifference) {
      t.prior = ops::makeFiniteDifference(be, ext);
    } else {
      auto ref = be.allocate(static_cast<std::size_t>(ne) * kC);
      be.upload(*ref, prior.reference->data() + t.e0 * plane, static_cast<std::size_t>(ne) * kC);
      t.prior = ops::makeAnatomical(be, ext, *ref, prior.delta);
    }
    t.pe = be.allocate(static_cast<std::size_t>(ne) * kC);
    t.ye = be.allocate(static_cast<std::size_t>(ne) * kC);
    t.prior->diagonal(*t.ye);
    t.priorDiagonal = be.allocate(static_cast<std::size_t>(n) * kC);
    be.copy(*t.priorDiagonal, *t.ye, static_cast<std::size_t>(n) * kC, 0,
            static_cast<std::size_t>((t.z0 - t.e0) * plane) * kC);
    for (auto* v : {&t.x, &t.r, &t.p, &t.q, &t.z, &t.b, &t.inverse, &t.tmp})
      *v = be.allocate(static_cast<std::size_t>(n) * kC);
    parts_.push_back(std::move(part));
  }
}

SplitToeplitzCg::~SplitToeplitzCg() = default;

void SplitToeplitzCg::scatter(const Buffer& from, std::unique_ptr<Buffer> Part::*to) {
  Backend& primary = *parts_[0]->be;
  const index_t plane = dims_[0] * dims_[1];
  for (auto& t : parts_)
    copyBytes(*t->be, *((*t).*to), 0, primary, from, static_cast<std::size_t>(t->z0 * plane) * kC,
              static_cast<std::size_t>(t->n(dims_)) * kC);
}

void SplitToeplitzCg::gather(std::unique_ptr<Buffer> Part::*from, Buffer& to) {
  Backend& primary = *parts_[0]->be;
  const index_t plane = dims_[0] * dims_[1];
  for (auto& t : parts_)
    copyBytes(primary, to, static_cast<std::size_t>(t->z0 * plane) * kC, *t->be, *((*t).*from), 0,
              static_cast<std::size_t>(t->n(dims_)) * kC);
}

void SplitToeplitzCg::applyParts(double lambda) {
  const index_t g0 = grid_[0], g1 = grid_[1], g2 = grid_[2], plane = dims_[0] * dims_[1];
  for (auto& t : parts_) {
    const Shape padded{g0, g1, t->nz}, image{dims_[0], dims_[1], t->nz};
    t->be->resizeCentred(*t->a, padded, *t->p, image);
    t->be->fft(*t->a, padded, 2, FftDirection::Forward);
  }
  // Device t's z pass takes its band of rows of every device's planes where they are: after every device's forward
  // transform, and before any device's inverse one.
  waitForEachOther();
  for (auto& t : parts_) {
    std::vector<Backend::GramColumns> pieces;
    for (auto& h : parts_) pieces.push_back({h->be, h->a.get(), g0 * t->y0, box0_ + h->z0, h->nz});
    t->be->fftGramColumns(pieces, g0, t->ny, g0 * g1, g2, *t->qband, t->ny, 0);
  }
  waitForEachOther();
  for (auto& t : parts_) {
    const Shape padded{g0, g1, t->nz}, image{dims_[0], dims_[1], t->nz};
    t->be->fft(*t->a, padded, 2, FftDirection::Inverse);
    t->be->resizeCentred(*t->q, image, *t->a, padded);
  }
  if (lambda == 0) return;
  const std::size_t pb = static_cast<std::size_t>(plane) * kC;
  for (std::size_t i = 0; i < parts_.size(); ++i) {  // p with its halos
    Part& t = *parts_[i];
    t.be->copy(*t.pe, *t.p, static_cast<std::size_t>(t.n(dims_)) * kC, static_cast<std::size_t>(t.z0 - t.e0) * pb, 0);
    if (t.e0 < t.z0) {
      const Part& below = *parts_[i - 1];
      copyBytes(*t.be, *t.pe, 0, *below.be, *below.p, static_cast<std::size_t>(below.nz - 1) * pb, pb);
    }
    if (t.e0 + t.ne > t.z0 + t.nz) {
      const Part& above = *parts_[i + 1];
      copyBytes(*t.be, *t.pe, static_cast<std::size_t>(t.ne - 1) * pb, *above.be, *above.p, 0, pb);
    }
  }
  for (auto& t : parts_) {
    const index_t n = t->n(dims_);
    t->prior->applyNormal(*t->pe, *t->ye);
    t->be->copy(*t->tmp, *t->ye, static_cast<std::size_t>(n) * kC, 0, static_cast<std::size_t>(t->z0 - t->e0) * pb);
    t->be->axpby(*t->q, cfloat(static_cast<float>(lambda)), *t->tmp, cfloat(1.f), n);
  }
}

void SplitToeplitzCg::waitForEachOther() {
  for (auto& t : parts_)
    for (auto& h : parts_) t->be->waitForPeer(*h->be);
}

void SplitToeplitzCg::apply(double lambda, const Buffer& x, Buffer& y) {
  scatter(x, &Part::p);
  applyParts(lambda);
  gather(&Part::q, y);
}

solve::CgResult SplitToeplitzCg::solve(double lambda, const Buffer& b, Buffer& x, const solve::CgOptions& o,
                                       bool precondition, const Progress& progress, const solve::CgObserver& observer) {
  require(o.maxIterations >= 0, "CG: the iteration count must be >= 0");
  require(o.tolerance >= 0 && std::isfinite(o.tolerance), "CG: the tolerance must be >= 0");
  require(std::isfinite(lambda) && lambda >= 0, "cg: lambda must be >= 0");
  const std::size_t bytes = static_cast<std::size_t>(dims_[0] * dims_[1] * dims_[2]) * kC;
  require(b.bytes() >= bytes && x.bytes() >= bytes, "CG: the right-hand side or the solution is too small");
  using kernels::CgCombineStep;
  using kernels::cgShare;
  solve::CgResult result;
  // The scalars stay on the devices as in solve::conjugateGradient (backend/solver_ops.hpp): each device forms its
  // share of an iteration's inner products, reads every device's shares after waiting for them (cgCombine: the
  // sums in the devices' order, the same on every device, and the stopping rules), and steps with the sums; the
  // host reads the primary's scalars once per window of iterations.
  const CgLayout l{o.maxIterations};
  std::vector<const Buffer*> shares;
  for (auto& t : parts_) {
    t->state = t->be->solverOps().scalars(2 * l.size());
    shares.push_back(t->state.get());
  }
  SolverOps& primaryOps = parts_[0]->be->solverOps();
  std::vector<double> v(static_cast<std::size_t>(l.size()));
  auto readState = [&] { primaryOps.read(v.data(), *parts_[0]->state, 0, l.size()); };
  auto combine = [&](int k, CgCombineStep step) {
    waitForEachOther();
    for (auto& t : parts_) t->be->solverOps().cgCombine(*t->state, shares, l, k, step, o.tolerance);
  };
  double bnorm = 0;
  auto record = [&](int k) {
    const solve::CgIterate it = solve::cgIterate(v, k, bnorm, o);
    result.history.push_back(it);
    if (observer) observer(it);
  };


  scatter(b, &Part::b);
  for (auto& t : parts_) {  // the Jacobi preconditioner: 1 / (diag(T) + lambda diag(W^H W))
    const index_t n = t->n(dims_);
    if (precondition) t->be->reciprocalDiagonal(*t->inverse, *t->priorDiagonal, lambda, nullptr, gramDiagonal_, n);
  }
  if (o.warmStart) {
    scatter(x, &Part::x);
    for (auto& t : parts_) t->be->copy(*t->p, *t->x, static_cast<std::size_t>(t->n(dims_)) * kC);
    applyParts(lambda);
    for (auto& t : parts_) {
      t->be->copy(*t->r, *t->b, static_cast<std::size_t>(t->n(dims_)) * kC);
      t->be->axpby(*t->r, cfloat(-1.f), *t->q, cfloat(1.f), t->n(dims_));
    }
  } else {
    for (auto& t : parts_) {
      t->be->fill(*t->x, cfloat(0.f), t->n(dims_));
      t->be->copy(*t->r, *t->b, static_cast<std::size_t>(t->n(dims_)) * kC);
    }
  }
  // z = M^{-1} r (z is r itself without M).
  auto zOf = [&](Part& t) -> Buffer& { return precondition ? *t.z : *t.r; };
  auto precondition_ = [&] {
    if (!precondition) return;
    for (auto& t : parts_) t->be->multiply(*t->z, *t->inverse, t->n(dims_), *t->r, t->n(dims_), false);
  };
  precondition_();
  for (auto& t : parts_) {
    SolverOps& ops = t->be->solverOps();
    const index_t n = t->n(dims_);
    ops.dot(*t->state, cgShare(l, CgLayout::kRhsNorm2), *t->b, *t->b, n);
    ops.dot(*t->state, cgShare(l, l.rr(0)), *t->r, *t->r, n);
    ops.dot(*t->state, cgShare(l, l.rz(0)), *t->r, zOf(*t), n);
    if (o.trackObjective) {
      ops.dot(*t->state, cgShare(l, l.xb(0)), *t->x, *t->b, n);
      ops.dot(*t->state, cgShare(l, l.xr(0)), *t->x, *t->r, n);
    }
  }
  combine(0, CgCombineStep::Initial);
  readState();
  bnorm = std::sqrt(v[CgLayout::kRhsNorm2]);
  if (!(bnorm > 0)) {  // A x = 0 with A positive definite: x = 0, whatever the initial guess
    parts_[0]->be->fill(x, cfloat(0.f), dims_[0] * dims_[1] * dims_[2]);
    result.stopReason = "zero right-hand side";
    result.converged = true;
    std::fill(v.begin(), v.end(), 0.0);
    record(0);
    return result;
  }
  record(0);
  if (kernels::cgConverged(v[static_cast<std::size_t>(l.rr(0))], v[CgLayout::kRhsNorm2], o.tolerance)) {
    result.converged = true;
    result.stopReason = "tolerance";
    gather(&Part::x, x);
    return result;
  }
  for (auto& t : parts_) t->be->copy(*t->p, zOf(*t), static_cast<std::size_t>(t->n(dims_)) * kC);
  result.stopReason = "iterations";
  const int window = solve::readWindow(primaryOps, parts_[0]->n(dims_), o.readEvery);
  try {
    for (int k = 1; k <= o.maxIterations;) {
      const int last = std::min(o.maxIterations, k + window - 1);
      for (int j = k; j <= last; ++j) {
        solve::reportIteration(o, progress, j);
        applyParts(lambda);
        for (auto& t : parts_) t->be->solverOps().dot(*t->state, cgShare(l, l.pq(j)), *t->p, *t->q, t->n(dims_));
        combine(j, CgCombineStep::Curvature);
        for (auto& t : parts_) {
          SolverOps& ops = t->be->solverOps();
          const index_t n = t->n(dims_);
          // The tolerance rule is the combined one's: the update only steps and forms this device's shares.
          ops.cgUpdate(*t->state, l, j, *t->x, *t->r, *t->p, *t->q, o.trackObjective ? t->b.get() : nullptr, 0.0, n);
          if (precondition && j < o.maxIterations) {
            t->be->multiply(*t->z, *t->inverse, n, *t->r, n, false);
            ops.dot(*t->state, l.rz(j), *t->r, *t->z, n);
          }
          ops.cgPublish(*t->state, l, j);
        }
        combine(j, CgCombineStep::Update);
        if (j == o.maxIterations) break;
        for (auto& t : parts_) t->be->solverOps().cgDirection(*t->state, l, j, *t->p, zOf(*t), t->n(dims_));
      }
      readState();
      if (solve::replayWindow(v, k, last, result, record)) break;
      k = last + 1;
    }
  } catch (...) {
    gather(&Part::x, x);  // the last iterate the devices reached, as solve::conjugateGradient leaves it
    throw;
  }
  gather(&Part::x, x);
  return result;
}

}  // namespace larmor::recon
