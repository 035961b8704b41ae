#include "larmor/io/dataset_io.hpp"
#include "larmor/io/dataset_arrays.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <complex>
#include <cstdio>
#include <limits>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <system_error>

#include "larmor/io/cfl.hpp"
#include "larmor/io/rawarray.hpp"
#include "larmor/io/twix.hpp"
#include "sampling_facts.hpp"
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
  // The fully sampled block around the centre, grown one ring at a time: each side moves out while the new
  // line across the block's other range is sampled in full. (A cross from the centre reaches past the block
  // wherever the centre lines run on, as in Poisson-disc masks, and then finds no full block at all.)
  index_t lo1 = c1, hi1 = c1, lo2 = c2, hi2 = c2;
  const auto row = [&](index_t p1) {  // line p1 along pe2 over [lo2, hi2]
    for (index_t p2 = lo2; p2 <= hi2; ++p2)
      if (!d.sampled(p1, p2, 0)) return false;
    return true;
  };
  const auto column = [&](index_t p2) {  // line p2 along pe1 over [lo1, hi1]
    for (index_t p1 = lo1; p1 <= hi1; ++p1)
      if (!d.sampled(p1, p2, 0)) return false;
    return true;
  };
  for (bool grew = true; grew;) {
    grew = false;
    if (lo1 > 0 && row(lo1 - 1)) --lo1, grew = true;
    if (hi1 + 1 < n1 && row(hi1 + 1)) ++hi1, grew = true;
    if (lo2 > 0 && column(lo2 - 1)) --lo2, grew = true;
    if (hi2 + 1 < n2 && column(hi2 + 1)) ++hi2, grew = true;
  }
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

// The shape of an array file without reading its samples.
Shape arrayFileShape(const std::string& path) {
  if (!isRawArrayPath(path)) return readCflShape(path);
  std::vector<index_t> dims;
  for (auto d : readRawArrayHeader(path).dims) dims.push_back(static_cast<index_t>(d));
  return Shape(dims);
}

// A trajectory file beside BART k-space `path` whose shape is [3, n, p] ("" when none): <base>_traj, <base>_t, traj
// or t, as .cfl/.hdr or .ra, or any *_t.cfl there.
std::string trajectoryBeside(const std::string& path, index_t n, index_t p) {
  const bool ra = isRawArrayPath(path);
  const fs::path base = ra ? fs::path(path).replace_extension("") : fs::path(cflBasePath(path));
  const fs::path dir = base.has_parent_path() ? base.parent_path() : fs::path(".");
  std::vector<fs::path> candidates = {base.string() + "_traj", base.string() + "_t", dir / "traj", dir / "t"};
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > 6 && name.compare(name.size() - 6, 6, "_t.hdr") == 0)
      candidates.push_back(it->path().parent_path() / name.substr(0, name.size() - 4));
  }
  for (const fs::path& c : candidates) {
    const std::string file = c.string() + (ra ? ".ra" : ".hdr");
    if (file == path || !fs::exists(file, ec) || fs::equivalent(file, path, ec)) continue;
    try {
      const Shape t = arrayFileShape(ra ? file : c.string());
      if (t[0] == 3 && t[1] == n && t[2] == p) return ra ? file : c.string() + ".cfl";
    } catch (const Error&) {
      // not a readable array: not a trajectory
    }
  }
  return "";
}

// BART's own non-Cartesian layout [1, n, p, coils]: a readout of one point whose (n, p) plane has no
// unsampled point and whose profiles (along p) all carry similar energy, because every profile passes
// through k = 0. A Cartesian ky-kz plane [1, ny, nz] (after a readout IFFT) has its energy at the centre
// of both axes, and undersampled ones have empty points.
bool looksNonCartesian(const CArray& k) {
  const Shape& s = k.shape();
  if (s[0] != 1 || s[1] < 8 || s[2] < 2) return false;
  const index_t n = s[1], p = s[2], rest = k.size() / (n * p);
  std::vector<double> energy(static_cast<std::size_t>(p), 0.0);
  for (index_t j = 0; j < p; ++j)
    for (index_t i = 0; i < n; ++i) {
      double e = 0;
      for (index_t r = 0; r < rest; ++r) e += std::norm(k[i + n * (j + p * r)]);
      if (e == 0) return false;  // an unsampled point: Cartesian undersampling
      energy[static_cast<std::size_t>(j)] += e;
    }
  const auto [lo, hi] = std::minmax_element(energy.begin(), energy.end());
  return *hi > 0 && *lo > 0.05 * *hi;
}

