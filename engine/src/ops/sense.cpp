// CG-SENSE pieces (ops/sense.hpp): sensitivities on the device, their estimate from the k-space centre,
// the normal operator sum_c S_c^H T S_c + lambda W^H W, and E / E^H with a NUFFT or exact-DFT plan.
#include "larmor/ops/sense.hpp"

#include <algorithm>
#include <cmath>

namespace larmor::ops {

namespace {
std::size_t bytesOf(index_t n) { return static_cast<std::size_t>(n) * sizeof(cfloat); }
}  // namespace

CoilSensitivities::CoilSensitivities(Backend& backend, const CArray& maps, index_t voxels, index_t coils)
    : backend_(backend), voxels_(voxels), sos_(static_cast<std::size_t>(voxels), 0.0) {
  require(coils >= 1 && maps.size() == voxels * coils,
          "coil maps: " + std::to_string(maps.size()) + " values for " + std::to_string(voxels) + " voxels x " +
              std::to_string(coils) + " coils");
  for (index_t c = 0; c < coils; ++c)
    for (index_t v = 0; v < voxels; ++v) sos_[v] += std::norm(cdouble(maps[c * voxels + v]));
  groupSize_ = std::clamp<index_t>(kCoilGroupElements / std::max<index_t>(voxels, 1), 1, coils);
  for (index_t c0 = 0; c0 < coils; c0 += groupSize_) {
    const index_t m = std::min(coils - c0, groupSize_);
    auto b = backend.allocate(bytesOf(voxels * m));
    backend.upload(*b, maps.data() + c0 * voxels, bytesOf(voxels * m));
    groups_.push_back(std::move(b));
  }
  viewCoils(coils);
  uploadRoot();
}

void CoilSensitivities::viewCoils(index_t coils) {
  for (index_t c = 0; c < coils; ++c)
    maps_.push_back(backend_.view(*groups_[static_cast<std::size_t>(c / groupSize_)],
                                  bytesOf((c % groupSize_) * voxels_), bytesOf(voxels_)));
}

void CoilSensitivities::uploadRoot() {
  CArray root(Shape{voxels_});
  for (index_t v = 0; v < voxels_; ++v) root[v] = cfloat(static_cast<float>(std::sqrt(sos_[static_cast<std::size_t>(v)])), 0.f);
  rss_ = backend_.allocate(bytesOf(voxels_));
  backend_.upload(*rss_, root.data(), bytesOf(voxels_));
}

const std::vector<double>& CoilSensitivities::sumOfSquares() const {
  if (sos_.empty()) {
    CArray host(Shape{voxels_});
    backend_.download(host.data(), *rss_, bytesOf(voxels_));
    sos_.resize(static_cast<std::size_t>(voxels_));
    for (index_t v = 0; v < voxels_; ++v) sos_[static_cast<std::size_t>(v)] = static_cast<double>(host[v].real()) * host[v].real();
  }
  return sos_;
}

CoilSensitivities::CoilSensitivities(Backend& backend, std::unique_ptr<Buffer> maps, index_t voxels, index_t coils)
    : backend_(backend), voxels_(voxels) {
  require(coils >= 1 && maps && maps->bytes() >= bytesOf(voxels * coils),
          "coil maps: the device buffer holds fewer than " + std::to_string(voxels) + " voxels x " +
              std::to_string(coils) + " coils");
  groupSize_ = std::clamp<index_t>(kCoilGroupElements / std::max<index_t>(voxels, 1), 1, coils);
  for (index_t c0 = 0; c0 < coils; c0 += groupSize_) {
    const index_t m = std::min(coils - c0, groupSize_);
    if (c0 == 0 && m == coils) {
      groups_.push_back(std::move(maps));  // one group: the buffer itself
      break;
    }
    auto b = backend.allocate(bytesOf(voxels * m));
    backend.copy(*b, *maps, bytesOf(voxels * m), 0, bytesOf(c0 * voxels));
    groups_.push_back(std::move(b));
  }
  viewCoils(coils);
  // One group (a 2D slice): the root sum of squares is the backend's, and stays there. Several groups: each
  // group's root sum of squares, squared and added here in double, and the root of that uploaded.
  rss_ = backend.allocate(bytesOf(voxels));
  if (groups() == 1) {
    backend.sumOfSquares(*rss_, group(0), voxels, coils, 1);
    return;
  }
  sos_.assign(static_cast<std::size_t>(voxels), 0.0);
  CArray host(Shape{voxels});
  for (index_t g = 0; g < groups(); ++g) {
    backend.sumOfSquares(*rss_, group(g), voxels, groupCoils(g), 1);
    backend.download(host.data(), *rss_, bytesOf(voxels));
    for (index_t v = 0; v < voxels; ++v) sos_[static_cast<std::size_t>(v)] += static_cast<double>(host[v].real()) * host[v].real();
  }
  uploadRoot();
}

NormalOperator::NormalOperator(Backend& backend, FourierGram& toeplitz, const CoilSensitivities* coils,
                               Regularizer* regularizer, double lambda)
    : backend_(backend), toeplitz_(toeplitz), coils_(coils), regularizer_(regularizer), lambda_(lambda) {
  const index_t n = toeplitz.voxels();
  require(!coils || coils->voxels() == n, "normal operator: coil maps and image differ in size");
  require(!regularizer || regularizer->size() == n, "normal operator: prior and image differ in size");
  if (coils) {
    batch_ = backend.allocate(bytesOf(n * coils->groupSize()));
    const std::vector<cfloat> ones(static_cast<std::size_t>(coils->groupSize()), cfloat(1.f));
    ones_ = backend.allocate(bytesOf(coils->groupSize()));
    backend.upload(*ones_, ones.data(), bytesOf(coils->groupSize()));
  }
}

void NormalOperator::apply(const Buffer& x, Buffer& y) {
  const index_t n = size();
  if (!coils_) {
    toeplitz_.apply(x, y);
  } else {
    for (index_t g = 0; g < coils_->groups(); ++g) {
      const Buffer& s = coils_->group(g);
      const index_t m = coils_->groupCoils(g), nm = n * m;
      backend_.multiply(*batch_, x, n, s, nm, false);     // S_c x for the group's coils (x broadcast)
      toeplitz_.apply(*batch_, *batch_, m);               // T S_c x, one batched apply
      backend_.multiply(*batch_, s, nm, *batch_, nm, true);  // S_c^H T S_c x
      // y (+)= [voxels, m] x ones[m]: the coil sum.
      backend_.gemmBatched(MatOp::None, MatOp::None, n, 1, m, cfloat(1.f), *batch_, MatrixBatch{n, m, n, 0}, *ones_,
                           MatrixBatch{m, 1, m, 0}, cfloat(g == 0 ? 0.f : 1.f), y, MatrixBatch{n, 1, n, 0}, 1);
    }
  }
  if (regularizer_ && lambda_ != 0) {
    regularizer_->applyNormalAdd(x, y, lambda_);
  }
}

std::vector<double> NormalOperator::diagonal() const {
  const index_t n = size();
  std::vector<double> d(static_cast<std::size_t>(n), toeplitz_.diagonal());
  if (coils_) {
    const auto& sos = coils_->sumOfSquares();
    for (index_t i = 0; i < n; ++i) d[i] *= sos[i];
  }
  if (regularizer_ && lambda_ != 0) {
    const auto w = regularizer_->diagonal();
    for (index_t i = 0; i < n; ++i) d[i] += lambda_ * w[i];
  }
  return d;
}

SenseEncoding::SenseEncoding(Backend& backend, NufftPlan& plan, const CoilSensitivities* coils, double scale)
    : backend_(backend), plan_(plan), coils_(coils), scale_(scale) {
  require(!coils || coils->voxels() == voxels(), "encoding: coil maps and plan image differ in size");
  image_ = backend.allocate(bytesOf(voxels()));
  samples_ = backend.allocate(bytesOf(samples()));
}

void SenseEncoding::adjoint(const std::vector<std::unique_ptr<Buffer>>& data, Buffer& out, const Progress& progress) {
  const index_t n = voxels();
  require(static_cast<index_t>(data.size()) == coils(), "encoding: data for " + std::to_string(data.size()) +
                                                             " coils, the operator has " + std::to_string(coils()));
  if (!coils_) {
    plan_.adjoint(*data[0], out, 1);
  } else {
    for (index_t c = 0; c < coils(); ++c) {
      plan_.adjoint(*data[static_cast<std::size_t>(c)], *image_, 1);
      if (c == 0) {
        backend_.multiply(out, coils_->map(c), n, *image_, n, true);
      } else {
        backend_.multiply(*image_, coils_->map(c), n, *image_, n, true);
        backend_.axpby(out, cfloat(1.f), *image_, cfloat(1.f), n);
      }
      progress.report(static_cast<double>(c + 1) / static_cast<double>(coils()),
                      "F^H d: coil " + std::to_string(c + 1) + "/" + std::to_string(coils()));
    }
  }
  backend_.scale(out, cfloat(static_cast<float>(scale_), 0.f), n);
}

double SenseEncoding::residualSquared(const Buffer& x, const std::vector<std::unique_ptr<Buffer>>& data) {
  const index_t n = voxels(), m = samples();
  double s = 0;
  for (index_t c = 0; c < coils(); ++c) {
    if (coils_) {
      backend_.multiply(*image_, coils_->map(c), n, x, n, false);
      plan_.forward(*image_, *samples_, 1);
    } else {
      plan_.forward(x, *samples_, 1);
    }
    // scale F S_c x - d_c
    backend_.axpby(*samples_, cfloat(-1.f), *data[static_cast<std::size_t>(c)], cfloat(static_cast<float>(scale_)), m);
    const double r = backend_.norm2(*samples_, m);
    s += r * r;
  }
  return s;
}

}  // namespace larmor::ops
