// Cartesian SENSE's Fourier operators (ops/cartesian_sampling.hpp): FFT + gather, scatter + IFFT, and the
// mask Gram operator, on any backend.
#include "larmor/ops/cartesian_sampling.hpp"

#include <cmath>
#include <complex>
#include <string>

namespace larmor::ops {

namespace {
std::size_t bytesOf(index_t n) { return static_cast<std::size_t>(n) * sizeof(cfloat); }
}  // namespace

CartesianPlan::CartesianPlan(Backend& backend, const Shape& grid, std::vector<std::int64_t> index)
    : backend_(backend), grid_(grid), rank_(cartesianRank(grid)), index_(std::move(index)) {
  require(grid_.rank() == 3, "cartesian plan: the grid must be [N0, N1, N2], not " + grid_.str());
  const index_t n = grid_.size();
  std::vector<bool> seen(static_cast<std::size_t>(n), false);
  for (std::size_t j = 0; j < index_.size(); ++j) {
    require(index_[j] >= 0 && index_[j] < n,
            [&] { return "cartesian plan: sample " + std::to_string(j) + " lies outside the " + grid_.str() + " grid"; });
    require(!seen[static_cast<std::size_t>(index_[j])],
            [&] { return "cartesian plan: grid point " + std::to_string(index_[j]) + " is sampled twice"; });
    seen[static_cast<std::size_t>(index_[j])] = true;
  }
}

const Buffer& CartesianPlan::deviceIndex() {
  if (!deviceIndex_) {
    deviceIndex_ = backend_.allocate(index_.size() * sizeof(std::int64_t));
    backend_.upload(*deviceIndex_, index_.data(), index_.size() * sizeof(std::int64_t));
  }
  return *deviceIndex_;
}

void CartesianPlan::adjoint(const Buffer& samples, Buffer& image, index_t batch) {
  const index_t n = grid_.size(), m = this->samples();
  backend_.fill(image, cfloat(0.f), n * batch);
  backend_.scatter(image, samples, deviceIndex(), m, batch, n);
  backend_.fft(image, Shape{grid_[0], grid_[1], grid_[2], batch}, rank_, FftDirection::Inverse);
  backend_.scale(image, cfloat(static_cast<float>(std::sqrt(static_cast<double>(n)))), n * batch);
}

void CartesianPlan::forward(const Buffer& image, Buffer& samples, index_t batch) {
  const index_t n = grid_.size(), m = this->samples();
  if (workBatch_ < batch) {
    work_ = backend_.allocate(bytesOf(n * batch));
    workBatch_ = batch;
  }
  backend_.copy(*work_, image, bytesOf(n * batch));
  backend_.fft(*work_, Shape{grid_[0], grid_[1], grid_[2], batch}, rank_, FftDirection::Forward);
  backend_.gather(samples, *work_, deviceIndex(), m, batch, n);
  backend_.scale(samples, cfloat(static_cast<float>(std::sqrt(static_cast<double>(n)))), m * batch);
}

void CartesianPlan::sample(const Buffer& grid, Buffer& out) { backend_.gather(out, grid, deviceIndex(), samples()); }

void CartesianPlan::sample(const Buffer& grids, Buffer& out, index_t batch) {
  backend_.gather(out, grids, deviceIndex(), samples(), batch, grid_.size());
}

void CartesianPlan::spreadInterpolate(const Buffer& weights, Buffer& out) {
  auto image = backend_.allocate(bytesOf(grid_.size()));
  adjoint(weights, *image, 1);
  forward(*image, out, 1);
}

CartesianGram::CartesianGram(Backend& backend, CartesianPlan& plan)
    : backend_(backend), grid_(plan.imageShape()), rank_(cartesianRank(grid_)) {
  const index_t n = grid_.size(), m = plan.samples();
  diagonal_ = static_cast<double>(m) / static_cast<double>(n);
  mask_ = backend.allocate(bytesOf(n));
  backend.fill(*mask_, cfloat(0.f), n);
  auto ones = backend.allocate(bytesOf(m));
  backend.fill(*ones, cfloat(1.f), m);
  backend.scatter(*mask_, *ones, plan.deviceIndex(), m);
}

void CartesianGram::apply(const Buffer& x, Buffer& y, index_t batch) {
  const index_t n = grid_.size();
  const Shape shape{grid_[0], grid_[1], grid_[2], batch};
  if (&x != &y) backend_.copy(y, x, bytesOf(n * batch));
  backend_.toeplitzOps().fftGram(y, shape, rank_, *mask_);  // F^H M F
}

}  // namespace larmor::ops