// One frame of BART k-space: k [d0, d1, d2, coils, slices] (`s` its file shape) with the options.
Dataset bartFrame(const std::string& name, CArray k, const Shape& s, const LoadOptions& options, const RArray* traj,
                  const std::string& trajName) {
  Dataset d;
  d.source = name;
  Header& h = d.header;
  h.coils = s[kBartCoilDim];
  h.slices = s[kBartSliceDim];
  h.geometry.slicePositions.assign(static_cast<std::size_t>(h.slices), 0.f);
  for (index_t i = 0; i < h.slices; ++i)
    h.geometry.slicePositions[static_cast<std::size_t>(i)] =
        (static_cast<float>(i) - 0.5f * static_cast<float>(h.slices - 1)) * h.reconFovMm[2];

  if (!traj) {
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
    detail::setPartialFourierFromData(d);
  } else {
    d.trajectory = *traj;
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

// A BART trajectory: [3, readout, profiles] for every frame, or one per time point along TIME (dimension 10, as
// BART lays out a dynamic acquisition whose frames have spokes of their own, e.g. continuous golden angle;
// `larmor-cli simulate --frames N --traj-output`), which must match the k-space's `times`.
std::vector<RArray> bartTrajectories(const std::string& path, const std::string& name, const long matrix[3],
                                     index_t times, std::vector<std::string>& warnings) {
  const CArray t = readArrayFile(path);
  const Shape s = t.shape();
  const index_t frames = s[kBartTimeDim];
  if (frames == 1) return {detail::checkedTrajectory(t, name, matrix, warnings)};
  for (std::size_t dim = 3; dim < s.rank(); ++dim)
    if (dim != kBartTimeDim && s[dim] != 1)
      throw Error(name + ": trajectory " + s.str() + " must be [3, readout, spokes] (TIME in dimension 10)");
  if (frames != times)
    throw Error(name + ": trajectory " + s.str() + " has " + std::to_string(frames) +
                " time points (TIME dim 10) but the k-space has " + std::to_string(times));
  std::vector<RArray> out;
  const index_t block = s[0] * s[1] * s[2];
  for (index_t f = 0; f < frames; ++f) {
    CArray one(Shape{s[0], s[1], s[2]});
    std::copy_n(t.data() + f * block, block, one.data());
    std::vector<std::string> w;
    out.push_back(detail::checkedTrajectory(one, name + " (time " + std::to_string(f) + ")", matrix, w));
    for (auto& x : w)
      if (std::find(warnings.begin(), warnings.end(), x) == warnings.end()) warnings.push_back(std::move(x));
  }
  return out;
}

// BART's k-space layout, from a .cfl or a .ra file: [readout, pe1, pe2, coils, ..., TE 5, ..., TIME 10,
// ..., slices 13]; every (TE, TIME) pair is a frame (contrast, repetition).
Series loadBartSeries(const std::string& path, const LoadOptions& options) {
  const std::string name = arrayFileName(path);
  CArray k = readArrayFile(path);
  const Shape s = k.shape();
  for (std::size_t dim = 4; dim < std::max<std::size_t>(s.rank(), kBartDims); ++dim)
    if (dim != kBartSliceDim && dim != kBartTeDim && dim != kBartTimeDim && s[dim] != 1)
      throw Error(name + ": k-space " + s.str() + " uses BART dimension " + std::to_string(dim) +
                  "; Larmor reads [readout, pe1, pe2, coils] with TE in dimension 5, TIME in 10 and slices in 13");
  std::vector<RArray> traj;  // one for every frame, or one per time point
  std::string trajName;
  std::vector<std::string> trajWarnings;
  if (!options.trajectoryPath.empty()) {
    trajName = arrayFileName(options.trajectoryPath);
    traj = bartTrajectories(options.trajectoryPath, trajName, options.matrix, s[kBartTimeDim], trajWarnings);
  } else if (s[0] == 1 && s[1] > 1) {
    // Radial k-space read without its trajectory would be a 1 x N x P "Cartesian" volume: find it or refuse.
    const std::string beside = trajectoryBeside(path, s[1], s[2]);
    if (!beside.empty())
      throw Error(name + ": k-space " + s.str() + " is non-Cartesian (BART layout [1, readout, profiles, coils]) and " +
                  beside + " beside it fits it as a trajectory; pass --traj " + beside);
    if (looksNonCartesian(k))
      throw Error(name + ": k-space " + s.str() + " looks non-Cartesian (readout dimension 1, every profile through "
                  "k = 0) and no trajectory was given; pass --traj TRAJ.cfl ([3, " + std::to_string(s[1]) + ", " +
                  std::to_string(s[2]) + "], cycles per FOV)");
  } else if (s[0] > 1 && s[1] > 1 && s[2] == 1) {
    // Larmor's non-Cartesian layout [readout, profiles, 1, coils] (simulate's .cfl) reads as a Cartesian plane; a
    // trajectory of exactly its readout and profiles beside it says it is not one.
    const std::string beside = trajectoryBeside(path, s[0], s[1]);
    if (!beside.empty())
      throw Error(name + ": " + beside + " beside k-space " + s.str() + " is a trajectory of its " + std::to_string(s[1]) +
                  " profiles of " + std::to_string(s[0]) + " samples: pass --traj " + beside +
                  " (or move it away to read the k-space as Cartesian)");
  }
  const index_t echoes = s[kBartTeDim], times = s[kBartTimeDim];
  const index_t block = s[0] * s[1] * s[2] * s[3];  // one coil set of one slice
  const FrameSelection sel = options.selection();
  if ((sel.phase > 0) || (sel.set > 0) || sel.contrast >= echoes || sel.repetition >= times)
    throw Error(name + ": has no frame " + sel.str() + " (it holds " + std::to_string(echoes) + " contrasts (TE dim 5) x " +
                std::to_string(times) + " repetitions (TIME dim 10))");
  Series series;
  series.contrasts.clear(), series.repetitions.clear();
  for (index_t e = 0; e < echoes; ++e) series.contrasts.push_back(static_cast<int>(e));
  for (index_t t = 0; t < times; ++t) series.repetitions.push_back(static_cast<int>(t));
  const Shape frameShape{s[0], s[1], s[2], s[3], 1, 1, 1, 1, 1, 1, 1, 1, 1, s[kBartSliceDim]};
  for (index_t t = 0; t < times; ++t)
    for (index_t e = 0; e < echoes; ++e) {
      const FrameKey key{static_cast<int>(e), 0, static_cast<int>(t), 0};
      if (!sel.keeps(key)) continue;
      CArray f;
      if (echoes * times == 1) {
        // One frame is the file's array itself: no second copy (the loader's peak is the file's size).
        f = std::move(k);
        f.reshape(Shape{s[0], s[1], s[2], s[3], s[kBartSliceDim]});
      } else {
        f = CArray(Shape{s[0], s[1], s[2], s[3], s[kBartSliceDim]});
        // Element (.., e at dim 5, t at dim 10, sl at dim 13): strides of BART's column-major layout.
        const index_t strideTe = block * s[4], strideTime = strideTe * echoes * s[6] * s[7] * s[8] * s[9];
        const index_t strideSlice = strideTime * times * s[11] * s[12];
        for (index_t sl = 0; sl < s[kBartSliceDim]; ++sl)
          std::copy_n(k.data() + e * strideTe + t * strideTime + sl * strideSlice, block, f.data() + sl * block);
      }
      const RArray* frameTraj = traj.empty() ? nullptr : &traj[traj.size() == 1 ? 0 : static_cast<std::size_t>(t)];
      series.frames.push_back(bartFrame(name, std::move(f), frameShape, options, frameTraj, trajName));
      for (const auto& w : trajWarnings) series.frames.back().warnings.push_back(w);
      series.keys.push_back(key);
      series.echoTimeMs.push_back(unknownTime());
      series.triggerTimeMs.push_back(unknownTime());
    }
  // FrameKey order: repetition fastest within a contrast.
  std::vector<std::size_t> order(series.keys.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return series.keys[a] < series.keys[b]; });
  Series sorted = series;
  for (std::size_t i = 0; i < order.size(); ++i) {
    sorted.frames[i] = std::move(series.frames[order[i]]);
    sorted.keys[i] = series.keys[order[i]];
  }
  return sorted;
}

// Siemens twix: Cartesian, or non-Cartesian with a trajectory file or a radial keyword (twix.hpp); one
// read per frame (Eco, Phs, Rep, Set).
Series loadTwixSeries(const std::string& path, const LoadOptions& options) {
  TwixOptions to;
  for (int i = 0; i < 3; ++i) to.matrix[i] = options.matrix[i];
  to.allowCutShort = options.structureOnly;  // `info` describes a cut-short measurement (with a warning)
  RArray traj;
  std::vector<std::string> trajWarnings;
  const double arc = radialTrajectoryKeyword(options.trajectoryPath);
  if (!options.trajectoryPath.empty() && arc == 0) {
    to.trajectoryName = arrayFileName(options.trajectoryPath);
    traj = detail::checkedTrajectory(readArrayFile(options.trajectoryPath), to.trajectoryName, options.matrix,
                                     trajWarnings);
    to.trajectory = &traj;
  } else if (arc > 0) {
    to.trajectoryName = options.trajectoryPath;  // the reader computes it once it knows the readouts
  }
  const std::vector<FrameKey> keys = twixFrames(path);
  Series series;
  std::set<int> c, p, r, st;
  for (const FrameKey& k : keys) c.insert(k.contrast), p.insert(k.phase), r.insert(k.repetition), st.insert(k.set);
  if (!keys.empty()) {
    series.contrasts.assign(c.begin(), c.end()), series.phases.assign(p.begin(), p.end());
    series.repetitions.assign(r.begin(), r.end()), series.sets.assign(st.begin(), st.end());
  }
  const FrameSelection sel = options.selection();
  for (const FrameKey& k : keys) {
    if (!sel.keeps(k)) continue;
    to.frame = &k;
    TwixRead r = readTwix(path, to);
    series.frames.push_back(std::move(r.dataset));
    for (const auto& w : trajWarnings) series.frames.back().warnings.push_back(w);
    series.keys.push_back(k);
    series.echoTimeMs.push_back(twixEchoTimeMs(path, k.contrast));
    series.triggerTimeMs.push_back(r.triggerTimeMs);
  }
  if (series.frames.empty()) {
    if (keys.empty()) (void)readTwix(path, to);  // its error: no imaging readouts
    throw Error(path + ": no imaging readouts of " + sel.str() + " (the file holds " + series.describeDims() + ")");
  }
  return series;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// Samples far outside the data's own distribution (one sample of 1e30 among values near 1 gave image
// values of 1e28 to 1e36, exit 0). Refused where float overflow follows: the energy sum |s|^2 (summed in
// double) beyond float's range, which every norm and dot product of the reconstruction (float) would
// reach. Warned: a largest magnitude beyond kOutlierFactor times the 99th percentile of the non-zero
// magnitudes (over up to 2^20 samples).
constexpr double kOutlierFactor = 1e6;

void checkSampleMagnitudes(Dataset& d) {
  const CArray& k = d.kspace;
  const index_t n = k.size();
  if (n == 0) return;
  double energy = 0, largest = 0;
#pragma omp parallel for reduction(+ : energy) reduction(max : largest) schedule(static)
  for (index_t i = 0; i < n; ++i) {
    const double m2 = std::norm(std::complex<double>(k[i]));
    energy += m2;
    largest = std::max(largest, m2);
  }
  const auto at = [&] {
    for (index_t i = 0; i < n; ++i)
      if (std::norm(std::complex<double>(k[i])) == largest) return i;
    return index_t{0};
  };
  if (energy > static_cast<double>(std::numeric_limits<float>::max()))
    throw Error(d.source + ": k-space sample " + std::to_string(at()) + " has magnitude " + number(std::sqrt(largest)) +
                "; the samples' energy " + number(energy) + " exceeds the float range (3.4e38), so the reconstruction "
                "would overflow: corrupt samples");
  const index_t stride = std::max<index_t>(1, n >> 20);
  std::vector<float> m;
  for (index_t i = 0; i < n; i += stride)
    if (k[i] != cfloat(0.f, 0.f)) m.push_back(std::abs(k[i]));
  if (m.size() < 100) return;
  const auto q = m.begin() + static_cast<std::ptrdiff_t>(0.99 * static_cast<double>(m.size() - 1));
  std::nth_element(m.begin(), q, m.end());
  if (std::sqrt(largest) > kOutlierFactor * *q)
    d.warnings.push_back(d.source + ": k-space sample " + std::to_string(at()) + " has magnitude " +
                         number(std::sqrt(largest)) + ", more than " + number(kOutlierFactor) +
                         " times the 99th percentile of the samples (" + number(*q) + "): a corrupt sample?");
}

}  // namespace

bool ismrmrdSupported() {
#ifdef LARMOR_HAVE_IO
  return true;
#else
  return false;
#endif
}

namespace {

Series loadSeriesOf(const std::string& path, const LoadOptions& options, const Progress& progress) {
  const std::string ext = lowerExtension(path);
  if (ext == ".h5" || ext == ".mrd" || ext == ".ismrmrd" || ext == ".hdf5") {
    // An ISMRMRD file carries its own trajectory and matrix (so --traj and a z size given for it are refused, not ignored).
    if (!options.trajectoryPath.empty())
      throw Error("--traj " + options.trajectoryPath + ": " + path +
                  " is ISMRMRD, which carries its own trajectory; --traj is for BART .cfl/.ra k-space");
#ifdef LARMOR_HAVE_IO
    return readIsmrmrdSeries(path, "dataset", progress, options.selection(), options.beforeData,
                             options.structureOnly);
#else
    (void)progress;
    throw Error(path + ": this build has no ISMRMRD support (LARMOR_IO=OFF)");
#endif
  }
  if (ext == ".dat") return loadTwixSeries(path, options);
  std::error_code ec;
  if (ext == ".cfl" || ext == ".hdr" || (ext.empty() && fs::exists(path + ".hdr", ec)) || ext == ".ra")
    return loadBartSeries(path, options);
  throw Error(path + ": unknown file type '" + ext +
              "' (supported: ISMRMRD .h5/.mrd/.ismrmrd, BART .cfl/.hdr, RawArray .ra, Siemens twix .dat)");
}

}  // namespace

Series loadSeries(const std::string& path, const LoadOptions& options, const Progress& progress) {
  Series series = loadSeriesOf(path, options, progress);
  for (Dataset& d : series.frames) checkSampleMagnitudes(d);
  return series;
}

Dataset loadDataset(const std::string& path, const LoadOptions& options, const Progress& progress) {
  return singleFrame(loadSeries(path, options, progress), path);
}

Dataset datasetFromArrays(const std::string& name, CArray kspace, const CArray* trajectory, const LoadOptions& options) {
  const Shape s = kspace.shape();
  require(s.rank() <= 5, name + ": k-space " + s.str() + " must be [readout, pe1, pe2, coils, slices]");
  std::vector<std::string> warnings;
  std::optional<RArray> traj;
  if (trajectory) traj = detail::checkedTrajectory(*trajectory, name + " trajectory", options.matrix, warnings);
  else if (s[0] == 1 && s[1] > 1 && looksNonCartesian(kspace))
    throw Error(name + ": k-space " + s.str() + " looks non-Cartesian (readout dimension 1, every profile through "
                "k = 0) and no trajectory was given");
  const Shape frameShape{s[0], s[1], s[2], s[3], 1, 1, 1, 1, 1, 1, 1, 1, 1, s[4]};
  Dataset d = bartFrame(name, std::move(kspace), frameShape, options, traj ? &*traj : nullptr, name + " trajectory");
  for (auto& w : warnings) d.warnings.push_back(std::move(w));
  checkSampleMagnitudes(d);
  return d;
}

}  // namespace larmor::io
