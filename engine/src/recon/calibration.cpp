// The calibration region (recon/calibration.hpp): the largest fully sampled centred box of Cartesian
// k-space (grown one line per dimension in turn, as BART's calib_geom), or the k-space centre of
// non-Cartesian data fitted on a Cartesian box (a Tikhonov-regularised inverse NUFFT onto a 2x grid by CG, FFT,
// crop; recon/calibration.hpp says why not a density-compensated adjoint).
#include "larmor/recon/calibration.hpp"

#include <algorithm>
#include <cmath>

#include "larmor/solve/cg.hpp"
#include "larmor/traj/trajectory.hpp"
#include "larmor/util/error.hpp"

namespace larmor::recon {

namespace {
std::size_t bytesOf(index_t n) { return static_cast<std::size_t>(n) * sizeof(cfloat); }

bool acquired(const Dataset& d, index_t p1, index_t p2, index_t slice) {
  const auto at = [&](const Array<std::uint8_t>& m) {
    return m.size() > 0 && m(p1, p2, m.shape().rank() > 2 ? slice : 0) != 0;
  };
  return at(d.sampled) || at(d.calibration);
}

/// Cartesian data: is every phase-encoding line of the centred box acquired?
bool fullySampled(const Dataset& d, index_t slice, const index_t n[3], const index_t e[3]) {
  const index_t o1 = n[1] / 2 - e[1] / 2, o2 = n[2] / 2 - e[2] / 2;
  for (index_t p2 = o2; p2 < o2 + e[2]; ++p2)
    for (index_t p1 = o1; p1 < o1 + e[1]; ++p1)
      if (!acquired(d, p1, p2, slice)) return false;
  return true;
}

}  // namespace

namespace {
/// (A^H A + lambda I) on the calibration grid's images of every coil, A the NUFFT of the band's samples.
class BoxNormal final : public solve::LinearOperator {
 public:
  BoxNormal(Backend& be, NufftPlan& plan, index_t coils, double lambda)
      : be_(be), plan_(plan), coils_(coils), lambda_(lambda), n_(plan.imageShape().size() * coils),
        samples_(be.allocate(bytesOf(plan.samples() * coils))) {}
  index_t size() const override { return n_; }
  void apply(const Buffer& x, Buffer& y) override {
    plan_.forward(x, *samples_, coils_);
    plan_.adjoint(*samples_, y, coils_);
    be_.axpby(y, cfloat(static_cast<float>(lambda_), 0.f), x, cfloat(1.f, 0.f), n_);
  }

