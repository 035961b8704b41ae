// W^H W, ||W x||^2 and diag(W^H W) of the priors in ops/regularizer.hpp, on any Backend: the differences
// are the finiteDifference kernel of the backend's PriorOps, the weights elementwise multiplies, so nothing
// leaves the device. Backend-neutral: engine/src/cpu/prior.cpp and cuda/prior.cu provide the kernels.
#include "larmor/ops/regularizer.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

#include "larmor/backend/registry.hpp"

namespace larmor::ops {

namespace {

std::size_t bytesOf(index_t n) { return static_cast<std::size_t>(n) * sizeof(cfloat); }

/// The reference image of a host-side call must have the reconstruction's voxel count.
void checkReferenceSize(const CArray& reference, const index_t dims[3]) {
  const index_t n = dims[0] * dims[1] * dims[2];
  require(reference.size() == n, "anatomical prior: the reference image has " + std::to_string(reference.size()) +
                                     " voxels, the reconstruction " + std::to_string(n) + " (" +
                                     std::to_string(dims[0]) + "x" + std::to_string(dims[1]) + "x" +
                                     std::to_string(dims[2]) + ")");
}

class Tikhonov final : public Regularizer {
 public:
  Tikhonov(Backend& b, const index_t dims[3]) : Regularizer(b, dims) {}
  RegularizerKind kind() const override { return RegularizerKind::Tikhonov; }
  void applyNormal(const Buffer& x, Buffer& y) override { backend_.copy(y, x, bytesOf(size())); }
  void applyNormalAdd(const Buffer& x, Buffer& y, double alpha) override {
    backend_.axpby(y, cfloat(static_cast<float>(alpha)), x, cfloat(1.f), size());
  }
  double normSquared(const Buffer& x) override {
    const double n = backend_.norm2(x, size());
    return n * n;
  }
  void diagonal(Buffer& out) const override { backend_.fill(out, cfloat(1.f), size()); }
};

/// W = [w_a D_a] stacked over the axes of extent > 1; unweighted when no weights are given. `weights[a]`:
/// w_a in the backend's memory (real parts), squared here in place.
class FiniteDifferences final : public Regularizer {
 public:
  FiniteDifferences(Backend& b, const index_t dims[3], std::array<std::unique_ptr<Buffer>, 3>* weights)
      : Regularizer(b, dims), kind_(weights ? RegularizerKind::Anatomical : RegularizerKind::FiniteDifference) {
    const index_t n = size();
    for (int a = 0; a < 3; ++a)
      if (dims_[a] > 1) axes_.push_back(a);
    if (weights) {
      for (int a : axes_) {
        std::unique_ptr<Buffer>& w = (*weights)[a];
        require(w && w->bytes() >= bytesOf(n), "anatomical weights: axis " + std::to_string(a) + " has fewer than " +
                                                   std::to_string(n) + " weights");
        backend_.multiply(*w, *w, n, *w, n, true);  // |w|^2
        squaredWeights_[a] = std::move(w);
      }
    }
    tmp_ = backend_.allocate(bytesOf(n));
    tmp2_ = backend_.allocate(bytesOf(n));
  }
  RegularizerKind kind() const override { return kind_; }

  // W^H W x = sum_a D_a^H diag(w_a^2) D_a x in one pass (PriorOps::differenceNormal).
  void applyNormal(const Buffer& x, Buffer& y) override { normal(x, y, 1.0, false); }
  void applyNormalAdd(const Buffer& x, Buffer& y, double alpha) override { normal(x, y, alpha, true); }

  double normSquared(const Buffer& x) override {
    const index_t n = size();
    double s = 0;
    for (int a : axes_) {
      backend_.priorOps().finiteDifference(*tmp_, x, dims_, 1, a, false);
      if (squaredWeights_[a]) {
        backend_.multiply(*tmp2_, *squaredWeights_[a], n, *tmp_, n, false);
        s += backend_.dot(*tmp_, *tmp2_, n).real();  // sum w^2 |D x|^2
      } else {
        const double v = backend_.norm2(*tmp_, n);
        s += v * v;
      }
    }
    return s;
  }

  void diagonal(Buffer& out) const override {
    // (D_a^H diag(w^2) D_a)_{ii} = w_a(i)^2 [i_a < N_a - 1] + w_a(i - e_a)^2 [i_a > 0].
    backend_.fill(out, cfloat(0.f), size());
    for (int a : axes_) backend_.priorOps().addDifferenceDiagonal(out, squaredWeights_[a].get(), dims_, a);
  }

