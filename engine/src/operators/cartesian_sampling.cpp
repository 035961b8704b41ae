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

const Buffer& CartesianPlan::indexFor(index_t batch) {
  auto& slot = deviceIndex_[batch];
  if (!slot) {
    const index_t m = samples(), n = grid_.size();
    std::vector<std::int64_t> all(static_cast<std::size_t>(m * batch));
    for (index_t b = 0; b < batch; ++b)
      for (index_t j = 0; j < m; ++j) all[static_cast<std::size_t>(b * m + j)] = index_[static_cast<std::size_t>(j)] + b * n;
    slot = backend_.allocate(all.size() * sizeof(std::int64_t));
    backend_.upload(*slot, all.data(), all.size() * sizeof(std::int64_t));
  }
  return *slot;
}

void CartesianPlan::adjoint(const Buffer& samples, Buffer& image, index_t batch) {
  const index_t n = grid_.size(), m = this->samples();
  backend_.fill(image, cfloat(0.f), n * batch);
  backend_.scatter(image, samples, indexFor(batch), m * batch);
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
  backend_.gather(samples, *work_, indexFor(batch), m * batch);
  backend_.scale(samples, cfloat(static_cast<float>(std::sqrt(static_cast<double>(n)))), m * batch);
}

void CartesianPlan::sample(const Buffer& grid, Buffer& out) { backend_.gather(out, grid, indexFor(1), samples()); }

void CartesianPlan::sample(const Buffer& grids, Buffer& out, index_t batch) {
  backend_.gather(out, grids, indexFor(batch), samples() * batch);
}

void CartesianPlan::spreadInterpolate(const Buffer& weights, Buffer& out) {
  auto image = backend_.allocate(bytesOf(grid_.size()));
  adjoint(weights, *image, 1);
  forward(*image, out, 1);
}

CartesianGram::CartesianGram(Backend& backend, const Shape& grid, const std::vector<std::int64_t>& index)
    : backend_(backend), grid_(grid), rank_(cartesianRank(grid)) {
  const index_t n = grid_.size();
  std::vector<cfloat> mask(static_cast<std::size_t>(n), cfloat(0.f));
  for (std::int64_t i : index) {
    require(i >= 0 && i < n, [&] { return "cartesian gram: a sample lies outside the " + grid_.str() + " grid"; });
    require(mask[static_cast<std::size_t>(i)] == 0.f,
            [&] { return "cartesian gram: grid point " + std::to_string(i) + " is sampled twice"; });
    mask[static_cast<std::size_t>(i)] = 1.f;
  }
  diagonal_ = static_cast<double>(index.size()) / static_cast<double>(n);
  mask_ = backend.allocate(bytesOf(n));
  backend.upload(*mask_, mask.data(), bytesOf(n));
}

void CartesianGram::apply(const Buffer& x, Buffer& y, index_t batch) {
  const index_t n = grid_.size();
  const Shape shape{grid_[0], grid_[1], grid_[2], batch};
  if (&x != &y) backend_.copy(y, x, bytesOf(n * batch));
  backend_.fftGram(y, shape, rank_, *mask_);  // F^H M F
}

}  // namespace larmor::ops
