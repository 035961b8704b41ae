// The dynamic phantom (dynamic.hpp): per frame the moved, beating and enhancing ellipses, their analytic
// multi-coil k-space at the frame's samples (multiCoilKspace, the static simulator's scaling: non-Cartesian
// F(k) sqrt(N0 N1), Cartesian F(k) sqrt(e0 m1) / l0), the frame's reference and the shared coil maps.
#include "larmor/phantom/dynamic.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "larmor/phantom/coils.hpp"
#include "larmor/traj/cartesian.hpp"
#include "larmor/traj/radial.hpp"
#include "simulate_parts.hpp"

namespace larmor::phantom {

namespace {

constexpr double kTwoPi = 2 * std::numbers::pi;

void validateSeries(const SimulateSettings& s, const DynamicModel& m) {
  validateSettings(s);
  require(s.matrix[2] == 1 && s.slices == 1,
          "simulate: frames need a 2D single-slice simulation (matrix z = 1, slices = 1)");
  require(s.trajectory == TrajectoryKind::Cartesian || s.trajectory == TrajectoryKind::Radial ||
              s.trajectory == TrajectoryKind::GoldenAngle,
          "simulate: frames support cartesian, radial and golden, not " + toString(s.trajectory));
  const bool finite = std::isfinite(m.beatAmplitude) && std::isfinite(m.breathShiftPixels) &&
                      std::isfinite(m.washInDelay) && std::isfinite(m.washInPeak);
  require(finite && m.beatPeriod > 0 && m.breathPeriod > 0 && m.washInTau > 0 && std::fabs(m.beatAmplitude) < 1,
          "simulate: the dynamic model needs positive periods and tau, |beat amplitude| < 1 and finite values");
}

/// Frame f's noise seed (frames draw independent noise).
std::uint64_t frameSeed(const SimulateSettings& s, index_t frame) {
  return deriveSeed(s.seed, 0x46524d00ull + static_cast<std::uint64_t>(frame));
}

/// The frame's rasterised object [m0, m1, 1, 1, 1] and the shared coil maps [m0, m1, 1, coils, 1].
void attachFrameTruth(Dataset& d, const SimulateSettings& s, const Phantom& ph, const CArray& maps) {
  const CArray img = ph.rasterize(Shape{s.matrix[0], s.matrix[1]});
  CArray reference(Shape{s.matrix[0], s.matrix[1], 1, 1, 1});
  std::copy(img.data(), img.data() + img.size(), reference.data());
  d.reference = std::move(reference);
  d.coilMaps = maps;
}

/// The profiles of frame f (0-based) in the sequence of frames x K spokes: golden consecutive, radial
/// interleaved (dynamic.hpp).
index_t sequenceProfile(TrajectoryKind kind, index_t frame, index_t p, index_t frames, index_t k) {
  return kind == TrajectoryKind::GoldenAngle ? frame * k + p : frame + frames * p;
}

Dataset nonCartesianFrame(const SimulateSettings& s, const RArray& sequence, index_t frame, const Phantom& ph,
                          const CoilModel& model, const CArray& maps) {
  const index_t frames = s.frames, k = resolvedSpokesPerFrame(s), readout = sequence.shape()[1];
  const int coils = s.coils;
  Dataset d;
  d.source = "simulated";
  d.header = detail::nonCartesianHeader(s, s.trajectory);
  d.header.protocolName += " dynamic";
  d.trajectory = RArray(Shape{3, readout, k});
  for (index_t p = 0; p < k; ++p) {
    const float* src = sequence.data() + 3 * readout * sequenceProfile(s.trajectory, frame, p, frames, k);
    std::copy(src, src + 3 * readout, d.trajectory.data() + 3 * readout * p);
  }
  const index_t m = readout * k;
  std::vector<double> points(static_cast<std::size_t>(3 * m));
  for (index_t j = 0; j < m; ++j) {
    points[static_cast<std::size_t>(3 * j)] = d.trajectory[3 * j];
    points[static_cast<std::size_t>(3 * j + 1)] = d.trajectory[3 * j + 1];
  }
  std::vector<cdouble> f(static_cast<std::size_t>(m * coils));
  multiCoilKspace(ph, model, points.data(), m, f.data());
  const double scale = std::sqrt(static_cast<double>(s.matrix[0]) * static_cast<double>(s.matrix[1]));
  d.kspace = CArray(Shape{readout, k, 1, coils, 1});
  for (int c = 0; c < coils; ++c) {
    cfloat* dst = d.kspace.data() + m * c;
    for (index_t j = 0; j < m; ++j) dst[j] = cfloat(scale * f[static_cast<std::size_t>(j + m * c)]);
    if (s.noiseSigma > 0) addNoise(dst, m, s.noiseSigma, deriveSeed(frameSeed(s, frame), static_cast<std::uint64_t>(c)));
  }
  attachFrameTruth(d, s, ph, maps);
  return d;
}

/// Frame f's lines: the lattice shifted by f lines, plus the ACS block (marked in `calibration`).
std::vector<std::uint8_t> cartesianFrameLines(const SimulateSettings& s, index_t frame,
                                              std::vector<std::uint8_t>& calibration) {
  const index_t m1 = s.matrix[1], c1 = m1 / 2, r = s.accel;
  const bool accelerated = s.accel > 1;
  const int acs = accelerated ? s.acs : 0;
  Array<std::uint8_t> cal;
  try {
    (void)traj::cartesianMask(m1, 1, s.accel, 1, acs, acs > 0 ? 1 : 0, &cal);
  } catch (const Error& e) {
    throw Error(std::string("simulate: ") + e.what());
  }
  std::vector<std::uint8_t> lines(static_cast<std::size_t>(m1));
  calibration.assign(static_cast<std::size_t>(m1), 0);
  for (index_t j = 0; j < m1; ++j) {
    const auto i = static_cast<std::size_t>(j);
    calibration[i] = cal.empty() ? 0 : cal[j];
    lines[i] = (((j - c1 - frame) % r + r) % r == 0 || calibration[i]) ? 1 : 0;
  }
  return lines;
}

Dataset cartesianFrame(const SimulateSettings& s, index_t frame, const Phantom& ph, const CoilModel& model,
                       const CArray& maps) {
  const detail::CartesianGrid g = detail::cartesianGrid(s);
  const index_t e0 = g.e0, m1 = g.m1, c0 = e0 / 2, c1 = m1 / 2;
  const int coils = s.coils;
  Dataset d;
  d.source = "simulated";
  d.header = detail::cartesianHeader(s, g);
  d.header.protocolName += " dynamic";
  std::vector<std::uint8_t> cal;
  const std::vector<std::uint8_t> lines = cartesianFrameLines(s, frame, cal);
  d.sampled = Array<std::uint8_t>(Shape{m1, 1, 1});
  d.calibration = Array<std::uint8_t>(Shape{m1, 1, 1});
  std::vector<index_t> rows;
  for (index_t j = 0; j < m1; ++j) {
    d.sampled[j] = lines[static_cast<std::size_t>(j)];
    d.calibration[j] = cal[static_cast<std::size_t>(j)];
    if (d.sampled[j]) rows.push_back(j);
  }
  const index_t m = e0 * static_cast<index_t>(rows.size());
  std::vector<double> points(static_cast<std::size_t>(3 * m), 0.0);
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (index_t n = 0; n < e0; ++n) {
      const std::size_t i = 3 * (r * static_cast<std::size_t>(e0) + static_cast<std::size_t>(n));
      points[i] = static_cast<double>(n - c0) / g.l0;
      points[i + 1] = static_cast<double>(rows[r] - c1);
    }
  std::vector<cdouble> f(static_cast<std::size_t>(m * coils));
  multiCoilKspace(ph, model, points.data(), m, f.data());
  const double scale = std::sqrt(static_cast<double>(e0) * static_cast<double>(m1)) / g.l0;
  d.kspace = CArray(Shape{e0, m1, 1, coils, 1}, cfloat(0));
  for (int c = 0; c < coils; ++c)
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const index_t line = rows[r] + m1 * c;
      cfloat* dst = d.kspace.data() + e0 * line;
      const cdouble* src = f.data() + m * c + e0 * static_cast<index_t>(r);
      for (index_t n = 0; n < e0; ++n) dst[n] = cfloat(scale * src[n]);
      if (s.noiseSigma > 0)
        addNoise(dst, e0, s.noiseSigma, deriveSeed(frameSeed(s, frame), static_cast<std::uint64_t>(line)));
    }
  attachFrameTruth(d, s, ph, maps);
  return d;
}

/// The whole spoke sequence of a radial/golden series: frames x K spokes, [3, readout, frames K].
RArray spokeSequence(const SimulateSettings& s) {
  const index_t n = s.matrix[0];
  require(s.matrix[1] == n, "simulate: " + toString(s.trajectory) + " needs a square matrix");
  require(n >= 4, "simulate: " + toString(s.trajectory) + " needs a matrix of at least 4");
  require(s.readout >= 0, "simulate: readout must not be negative");
  const index_t readout =
      s.readout > 0 ? s.readout : std::max<index_t>(2, std::llround(static_cast<double>(n) * s.readoutOversampling));
  const index_t total = s.frames * resolvedSpokesPerFrame(s);
  const auto order = s.trajectory == TrajectoryKind::GoldenAngle ? traj::RadialOrder::GoldenAngle
                                                                 : traj::RadialOrder::Linear180;
  try {
    return traj::radial2D(readout, total, n, order).k;
  } catch (const Error& e) {
    throw Error(std::string("simulate: ") + e.what());
  }
}

}  // namespace

