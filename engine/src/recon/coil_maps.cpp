// Coil sensitivity maps of one slice (recon/coil_maps.hpp): ESPIRiT, Walsh-style, the dataset's, or a
// .cfl file, on the reconstruction's image grid.
#include "larmor/recon/coil_maps.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>

#include "larmor/io/cfl.hpp"
#include "larmor/ops/espirit.hpp"
#include "larmor/recon/calibration.hpp"
#include "larmor/recon/iterative.hpp"
#include "larmor/recon/noncartesian.hpp"
#include "larmor/traj/trajectory.hpp"
#include "larmor/util/error.hpp"

namespace larmor::recon {

namespace {
std::size_t bytesOf(index_t n) { return static_cast<std::size_t>(n) * sizeof(cfloat); }

std::string dimsText(const index_t* d, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

/// The grid of the calibration's FOV for an output matrix, and the centred crop back to it.
void calibrationGrid(const CalibrationRegion& r, const index_t out[3], index_t grid[3]) {
  for (int i = 0; i < 3; ++i)
    grid[i] = out[i] > 1 ? std::max<index_t>(out[i], static_cast<index_t>(std::lround(out[i] * r.fov[i]))) : 1;
}

CArray cropCentred(const CArray& in, const index_t grid[3], const index_t out[3], index_t coils) {
  if (grid[0] == out[0] && grid[1] == out[1] && grid[2] == out[2]) return in;
  CArray o(Shape{out[0], out[1], out[2], coils});
  index_t off[3];
  for (int i = 0; i < 3; ++i) off[i] = grid[i] / 2 - out[i] / 2;
  for (index_t c = 0; c < coils; ++c)
    for (index_t z = 0; z < out[2]; ++z)
      for (index_t y = 0; y < out[1]; ++y)
        std::copy_n(in.data() + off[0] + grid[0] * ((off[1] + y) + grid[1] * ((off[2] + z) + grid[2] * c)), out[0],
                    o.data() + out[0] * (y + out[1] * (z + out[2] * c)));
  return o;
}

/// Walsh-style maps from a Cartesian calibration box: Hann-tapered, zero-padded, inverse FFT, / root SoS.
CArray walshCartesian(Backend& be, const CalibrationRegion& r, const index_t grid[3], index_t coils) {
  CArray box = r.data;
  const index_t* e = r.box.extent;
  for (index_t c = 0; c < coils; ++c)
    for (index_t z = 0; z < e[2]; ++z)
      for (index_t y = 0; y < e[1]; ++y)
        for (index_t x = 0; x < e[0]; ++x) {
          double w = 1;
          const index_t p[3] = {x, y, z};
          for (int i = 0; i < 3; ++i)
            if (e[i] > 1) w *= std::pow(std::cos(M_PI * static_cast<double>(p[i] - e[i] / 2) / static_cast<double>(e[i] + 1)), 2);
          box[x + e[0] * (y + e[1] * (z + e[2] * c))] *= static_cast<float>(w);
        }
  const Shape gs{grid[0], grid[1], grid[2], coils};
  auto db = be.allocate(bytesOf(box.size()));
  be.upload(*db, box.data(), bytesOf(box.size()));
  auto dg = be.allocate(bytesOf(gs.size()));
  be.resizeCentred(*dg, gs, *db, box.shape());
  be.fft(*dg, gs, 3, FftDirection::Inverse);
  CArray low(gs);
  be.download(low.data(), *dg, bytesOf(gs.size()));
  const index_t n = grid[0] * grid[1] * grid[2];
  std::vector<double> sos(static_cast<std::size_t>(n), 0.0);
  double peak = 0;
  for (index_t v = 0; v < n; ++v) {
    for (index_t c = 0; c < coils; ++c) sos[v] += std::norm(cdouble(low[v + n * c]));
    sos[v] = std::sqrt(sos[v]);
    peak = std::max(peak, sos[v]);
  }
  require(peak > 0 && std::isfinite(peak), "coil maps: the calibration region holds no signal");
  const double eps2 = (1e-3 * peak) * (1e-3 * peak);
  for (index_t v = 0; v < n; ++v) {
    const double inv = 1.0 / std::sqrt(sos[v] * sos[v] + eps2);
    for (index_t c = 0; c < coils; ++c) low[v + n * c] = cfloat(cdouble(low[v + n * c]) * inv);
  }
  return low;
}

CArray fromFile(const std::string& path, index_t slice, index_t slices, const index_t out[3], index_t coils) {
  const CArray f = io::readCfl(path);
  const Shape& s = f.shape();
  index_t d[16];
  for (std::size_t i = 0; i < 16; ++i) d[i] = i < s.rank() ? s[i] : 1;
  index_t rest = 1;
  for (int i = 4; i < 16; ++i) rest *= d[i];
  const index_t want[5] = {out[0], out[1], out[2], coils, slices};
  const bool ok = d[0] == out[0] && d[1] == out[1] && d[2] == out[2] && d[3] == coils && (rest == 1 || rest == slices);
  require(ok, path + ": coil maps " + s.str() + " do not match the reconstruction's [x, y, z, coils(, slices)] " +
                  dimsText(want, slices > 1 ? 5 : 4));
  const index_t n = out[0] * out[1] * out[2] * coils;
  CArray m(Shape{out[0], out[1], out[2], coils});
  std::copy_n(f.data() + (rest == 1 ? 0 : slice * n), n, m.data());
  io::requireFinite(m, path);
  return m;
}
}  // namespace

CArray coilMapsForSlice(Backend& be, const Dataset& d, index_t slice, const index_t out[3], const ReconSettings& s,
                        nlohmann::json* info, const ops::PlanFactory* makePlan, const Progress& progress) {
  const IterativeSettings& it = s.iterative;
  const Header& h = d.header;
  const index_t coils = std::max<index_t>(1, h.coils), n = out[0] * out[1] * out[2];
  nlohmann::json local;
  nlohmann::json& j = info ? *info : local;
  switch (it.coilMaps) {
    case CoilMapSource::Dataset: {
      require(d.coilMaps.has_value(), d.source + ": coil maps 'dataset' asked for, but the dataset has none");
      require(d.coilMaps->size() == n * coils * h.slices,
              d.source + ": the dataset's coil maps " + d.coilMaps->shape().str() + " do not match the " +
                  std::to_string(out[0]) + "x" + std::to_string(out[1]) + "x" + std::to_string(out[2]) +
                  " reconstruction (--matrix)");
      CArray maps(Shape{out[0], out[1], out[2], coils});
      std::copy_n(d.coilMaps->data() + slice * n * coils, n * coils, maps.data());
      j["coil_maps"] = "dataset";
      return maps;
    }
    case CoilMapSource::File:
      j["coil_maps"] = it.coilMapsPath;
      return fromFile(it.coilMapsPath, slice, h.slices, out, coils);
    case CoilMapSource::Walsh:
    case CoilMapSource::Espirit: {
      const bool espirit = it.coilMaps == CoilMapSource::Espirit;
      if (espirit) {  // one path: computed on the backend (coilMapsForSliceOnBackend), downloaded here
        const auto maps = coilMapsForSliceOnBackend(be, d, slice, out, s, &j, makePlan, progress);
        CArray host(Shape{out[0], out[1], out[2], coils});
        be.download(host.data(), *maps, static_cast<std::size_t>(host.size()) * sizeof(cfloat));
        return host;
      }
      // Walsh: from the calibration box (Cartesian: the fully sampled centre up to --calibration-size;
      // non-Cartesian: the box fitted to the samples with |k_i| < --calibration-radius).
      const index_t size = h.trajectory == TrajectoryKind::Cartesian
                               ? it.calibrationSize
                               : std::max<index_t>(2, 2 * static_cast<index_t>(std::lround(it.calibrationRadius)));
      const CalibrationRegion r = calibrationRegion(be, d, slice, size, 1, s.nufft, progress);
      index_t grid[3];
      calibrationGrid(r, out, grid);
      j["calibration_region"] = r.box.str();
      j["coil_maps"] = "walsh";
      if (h.trajectory != TrajectoryKind::Cartesian) j["calibration_radius"] = it.calibrationRadius;
      return cropCentred(walshCartesian(be, r, grid, coils), grid, out, coils);
    }
  }
  throw Error("coil maps: unknown source");
}

namespace {
/// ESPIRiT's options for SENSE: BART's kernel and threshold, the settings' crop, the maps left on the backend.
ops::EspiritOptions senseEspiritOptions(const ReconSettings& s) {
  ops::EspiritOptions eo{6, 0.001, s.iterative.espiritCrop};
  eo.keepOnDevice = true;
  return eo;
}

/// ESPIRiT's maps on the calibration's grid brought to the output matrix (cropped there where the grid is larger,
/// e.g. a 2x oversampled readout), and their record.
std::unique_ptr<Buffer> espiritOnOutput(Backend& be, ops::EspiritResult& e, const index_t grid[3], const index_t out[3],
                                        index_t coils, const std::string& box, nlohmann::json& j) {
  j["calibration_region"] = box;
  j["coil_maps"] = "espirit";
  j["espirit_kernels"] = std::to_string(e.kernelsKept) + "/" + std::to_string(e.kernelsTotal);
  if (grid[0] == out[0] && grid[1] == out[1] && grid[2] == out[2]) return std::move(e.deviceMaps);
  auto cropped = be.allocate(static_cast<std::size_t>(out[0] * out[1] * out[2] * coils) * sizeof(cfloat));
  be.resizeCentred(*cropped, Shape{out[0], out[1], out[2], coils}, *e.deviceMaps, Shape{grid[0], grid[1], grid[2], coils});
  return cropped;
}
}  // namespace

std::unique_ptr<Buffer> coilMapsForSliceOnBackend(Backend& be, const Dataset& d, index_t slice, const index_t out[3],
                                                  const ReconSettings& s, nlohmann::json* info,
                                                  const ops::PlanFactory* makePlan, const Progress& progress,
                                                  std::shared_ptr<const CalibrationGridding>* gridding) {
  if (s.iterative.coilMaps == CoilMapSource::Espirit) {
    nlohmann::json local;
    const ops::EspiritOptions eo = senseEspiritOptions(s);
    const CalibrationRegion r =
        calibrationRegion(be, d, slice, s.iterative.calibrationSize, eo.kernel, s.nufft, progress, gridding);
    index_t grid[3];
    calibrationGrid(r, out, grid);
    ops::EspiritResult e = ops::espirit(be, r.data, grid, eo);
    return espiritOnOutput(be, e, grid, out, std::max<index_t>(1, d.header.coils), r.box.str(), info ? *info : local);
  }
  const CArray maps = coilMapsForSlice(be, d, slice, out, s, info, makePlan, progress);
  auto b = be.allocate(static_cast<std::size_t>(maps.size()) * sizeof(cfloat));
  be.upload(*b, maps.data(), static_cast<std::size_t>(maps.size()) * sizeof(cfloat));
  return b;
}

std::vector<std::unique_ptr<Buffer>> espiritMapsForSlices(Backend& be, const Dataset& d, const std::vector<index_t>& slices,
                                                          const index_t out[3], const ReconSettings& s,
                                                          std::vector<nlohmann::json>* infos,
                                                          std::shared_ptr<const CalibrationGridding>* gridding,
                                                          const Progress& progress) {
  require(s.iterative.coilMaps == CoilMapSource::Espirit, "coil maps: batched slices are ESPIRiT's");
  const index_t coils = std::max<index_t>(1, d.header.coils);
  const ops::EspiritOptions eo = senseEspiritOptions(s);
  std::shared_ptr<const CalibrationGridding> local;
  // Where a group's time goes (each slice's record: "espirit_group_ms"), the device's queue drained at each step.
  auto clock = std::chrono::steady_clock::now();
  const auto lap = [&] {
    be.synchronize();
    const auto now = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - clock).count();
    clock = now;
    return ms;
  };
  std::vector<CArray> cals;
  std::vector<std::string> boxes;
  std::vector<std::array<index_t, 3>> grids;
  for (std::size_t i = 0; i < slices.size(); ++i) {
    progress.report(static_cast<double>(i) / static_cast<double>(slices.size()), "calibration");
    CalibrationRegion r = calibrationRegion(be, d, slices[i], s.iterative.calibrationSize, eo.kernel, s.nufft, progress,
                                            gridding ? gridding : &local);
    grids.emplace_back();
    calibrationGrid(r, out, grids.back().data());
    boxes.push_back(r.box.str());
    cals.push_back(std::move(r.data));
  }
  const double calibrationMs = lap();
  // The slices of each calibration grid together (regions of different FOVs make other grids): ESPIRiT's
  // eigen-solves batched, each slice's result its own whatever shares its batch (ops::espiritBatch).
  std::vector<ops::EspiritResult> e(slices.size());
  std::vector<bool> done(slices.size(), false);
  for (std::size_t i0 = 0; i0 < slices.size(); ++i0) {
    if (done[i0]) continue;
    std::vector<std::size_t> members;
    std::vector<CArray> same;
    for (std::size_t i = i0; i < slices.size(); ++i)
      if (!done[i] && grids[i] == grids[i0]) {
        members.push_back(i);
        same.push_back(std::move(cals[i]));
        done[i] = true;
      }
    auto results = ops::espiritBatch(be, same, grids[i0].data(), eo);
    for (std::size_t m = 0; m < members.size(); ++m) e[members[m]] = std::move(results[m]);
  }
  const double espiritMs = lap();
  std::vector<std::unique_ptr<Buffer>> maps;
  for (std::size_t i = 0; i < slices.size(); ++i) {
    nlohmann::json j;
    maps.push_back(espiritOnOutput(be, e[i], grids[i].data(), out, coils, boxes[i], j));
    e[i].deviceMaps.reset();  // the calibration grid's maps, once brought to the output
    j["espirit_group"] = slices.size();
    j["espirit_eigen_batch"] = e[i].eigenBatch;
    if (infos) infos->push_back(std::move(j));
  }
  const double outputMs = lap();
  if (infos)
    for (nlohmann::json& j : *infos)
      j["espirit_group_ms"] = {{"calibration", calibrationMs}, {"espirit", espiritMs}, {"to_output", outputMs}};
  return maps;
}

CArray coilMaps(Backend& be, const Dataset& d, const index_t out[3], const ReconSettings& s, nlohmann::json* info) {
  const index_t coils = std::max<index_t>(1, d.header.coils), slices = std::max<index_t>(1, d.header.slices);
  const index_t n = out[0] * out[1] * out[2] * coils;
  CArray all(Shape{out[0], out[1], out[2], coils, slices});
  for (index_t sl = 0; sl < slices; ++sl) {
    const CArray m = coilMapsForSlice(be, d, sl, out, s, info);
    std::copy_n(m.data(), n, all.data() + sl * n);
  }
  return all;
}

}  // namespace larmor::recon
