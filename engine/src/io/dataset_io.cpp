#include "larmor/io/dataset_io.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <system_error>

#include "larmor/io/cfl.hpp"
#include "larmor/io/rawarray.hpp"
#include "larmor/io/twix.hpp"
#include "trajectory_input.hpp"
#ifdef LARMOR_HAVE_IO
#include "larmor/io/ismrmrd.hpp"
#endif

namespace fs = std::filesystem;

namespace larmor::io {

namespace {

std::string lowerExtension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

// The contiguous block of fully sampled lines around the k-space centre (pe1 along the centre pe2 row,
// pe2 along the centre pe1 column), when the data are undersampled: BART files carry no ACS flags,
// and this is the region an autocalibrating method (GRAPPA, ESPIRiT) would calibrate from.
void detectCalibration(Dataset& d) {
  const index_t n1 = d.sampled.shape()[0], n2 = d.sampled.shape()[1];
  const index_t c1 = n1 / 2, c2 = n2 / 2;
  bool all = true;
  for (index_t i = 0; i < n1 * n2; ++i) all = all && d.sampled[i];  // slice 0 decides
  if (all || !d.sampled(c1, c2, 0)) return;
  index_t lo1 = c1, hi1 = c1, lo2 = c2, hi2 = c2;
  while (lo1 > 0 && d.sampled(lo1 - 1, c2, 0)) --lo1;
  while (hi1 + 1 < n1 && d.sampled(hi1 + 1, c2, 0)) ++hi1;
  while (lo2 > 0 && d.sampled(c1, lo2 - 1, 0)) --lo2;
  while (hi2 + 1 < n2 && d.sampled(c1, hi2 + 1, 0)) ++hi2;
  for (index_t p2 = lo2; p2 <= hi2; ++p2)
    for (index_t p1 = lo1; p1 <= hi1; ++p1)
      if (!d.sampled(p1, p2, 0)) return;  // not a full block: leave calibration to the method
  if (hi1 - lo1 + 1 < 2) return;
  for (index_t s = 0; s < d.header.slices; ++s)
    for (index_t p2 = lo2; p2 <= hi2; ++p2)
      for (index_t p1 = lo1; p1 <= hi1; ++p1)
        if (d.sampled(p1, p2, s)) d.calibration(p1, p2, s) = 1;
  d.header.calibrationLines = static_cast<int>(hi1 - lo1 + 1);

  // Acceleration: the most common gap between sampled lines outside the calibration block.
  auto commonGap = [&](bool alongPe1) {
    std::map<index_t, index_t> gaps;
    const index_t n = alongPe1 ? n1 : n2;
    index_t prev = -1;
    bool prevInside = false;
    for (index_t i = 0; i < n; ++i) {
      const bool s = alongPe1 ? d.sampled(i, c2, 0) : d.sampled(c1, i, 0);
      const bool inside = alongPe1 ? (i >= lo1 && i <= hi1) : (i >= lo2 && i <= hi2);
      if (!s) continue;
      if (prev >= 0 && !(inside && prevInside)) ++gaps[i - prev];
      prev = i;
      prevInside = inside;
    }
    index_t best = 1, bestCount = 0;
    for (auto [gap, count] : gaps)
      if (count > bestCount) best = gap, bestCount = count;
    return static_cast<int>(best);
  };
  d.header.accelerationPe1 = commonGap(true);
  if (n2 > 1) d.header.accelerationPe2 = commonGap(false);
}

bool isRawArrayPath(const std::string& path) { return lowerExtension(path) == ".ra"; }

// The file a k-space or trajectory array is read from, for messages.
std::string arrayFileName(const std::string& path) {
  return isRawArrayPath(path) ? path : cflBasePath(path) + ".cfl";
}

CArray readArrayFile(const std::string& path) { return isRawArrayPath(path) ? readRawArray(path) : readCfl(path); }

// BART's k-space layout, from a .cfl or a .ra file: [readout, pe1, pe2, coils, ..., slices at 13].
Dataset loadBartLayout(const std::string& path, const LoadOptions& options) {
  const std::string name = arrayFileName(path);
  CArray k = readArrayFile(path);
  const Shape s = k.shape();
  for (std::size_t dim = 4; dim < std::max<std::size_t>(s.rank(), kBartDims); ++dim)
    if (dim != kBartSliceDim && s[dim] != 1)
      throw Error(name + ": k-space " + s.str() + " uses BART dimension " + std::to_string(dim) +
                  "; Larmor reads [readout, pe1, pe2, coils] with slices in dimension 13");

  Dataset d;
  d.source = name;
  Header& h = d.header;
  h.coils = s[kBartCoilDim];
  h.slices = s[kBartSliceDim];
  h.geometry.slicePositions.assign(static_cast<std::size_t>(h.slices), 0.f);
  for (index_t i = 0; i < h.slices; ++i)
    h.geometry.slicePositions[static_cast<std::size_t>(i)] =
        (static_cast<float>(i) - 0.5f * static_cast<float>(h.slices - 1)) * h.reconFovMm[2];

  if (options.trajectoryPath.empty()) {
    h.trajectory = TrajectoryKind::Cartesian;
    for (int i = 0; i < 3; ++i) {
      h.encoded[i] = s[static_cast<std::size_t>(i)];
      h.recon[i] = options.matrix[i] > 0 ? options.matrix[i] : h.encoded[i];
    }
    k.reshape(Shape{s[0], s[1], s[2], h.coils, h.slices});
    d.kspace = std::move(k);
    const index_t n0 = s[0], n1 = s[1], n2 = s[2];
    d.sampled = Array<std::uint8_t>(Shape{n1, n2, h.slices}, 0);
    d.calibration = Array<std::uint8_t>(Shape{n1, n2, h.slices}, 0);
    for (index_t sl = 0; sl < h.slices; ++sl)
      for (index_t c = 0; c < h.coils; ++c)
        for (index_t line = 0; line < n1 * n2; ++line) {
          std::uint8_t& m = d.sampled[line + n1 * n2 * sl];
          if (m) continue;
          const cfloat* p = d.kspace.data() + n0 * (line + n1 * n2 * (c + h.coils * sl));
          for (index_t r = 0; r < n0 && !m; ++r) m = p[r] != cfloat(0.f, 0.f);
        }
    detectCalibration(d);
  } else {
    const std::string trajName = arrayFileName(options.trajectoryPath);
    d.trajectory = detail::checkedTrajectory(readArrayFile(options.trajectoryPath), trajName);
    const Shape ts = d.trajectory.shape();
    const index_t n = ts[1], profiles = ts[2];
    // BART stores non-Cartesian k-space as [1, readout, spokes, coils]; [readout, spokes, 1, coils] is
    // accepted too. Both have the same memory layout.
    const bool bartLayout = s[0] == 1 && s[1] == n && s[2] == profiles;
    const bool larmorLayout = s[0] == n && s[1] == profiles && s[2] == 1;
    if (!bartLayout && !larmorLayout)
      throw Error(name + ": k-space " + s.str() + " does not match the trajectory " + trajName + " " + ts.str() +
                  " (expected [1, " + std::to_string(n) + ", " + std::to_string(profiles) + ", coils])");
    detail::applyTrajectoryHeader(h, d.trajectory, options.matrix);
    k.reshape(Shape{n, profiles, 1, h.coils, h.slices});
    d.kspace = std::move(k);
  }
  d.validate();
  return d;
}

// Siemens twix: Cartesian, or non-Cartesian with a trajectory file or a radial keyword (twix.hpp).
Dataset loadTwix(const std::string& path, const LoadOptions& options) {
  TwixOptions to;
  to.repetition = options.repetition;
  for (int i = 0; i < 3; ++i) to.matrix[i] = options.matrix[i];
  RArray traj;
  const double arc = radialTrajectoryKeyword(options.trajectoryPath);
  if (!options.trajectoryPath.empty() && arc == 0) {
    to.trajectoryName = arrayFileName(options.trajectoryPath);
    traj = detail::checkedTrajectory(readArrayFile(options.trajectoryPath), to.trajectoryName);
    to.trajectory = &traj;
  } else if (arc > 0) {
    to.trajectoryName = options.trajectoryPath;  // the reader computes it once it knows the readouts
  }
  return readTwix(path, to).dataset;
}

}  // namespace

bool ismrmrdSupported() {
#ifdef LARMOR_HAVE_IO
  return true;
#else
  return false;
#endif
}

Dataset loadDataset(const std::string& path, const LoadOptions& options, const Progress& progress) {
  const std::string ext = lowerExtension(path);
  if (ext == ".h5" || ext == ".mrd" || ext == ".ismrmrd" || ext == ".hdf5") {
    // An ISMRMRD file carries its own trajectory and matrix (issue 15, item 4: these were ignored).
    if (!options.trajectoryPath.empty())
      throw Error("--traj " + options.trajectoryPath + ": " + path +
                  " is ISMRMRD, which carries its own trajectory; --traj is for BART .cfl/.ra k-space");
#ifdef LARMOR_HAVE_IO
    return readIsmrmrd(path, "dataset", progress, options.repetition, options.beforeData);
#else
    (void)progress;
    throw Error(path + ": this build has no ISMRMRD support (LARMOR_IO=OFF)");
#endif
  }
  if (ext == ".dat") return loadTwix(path, options);
  std::error_code ec;
  if (ext == ".cfl" || ext == ".hdr" || (ext.empty() && fs::exists(path + ".hdr", ec)) || ext == ".ra")
    return loadBartLayout(path, options);
  throw Error(path + ": unknown file type '" + ext +
              "' (supported: ISMRMRD .h5/.mrd/.ismrmrd, BART .cfl/.hdr, RawArray .ra, Siemens twix .dat)");
}

}  // namespace larmor::io