nlohmann::json toJson(const DynamicModel& m) {
  return nlohmann::json{{"beatPeriod", m.beatPeriod},         {"beatAmplitude", m.beatAmplitude},
                        {"breathPeriod", m.breathPeriod},     {"breathShiftPixels", m.breathShiftPixels},
                        {"washInDelay", m.washInDelay},       {"washInTau", m.washInTau},
                        {"washInPeak", m.washInPeak}};
}

double washIn(const DynamicModel& m, double frame) {
  return frame <= m.washInDelay ? 0.0 : 1.0 - std::exp(-(frame - m.washInDelay) / m.washInTau);
}

double breathShift(const DynamicModel& m, double frame, index_t matrixY) {
  return m.breathShiftPixels * std::sin(kTwoPi * frame / m.breathPeriod) / static_cast<double>(matrixY);
}

std::vector<Ellipse> dynamicEllipses(const DynamicModel& m, double frame, index_t matrixY) {
  std::vector<Ellipse> e = sheppLogan2DEllipses();
  const double beat = 1 + m.beatAmplitude * std::sin(kTwoPi * frame / m.beatPeriod);
  e[kBeatingEllipse].a *= beat;
  e[kBeatingEllipse].b *= beat;
  e[kWashInEllipse].value += m.washInPeak * washIn(m, frame);
  const double dy = breathShift(m, frame, matrixY);
  for (Ellipse& x : e) x.cy += dy;
  return e;
}