 private:
  void normal(const Buffer& x, Buffer& y, double alpha, bool accumulate) {
    const Buffer* w[3] = {squaredWeights_[0].get(), squaredWeights_[1].get(), squaredWeights_[2].get()};
    backend_.priorOps().differenceNormal(y, x, w, dims_, static_cast<float>(alpha), accumulate);
  }
  RegularizerKind kind_;
  std::vector<int> axes_;
  std::unique_ptr<Buffer> squaredWeights_[3];
  std::unique_ptr<Buffer> tmp_, tmp2_;
};

}  // namespace

std::vector<double> Regularizer::diagonal() const {
  const index_t n = size();
  auto d = backend_.allocate(bytesOf(n));
  diagonal(*d);
  std::vector<cfloat> host(static_cast<std::size_t>(n));
  backend_.download(host.data(), *d, bytesOf(n));
  std::vector<double> out(host.size());
  for (std::size_t i = 0; i < host.size(); ++i) out[i] = host[i].real();
  return out;
}

double edgeScale(Backend& backend, const Buffer& reference, const index_t dims[3]) {
  const std::uint64_t median = PriorOps::neighbourPairs(dims) / 2;
  const PriorOps::NeighbourDifferences s = backend.priorOps().neighbourDifferences(reference, dims, median);
  require(s.finite, "anatomical prior: the reference image has a non-finite voxel");
  const double delta = std::max(3.0 * s.kth, 0.02 * s.maximum);
  // A constant reference has no edges: every weight 1 (plain smoothness).
  return delta > 0 ? delta : 1.0;
}

namespace {
/// The edge scale to use: `delta` when > 0 (the reference still checked for non-finite voxels), else
/// edgeScale's.
double resolveDelta(Backend& backend, const Buffer& reference, const index_t dims[3], double delta) {
  if (delta <= 0) return edgeScale(backend, reference, dims);
  // An explicit edge scale skips the statistics, but not the check of the reference.
  require(backend.priorOps().neighbourDifferences(reference, dims, 0).finite,
          "anatomical prior: the reference image has a non-finite voxel");
  return delta;
}
}  // namespace

std::unique_ptr<Regularizer> makeAnatomical(Backend& backend, const index_t dims[3], const Buffer& reference,
                                            double delta, double* deltaUsed) {
  const index_t n = dims[0] * dims[1] * dims[2];
  require(reference.bytes() >= bytesOf(n), "anatomical prior: the reference image has fewer than " +
                                               std::to_string(n) + " voxels");
  delta = resolveDelta(backend, reference, dims, delta);
  if (deltaUsed) *deltaUsed = delta;
  std::array<std::unique_ptr<Buffer>, 3> w;
  for (int a = 0; a < 3; ++a) {
    if (dims[a] <= 1) continue;
    w[a] = backend.allocate(bytesOf(n));
    backend.priorOps().edgeWeights(*w[a], reference, dims, a, delta);
  }
  return std::make_unique<FiniteDifferences>(backend, dims, &w);
}

AnatomicalWeights anatomicalWeights(const CArray& reference, const index_t dims[3], double delta) {
  checkReferenceSize(reference, dims);
  const index_t n = reference.size();
  const auto cpu = makeCpuBackend();
  auto ref = cpu->allocate(bytesOf(n));
  cpu->upload(*ref, reference.data(), bytesOf(n));
  AnatomicalWeights out;
  out.delta = resolveDelta(*cpu, *ref, dims, delta);
  auto w = cpu->allocate(bytesOf(n));
  for (int a = 0; a < 3; ++a) {
    out.weights[a] = RArray(Shape{dims[0], dims[1], dims[2]}, 1.f);
    if (dims[a] <= 1) continue;
    cpu->priorOps().edgeWeights(*w, *ref, dims, a, out.delta);
    const cfloat* pw = static_cast<const cfloat*>(w->ptr());
    for (index_t i = 0; i < n; ++i) out.weights[a][i] = pw[i].real();
  }
  return out;
}

std::unique_ptr<Regularizer> makeTikhonov(Backend& backend, const index_t dims[3]) {
  return std::make_unique<Tikhonov>(backend, dims);
}
std::unique_ptr<Regularizer> makeFiniteDifference(Backend& backend, const index_t dims[3]) {
  return std::make_unique<FiniteDifferences>(backend, dims, nullptr);
}
std::unique_ptr<Regularizer> makeWeightedFiniteDifference(Backend& backend, const index_t dims[3],
                                                          const AnatomicalWeights& weights) {
  const index_t n = dims[0] * dims[1] * dims[2];
  std::array<std::unique_ptr<Buffer>, 3> w;
  std::vector<cfloat> staging;  // one for every axis
  for (int a = 0; a < 3; ++a) {
    if (dims[a] <= 1) continue;
    const RArray& wa = weights.weights[a];
    require(wa.size() == n, "anatomical weights: axis " + std::to_string(a) + " has " + std::to_string(wa.size()) +
                                " weights for " + std::to_string(n) + " voxels");
    staging.resize(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) staging[static_cast<std::size_t>(i)] = cfloat(wa[i], 0.f);
    w[a] = backend.allocate(bytesOf(n));
    backend.upload(*w[a], staging.data(), bytesOf(n));
  }
  return std::make_unique<FiniteDifferences>(backend, dims, &w);
}
std::unique_ptr<Regularizer> makeAnatomical(Backend& backend, const index_t dims[3], const CArray& reference,
                                            double delta) {
  checkReferenceSize(reference, dims);
  const index_t n = reference.size();
  auto ref = backend.allocate(bytesOf(n));
  backend.upload(*ref, reference.data(), bytesOf(n));
  return makeAnatomical(backend, dims, *ref, delta);
}

}  // namespace larmor::ops