 private:
  Backend& be_;
  NufftPlan& plan_;
  index_t coils_;
  double lambda_;
  index_t n_;
  std::unique_ptr<Buffer> samples_;
};

/// The largest eigenvalue of A^H A (power iteration from a constant image; A^H A is positive semidefinite).
double largestEigenvalue(Backend& be, NufftPlan& plan, int steps) {
  const index_t n = plan.imageShape().size();
  auto x = be.allocate(bytesOf(n)), y = be.allocate(bytesOf(n));
  be.fill(*x, cfloat(1.f / static_cast<float>(std::sqrt(static_cast<double>(n))), 0.f), n);
  BoxNormal normal(be, plan, 1, 0.0);
  double value = 0;
  for (int i = 0; i < steps; ++i) {
    normal.apply(*x, *y);
    value = std::sqrt(be.norm2(*y, n));
    if (!(value > 0) || !std::isfinite(value)) return 0;
    be.axpby(*x, cfloat(static_cast<float>(1.0 / value), 0.f), *y, cfloat(0.f, 0.f), n);
  }
  return value;
}

constexpr double kBoxLambda = 1e-2;   ///< Tikhonov weight, relative to A^H A's largest eigenvalue
constexpr int kBoxIterations = 30;    ///< CG iterations of the box fit
}  // namespace

CalibrationGridding::CalibrationGridding(Backend& be, const Dataset& d, index_t size, const NufftSettings& ns,
                                         const Progress& progress, index_t minimum)
    : be_(be), samplesPerSlice_(d.trajectory.size() / 3), coils_(std::max<index_t>(1, d.header.coils)) {
  const Header& h = d.header;
  require(!d.trajectory.empty(), d.source + ": non-Cartesian data without a trajectory");
  dims_ = nonCartesianRank(d, h.recon[2]);
  const index_t m = samplesPerSlice_;
  require(d.kspace.size() == m * coils_ * h.slices, d.source + ": k-space does not match the trajectory");

  // Radial spokes: the box corner where the spokes are Nyquist-dense, but never below the kernel's 2 x minimum.
  index_t half = size / 2;
  const auto radial = dims_ == 2 ? traj::detectRadial(d.trajectory) : std::nullopt;
  if (radial) {
    const bool full = radial->kStart < -0.25 * std::abs(radial->kStep) * static_cast<float>(radial->readout);
    const double nyquist = static_cast<double>(radial->spokes) / (full ? M_PI : 2 * M_PI);
    const index_t dense = static_cast<index_t>(std::floor(nyquist / std::sqrt(2.0)));
    half = std::min<index_t>(half, std::max<index_t>(dense, minimum));
  }
  c_ = std::max<index_t>(1, 2 * half);

  const index_t image[3] = {h.recon[0], h.recon[1], dims_ == 3 ? h.recon[2] : 1};
  const NufftGeometry full = traj::geometry(d.trajectory, dims_, image, radial);

  // The samples inside the band of the 2c grid.
  const float* k = full.trajectory.data();
  for (index_t j = 0; j < m; ++j) {
    bool in = true;
    for (int a = 0; a < dims_; ++a) in = in && std::abs(k[3 * j + a]) < static_cast<float>(c_);
    if (in) keep_.push_back(j);
  }
  const index_t mk = static_cast<index_t>(keep_.size());
  require(mk >= 1, d.source + ": no samples near the k-space centre to calibrate from");
  NufftGeometry g;
  g.dims = dims_;
  g.image[0] = g.image[1] = 2 * c_;
  g.image[2] = dims_ == 3 ? 2 * c_ : 1;
  g.trajectory = RArray(Shape{3, mk});
  for (index_t i = 0; i < mk; ++i) {
    const index_t j = keep_[static_cast<std::size_t>(i)];
    for (int a = 0; a < 3; ++a) g.trajectory[3 * i + a] = a < dims_ ? k[3 * j + a] : 0.f;
  }
  for (int i = 0; i < 3; ++i) grid_[i] = g.image[i];
  plan_ = be.makeNufftPlan(g, nufftOptions(ns));
  progress.report(0.5, "calibration fit");
  lambda_ = kBoxLambda * largestEigenvalue(be, *plan_, 12);
}

CalibrationGridding::~CalibrationGridding() = default;

CalibrationRegion CalibrationGridding::region(const Dataset& d, index_t slice) const {
  const index_t m = samplesPerSlice_, coils = coils_, mk = static_cast<index_t>(keep_.size());
  require(slice >= 0 && slice < d.header.slices, d.source + ": slice " + std::to_string(slice) + " does not exist");
  require(d.trajectory.size() / 3 == m && std::max<index_t>(1, d.header.coils) == coils &&
              d.kspace.size() == m * coils * d.header.slices,
          d.source + ": not the dataset this calibration was planned for");
  CArray samples(Shape{mk, coils});
  for (index_t cc = 0; cc < coils; ++cc) {
    const cfloat* from = d.kspace.data() + m * (cc + coils * slice);
    cfloat* to = samples.data() + mk * cc;
    for (index_t i = 0; i < mk; ++i) to[i] = from[keep_[static_cast<std::size_t>(i)]];
  }
  Backend& be = be_;
  const Shape imgShape{grid_[0], grid_[1], grid_[2], coils};
  auto ds = be.allocate(bytesOf(samples.size()));
  be.upload(*ds, samples.data(), bytesOf(samples.size()));
  auto rhs = be.allocate(bytesOf(imgShape.size()));
  plan_->adjoint(*ds, *rhs, coils);
  ds.reset();
  // (A^H A + lambda I) x = A^H y: every coil's image at once (the operator is block diagonal).
  auto di = be.allocate(bytesOf(imgShape.size()));
  BoxNormal normal(be, *plan_, coils, lambda_);
  solve::CgOptions o;
  o.maxIterations = kBoxIterations;
  o.tolerance = 1e-6;
  o.trackObjective = false;
  o.recordOperator = false;
  o.stage = "calibration fit";
  solve::conjugateGradient(be, normal, *rhs, *di, o);
  rhs.reset();
  be.fft(*di, imgShape, dims_, FftDirection::Forward);
  CalibrationRegion r;
  r.gridded = true;
  r.box.extent[0] = r.box.extent[1] = c_;
  r.box.extent[2] = dims_ == 3 ? c_ : 1;
  const Shape boxShape{r.box.extent[0], r.box.extent[1], r.box.extent[2], coils};
  auto db = be.allocate(bytesOf(boxShape.size()));
  be.resizeCentred(*db, boxShape, *di, imgShape);
  r.data = CArray(boxShape);
  be.download(r.data.data(), *db, bytesOf(boxShape.size()));
  return r;
}

std::string CalibrationBox::str() const {
  return std::to_string(extent[0]) + "x" + std::to_string(extent[1]) + "x" + std::to_string(extent[2]);
}

CalibrationBox findCalibrationBox(const Dataset& d, index_t slice, index_t size) {
  require(size >= 1, "calibration region: the size must be >= 1");
  const Shape& s = d.kspace.shape();
  require(s.rank() >= 3, d.source + ": Cartesian k-space must be [readout, pe1, pe2, coils, slices]");
  const index_t n[3] = {s[0], s[1], s[2]};
  CalibrationBox b;
  if (!fullySampled(d, slice, n, b.extent)) return b;
  bool stop[3] = {false, false, false};
  while (!(stop[0] && stop[1] && stop[2]))
    for (int i = 0; i < 3; ++i) {
      if (b.extent[i] >= n[i] || b.extent[i] >= size) stop[i] = true;
      if (stop[i]) continue;
      ++b.extent[i];
      if (i > 0 && !fullySampled(d, slice, n, b.extent)) {
        --b.extent[i];
        stop[i] = true;
      }
    }
  return b;
}

CArray extractCalibration(const Dataset& d, index_t slice, const CalibrationBox& box) {
  const Shape& s = d.kspace.shape();
  const index_t n[3] = {s[0], s[1], s[2]};
  const index_t coils = std::max<index_t>(1, d.header.coils);
  require(slice >= 0 && slice < std::max<index_t>(1, d.header.slices),
          d.source + ": slice " + std::to_string(slice) + " does not exist");
  index_t o[3];
  for (int i = 0; i < 3; ++i) {
    require(box.extent[i] >= 1 && box.extent[i] <= n[i], "calibration region " + box.str() + " exceeds the k-space");
    o[i] = n[i] / 2 - box.extent[i] / 2;
  }
  CArray out(Shape{box.extent[0], box.extent[1], box.extent[2], coils});
  const index_t plane = n[0] * n[1] * n[2];
  for (index_t c = 0; c < coils; ++c)
    for (index_t z = 0; z < box.extent[2]; ++z)
      for (index_t y = 0; y < box.extent[1]; ++y) {
        const cfloat* src = d.kspace.data() + plane * (c + coils * slice) + o[0] + n[0] * ((o[1] + y) + n[1] * (o[2] + z));
        std::copy_n(src, box.extent[0], out.data() + box.extent[0] * (y + box.extent[1] * (z + box.extent[2] * c)));
      }
  return out;
}

CalibrationRegion calibrationRegion(Backend& be, const Dataset& d, index_t slice, index_t size, index_t minimum,
                                    const NufftSettings& nufft, const Progress& progress,
                                    std::shared_ptr<const CalibrationGridding>* gridding) {
  const Header& h = d.header;
  CalibrationRegion r;
  index_t extent[3] = {1, 1, 1};
  if (h.trajectory == TrajectoryKind::Cartesian) {
    r.box = findCalibrationBox(d, slice, size);
    r.data = extractCalibration(d, slice, r.box);
    for (int i = 0; i < 3; ++i) {
      extent[i] = d.kspace.shape()[i];
      if (h.encodedFovMm[i] > 0 && h.reconFovMm[i] > 0) r.fov[i] = h.encodedFovMm[i] / h.reconFovMm[i];
    }
  } else {
    std::shared_ptr<const CalibrationGridding> local;
    std::shared_ptr<const CalibrationGridding>& plan = gridding ? *gridding : local;
    if (!plan) plan = std::make_shared<const CalibrationGridding>(be, d, size, nufft, progress, minimum);
    r = plan->region(d, slice);
    for (int i = 0; i < 3; ++i) extent[i] = r.box.extent[i] > 1 ? 2 : 1;
  }
  for (int i = 0; i < 3; ++i)
    require(extent[i] <= 1 || r.box.extent[i] >= minimum,
            d.source + ": the fully sampled k-space centre " + r.box.str() + " is smaller than the kernel (" +
                std::to_string(minimum) + ") along dimension " + std::to_string(i) +
                " (more calibration lines are needed, or --calibration-size)");
  return r;
}

}  // namespace larmor::recon