index_t resolvedSpokesPerFrame(const SimulateSettings& s) {
  const index_t frames = std::max<index_t>(1, s.frames);
  if (s.spokesPerFrame > 0) {
    require(s.spokes == 0 || s.spokes == s.spokesPerFrame * frames,
            "simulate: " + std::to_string(s.spokes) + " spokes are not " + std::to_string(frames) + " frames x " +
                std::to_string(s.spokesPerFrame) + " spokes per frame");
    return s.spokesPerFrame;
  }
  if (s.spokes > 0) {
    require(s.spokes >= frames, "simulate: " + std::to_string(s.spokes) + " spokes are fewer than " +
                                    std::to_string(frames) + " frames");
    return s.spokes / frames;
  }
  return kDefaultSpokesPerFrame;
}

std::vector<Dataset> simulateSeries(const SimulateSettings& s, const DynamicModel& model, const Progress& progress) {
  validateSeries(s, model);
  const bool cartesian = s.trajectory == TrajectoryKind::Cartesian;
  const RArray sequence = cartesian ? RArray() : spokeSequence(s);
  const CoilModel coils = makeCoilModel(s.coils, 2);
  const CArray maps2 = coilMaps(coils, Shape{s.matrix[0], s.matrix[1]});
  CArray maps(Shape{s.matrix[0], s.matrix[1], 1, s.coils, 1});
  std::copy(maps2.data(), maps2.data() + maps2.size(), maps.data());
  std::vector<Dataset> out;
  out.reserve(static_cast<std::size_t>(s.frames));
  for (index_t f = 0; f < s.frames; ++f) {
    progress.report(static_cast<double>(f) / static_cast<double>(s.frames),
                    "simulating frame " + std::to_string(f + 1) + "/" + std::to_string(s.frames));
    const Phantom ph(dynamicEllipses(model, static_cast<double>(f), s.matrix[1]));
    out.push_back(cartesian ? cartesianFrame(s, f, ph, coils, maps) : nonCartesianFrame(s, sequence, f, ph, coils, maps));
  }
  progress.report(1.0, "simulation done");
  return out;
}

}  // namespace larmor::phantom
