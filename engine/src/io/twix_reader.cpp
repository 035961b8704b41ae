// Siemens twix into a Dataset (twix.hpp says what; docs/twix.md the details). The layout is read and
// checked first (twix_file.cpp), then the matrix is decided from the protocol and the scan headers
// alone, its size checked against the samples the file holds, and only then is memory allocated and
// the samples read.
//
// Placement of a Cartesian readout (per scan, its own centre numbers):
//   readout: encoded E0 = round(lBaseResolution x flReadoutOSFactor); a readout of S <= E0 samples
//            starts at E0/2 - KSpaceCentreColumn (asymmetric echo); if it does not fit, E0 = S, start 0.
//   pe1:     E1 = lPhaseEncodingLines, line at Lin - KSpaceCentreLineNo + E1/2;
//   pe2:     3D (ucDimension 4): E2 = lPartitions, partition at Par - KSpaceCentrePartitionNo + E2/2;
//            2D: E2 = 1;
//   if any readout falls outside [0, E) on pe1 or pe2, that axis takes the counters as indices
//   (E = max counter + 1): the protocol of Pulseq and similar sequences does not describe the data.
//   A readout flagged REFLECT is reversed.
// Trigger time of a frame: mean ulPMUTimeStamp of its imaging readouts x 2.5 ms (NaN when all are 0, or when
// any exceeds 10 s: then the stamp is the free-running clock of an ungated scan).
#include <algorithm>
#include <cmath>
#include <numbers>
#include <set>

#include "larmor/recon/resources.hpp"
#include "larmor/util/error.hpp"
#include "physiology_stamps.hpp"
#include "sampling_facts.hpp"
#include "trajectory_input.hpp"
#include "twix_format.hpp"

namespace larmor::io {

namespace {

using twix::Scan;
using twix::ScanRole;

struct Axis {
  index_t size = 1;
  bool raw = false;  ///< counters taken as indices
};

// The axis size for `counter` (Lin or Par) of the scans in `use`, from the protocol's size `protocol`
// (0: none) and the scans' centre numbers.
template <class Counter, class Centre>
Axis placeAxis(const std::vector<const Scan*>& use, long protocol, Counter counter, Centre centre) {
  Axis a;
  bool fits = protocol > 0;
  index_t maxCounter = 0;
  for (const Scan* s : use) {
    maxCounter = std::max<index_t>(maxCounter, counter(*s));
    const index_t at = static_cast<index_t>(counter(*s)) - centre(*s) + protocol / 2;
    fits = fits && at >= 0 && at < protocol;
  }
  if (fits) a.size = protocol;
  else a.size = maxCounter + 1, a.raw = true;
  return a;
}

index_t position(const Axis& a, index_t counter, index_t centre) {
  return a.raw ? counter : counter - centre + a.size / 2;
}

std::string scanName(const Scan& s) {
  return "scan counter " + std::to_string(s.scanCounter) + " (byte " + std::to_string(s.offset) + ")";
}

void readSamples(const twix::FileReader& f, const twix::Layout& L, const Scan& s, std::vector<cfloat>& buf) {
  twix::readScanSamples(f, L, s, buf);
  for (std::size_t i = 0; i < buf.size(); ++i)
    if (!std::isfinite(buf[i].real()) || !std::isfinite(buf[i].imag()))
      f.fail(scanName(s) + ": sample " + std::to_string(i % s.samples) + " of channel " +
             std::to_string(i / s.samples) + " is " + (std::isnan(buf[i].real()) || std::isnan(buf[i].imag()) ? "NaN" : "Inf"));
}

// Refuses k-space that the file's samples cannot fill (a lying header would otherwise allocate terabytes).
void checkSize(const twix::FileReader& f, const Shape& shape, double sampleBytes) {
  const double bytes = static_cast<double>(shape.size()) * sizeof(cfloat);
  if (bytes > 64.0 * 1024 * 1024 * 1024 || bytes > 64.0 * std::max(sampleBytes, 16384.0))
    f.fail("k-space " + shape.str() + " needs " + std::to_string(static_cast<long long>(bytes / 1048576)) +
           " MiB but the file holds only " + std::to_string(static_cast<long long>(sampleBytes / 1024)) +
           " KiB of samples for it (the counters or the protocol's matrix are wrong)");
  recon::requireHostMemory(bytes, f.path(), "the k-space " + shape.str());
}

// A measurement ends with an ACQEND scan; without one it was cut short (a truncated file, an aborted scan),
// and its k-space lacks the readouts that were to follow (a radial file cut in half read as half the spokes,
// exit 0). One line with what is there and what the protocol expected: an Error, or with `allow` (info's
// description) the warning's text; "" for a complete measurement.
std::string cutShort(const twix::FileReader& f, const twix::Layout& L, bool allow) {
  if (L.acqEnd) return {};
  index_t lines = 0, last = -1;
  for (const Scan& s : L.scans)
    if (twix::scanRole(s.mask) == ScanRole::Image) ++lines, last = std::max<index_t>(last, s.lin);
  const auto expected = twix::ascInt(L.protocol, "sKSpace.lPhaseEncodingLines", 1, 65535);
  const std::string why = "the measurement has no ACQEND: it was cut short after " + std::to_string(L.scans.size()) +
                          " scans (" + std::to_string(lines) + " imaging readouts, line counters up to " +
                          std::to_string(last) +
                          (expected ? "; the protocol gives " + std::to_string(*expected) + " lines" : std::string()) +
                          "): a truncated file or an aborted measurement, whose k-space is incomplete";
  if (!allow) f.fail(why);
  return f.path() + ": " + why;
}

void fillHeader(const twix::Layout& L, Header& h) {
  const twix::Protocol& p = L.protocol;
  h.patientName = twix::protText(p, "tPatientName");
  if (h.patientName.empty()) h.patientName = L.raidPatient;
  h.patientId = twix::protText(p, "PatientID");
  h.protocolName = twix::protText(p, "tProtocolName");
  if (h.protocolName.empty()) h.protocolName = L.raidProtocol;
  const std::string model = twix::protText(p, "ManufacturersModelName"), sw = twix::protText(p, "SoftwareVersions");
  h.deviceDescription = "Siemens" + (model.empty() ? "" : " " + model) + (sw.empty() ? "" : " (" + sw + ")");
  if (auto b0 = twix::protReal(p, "flMagneticFieldStrength", 0.01, 30, true)) h.systemFieldT = static_cast<float>(*b0);
  else if (auto n = twix::protReal(p, "sProtConsistencyInfo.flNominalB0", 0.01, 30, false)) h.systemFieldT = static_cast<float>(*n);
  const std::string slice = "sSliceArray.asSlice[0].";
  if (auto v = twix::protReal(p, slice + "dReadoutFOV", 1e-3, 1e5, false)) h.reconFovMm[0] = static_cast<float>(*v);
  if (auto v = twix::protReal(p, slice + "dPhaseFOV", 1e-3, 1e5, false)) h.reconFovMm[1] = static_cast<float>(*v);
  if (auto v = twix::protReal(p, slice + "dThickness", 1e-3, 1e5, false)) h.reconFovMm[2] = static_cast<float>(*v);
  for (int i = 0; i < 3; ++i) h.encodedFovMm[i] = h.reconFovMm[i];
  h.accelerationPe1 = static_cast<int>(twix::ascInt(p, "sPat.lAccelFactPE", 1, 64).value_or(1));
  h.accelerationPe2 = static_cast<int>(twix::ascInt(p, "sPat.lAccelFact3D", 1, 64).value_or(1));
}

// The readouts of a file sorted by what they are for. `use`: this frame's imaging readouts and the
// reference readouts that serve it; `all`: every frame's (they decide the matrix, so that the frames share
// it); `noise`: noise-adjust readouts. Also fills the dataset's acquisition list and counts skipped scans.
struct ScanSets {
  std::vector<const Scan*> use, all, noise;
};

ScanSets sortScans(const twix::FileReader& f, const twix::Layout& L, const TwixOptions& options, TwixRead& out) {
  Dataset& d = out.dataset;
  const auto keyOf = [](const Scan& s) { return FrameKey{s.eco, s.phs, s.rep, s.set}; };
  ScanSets sets;
  std::vector<const Scan*> references;
  std::set<FrameKey> imagingKeys;
  for (const Scan& s : L.scans) {
    AcquisitionInfo a;
    a.scanCounter = s.scanCounter;
    a.flags = twix::ismrmrdFlags(s.mask);
    a.samples = s.samples, a.channels = s.channels, a.pe1 = s.lin, a.pe2 = s.par, a.slice = s.sli, a.repetition = s.rep;
    a.contrast = s.eco, a.phase = s.phs, a.set = s.set, a.average = s.ave;
    if (!options.frame || keyOf(s) == *options.frame) d.acquisitions.push_back(a);
    const ScanRole role = twix::scanRole(s.mask);
    if (role == ScanRole::Noise) sets.noise.push_back(&s);
    if (role == ScanRole::Skipped) ++out.skipped;
    const bool reference = role == ScanRole::Reference && !options.trajectory && options.trajectoryName.empty();
    if (reference) references.push_back(&s);
    if (role == ScanRole::Image) {
      imagingKeys.insert(keyOf(s));
      sets.all.push_back(&s);
      if (options.frame ? keyOf(s) == *options.frame : (options.repetition < 0 || s.rep == options.repetition))
        sets.use.push_back(&s);
    }
  }
  if (!options.frame && imagingKeys.size() > 1 && options.repetition < 0)
    f.fail("holds " + std::to_string(imagingKeys.size()) +
           " frames (echoes, phases, repetitions or sets); read it as a series or select one frame");
  // Reference readouts with this frame's key serve it; a frame without any is served by all of them
  // (a reference scan acquired once, e.g. at repetition 0).
  bool ownReferences = false;
  for (const Scan* s : references) ownReferences = ownReferences || (options.frame && keyOf(*s) == *options.frame);
  for (const Scan* s : references) {
    const bool serves = !options.frame ? (options.repetition < 0 || s->rep == options.repetition)
                        : !ownReferences || keyOf(*s) == *options.frame;
    if (serves) sets.use.push_back(s);
    sets.all.push_back(s);
  }
  return sets;
}

/// What every k-space readout shares: samples and channels (the first's; all must match), the file's slices.
struct ReadoutSize {
  index_t samples = 0, coils = 0, slices = 1;
  double sampleBytes = 0;  ///< the bytes of samples the readouts hold (checkSize)
};

ReadoutSize readoutSize(const twix::FileReader& f, const twix::Layout& L, const ScanSets& sets, const TwixOptions& options) {
  if (sets.use.empty())
    f.fail(std::to_string(L.scans.size()) + " scans but no imaging readouts" +
           (options.repetition >= 0 ? " of repetition " + std::to_string(options.repetition) : std::string()));
  ReadoutSize r;
  r.samples = sets.use.front()->samples, r.coils = sets.use.front()->channels;
  for (const Scan* s : sets.use) {
    if (s->samples != r.samples || s->channels != r.coils)
      f.fail(scanName(*s) + " has " + std::to_string(s->channels) + " channels x " + std::to_string(s->samples) +
             " samples, the first imaging readout " + std::to_string(r.coils) + " x " + std::to_string(r.samples));
    r.sampleBytes += 8.0 * s->samples * s->channels;
  }
  for (const Scan* s : sets.all) r.slices = std::max<index_t>(r.slices, s->sli + 1);  // every frame has the file's slices
  return r;
}

/// Noise readouts, kept apart: [samples, scans, coils] (empty when there are none).
CArray readNoise(const twix::FileReader& f, const twix::Layout& L, const std::vector<const Scan*>& noise, index_t coils) {
  if (noise.empty()) return {};
  const index_t ns = noise.front()->samples;
  for (const Scan* s : noise)
    if (s->samples != ns || s->channels != coils)
      f.fail("noise " + scanName(*s) + " has " + std::to_string(s->channels) + " channels x " +
             std::to_string(s->samples) + " samples, expected " + std::to_string(coils) + " x " + std::to_string(ns));
  CArray out(Shape{ns, static_cast<index_t>(noise.size()), coils});
  std::vector<cfloat> buf;
  for (std::size_t k = 0; k < noise.size(); ++k) {
    readSamples(f, L, *noise[k], buf);
    for (index_t c = 0; c < coils; ++c)
      std::copy_n(buf.data() + c * ns, ns, out.data() + ns * (static_cast<index_t>(k) + out.shape()[1] * c));
  }
  return out;
}

// Non-Cartesian: profiles by line counter (every (line, slice) must be there; repeats are averaged), the
// trajectory given or computed (uniform radial).
void readNonCartesian(const twix::FileReader& f, const twix::Layout& L, const std::vector<const Scan*>& use,
                      const ReadoutSize& r, const TwixOptions& options, Dataset& d) {
  const index_t samples = r.samples, coils = r.coils, slices = r.slices;
  index_t profiles = 0;
  for (const Scan* s : use) {
    if (s->par != 0) f.fail(scanName(*s) + " has partition " + std::to_string(s->par) + ": 3D non-Cartesian twix is not supported");
    profiles = std::max<index_t>(profiles, s->lin + 1);
  }
  const Shape ks{samples, profiles, 1, coils, slices};
  checkSize(f, ks, r.sampleBytes);  // before the trajectory too: it is 1.5 times this size
  RArray computed;
  const RArray* t = options.trajectory;
  if (!t) {
    computed = uniformRadialTrajectory(samples, profiles, radialTrajectoryKeyword(options.trajectoryName));
    t = &computed;
  }
  const std::string tn = options.trajectoryName;
  if (t->shape()[1] != samples || t->shape()[2] != profiles)
    f.fail("its readouts are " + std::to_string(samples) + " samples x " + std::to_string(profiles) +
           " profiles (line counters), the trajectory " + tn + " " + t->shape().str() + " does not match");
  d.kspace = CArray(ks, cfloat(0, 0));
  std::vector<std::uint32_t> hits(static_cast<std::size_t>(profiles * slices), 0);
  std::vector<cfloat> buf;
  for (const Scan* s : use) {
    readSamples(f, L, *s, buf);
    const bool rev = twix::hasBit(s->mask, twix::kReflect);
    for (index_t c = 0; c < coils; ++c) {
      cfloat* row = d.kspace.data() + samples * (s->lin + profiles * (c + coils * s->sli));
      for (index_t n = 0; n < samples; ++n) row[rev ? samples - 1 - n : n] += buf[static_cast<std::size_t>(c * samples + n)];
    }
    ++hits[static_cast<std::size_t>(s->lin + profiles * s->sli)];
  }
  for (index_t sl = 0; sl < slices; ++sl)
    for (index_t p = 0; p < profiles; ++p) {
      const std::uint32_t n = hits[static_cast<std::size_t>(p + profiles * sl)];
      if (n == 0) f.fail("profile (line) " + std::to_string(p) + " of slice " + std::to_string(sl) + " was not acquired");
      for (index_t c = 0; c < coils; ++c)
        for (index_t k = 0; k < samples; ++k) d.kspace(k, p, 0, c, sl) /= static_cast<float>(n);
    }
  d.trajectory = *t;
  detail::applyTrajectoryHeader(d.header, d.trajectory, options.matrix);
  d.header.accelerationPe1 = d.header.accelerationPe2 = 1;
}

/// The Cartesian matrix (file comment: placement), from the protocol and every frame's readouts.
struct CartesianMatrix {
  Axis a1, a2;
  index_t enc0 = 0;
  long base = 0;  ///< the protocol's lBaseResolution (0: none)
};

CartesianMatrix cartesianMatrix(const twix::Layout& L, const std::vector<const Scan*>& all, index_t samples) {
  const twix::Protocol& p = L.protocol;
  CartesianMatrix m;
  const bool threeD = twix::ascInt(p, "sKSpace.ucDimension", 0, 255).value_or(2) == 4;
  m.a1 = placeAxis(all, twix::ascInt(p, "sKSpace.lPhaseEncodingLines", 1, 65535).value_or(0),
                   [](const Scan& s) { return s.lin; }, [](const Scan& s) { return s.centreLine; });
  m.a2 = placeAxis(all, threeD ? twix::ascInt(p, "sKSpace.lPartitions", 1, 65535).value_or(0) : 1,
                   [](const Scan& s) { return s.par; }, [](const Scan& s) { return s.centrePartition; });
  m.base = twix::ascInt(p, "sKSpace.lBaseResolution", 1, 65535).value_or(0);
  const double os = twix::protReal(p, "flReadoutOSFactor", 1, 16, true).value_or(1.0);
  m.enc0 = static_cast<index_t>(std::lround(static_cast<double>(m.base) * os));
  for (const Scan* s : all) {
    const index_t start = m.enc0 / 2 - s->centreColumn;
    if (start < 0 || start + samples > m.enc0) m.enc0 = samples;  // the protocol does not describe the readout
  }
  return m;
}

// The readouts into k-space at their lines (repeats averaged), the sampling and calibration masks. A
// reference readout is not added to a line that has an imaging readout.
void fillCartesian(const twix::FileReader& f, const twix::Layout& L, const std::vector<const Scan*>& use,
                   const CartesianMatrix& m, const ReadoutSize& r, Dataset& d) {
  const index_t enc0 = m.enc0, enc1 = m.a1.size, enc2 = m.a2.size, samples = r.samples, coils = r.coils;
  const index_t slices = r.slices;
  std::vector<std::uint32_t> hits(static_cast<std::size_t>(enc1 * enc2 * slices), 0);
  std::vector<std::uint8_t> imaged(hits.size(), 0);
  auto lineOf = [&](const Scan& s) {
    const index_t p1 = position(m.a1, s.lin, s.centreLine), p2 = position(m.a2, s.par, s.centrePartition);
    return p1 + enc1 * (p2 + enc2 * s.sli);
  };
  for (const Scan* s : use)
    if (twix::scanRole(s->mask) == ScanRole::Image) imaged[static_cast<std::size_t>(lineOf(*s))] = 1;
  std::vector<cfloat> buf;
  for (const Scan* s : use) {
    const index_t line = lineOf(*s);
    const bool ref = twix::scanRole(s->mask) == ScanRole::Reference;
    if (ref || twix::hasBit(s->mask, twix::kPatRefAndImaScan)) d.calibration[line] = 1;
    if (ref && imaged[static_cast<std::size_t>(line)]) continue;
    readSamples(f, L, *s, buf);
    const index_t start = enc0 == samples ? 0 : enc0 / 2 - s->centreColumn;
    const bool rev = twix::hasBit(s->mask, twix::kReflect);
    const index_t pe = line % (enc1 * enc2), sl = line / (enc1 * enc2);
    for (index_t c = 0; c < coils; ++c) {
      cfloat* row = d.kspace.data() + enc0 * (pe + enc1 * enc2 * (c + coils * sl)) + start;
      for (index_t n = 0; n < samples; ++n) row[rev ? samples - 1 - n : n] += buf[static_cast<std::size_t>(c * samples + n)];
    }
    ++hits[static_cast<std::size_t>(line)];
  }
  std::vector<std::uint8_t> calibPe1(static_cast<std::size_t>(enc1), 0);
  for (index_t line = 0; line < enc1 * enc2 * slices; ++line) {
    const std::uint32_t n = hits[static_cast<std::size_t>(line)];
    if (d.calibration[line]) calibPe1[static_cast<std::size_t>(line % enc1)] = 1;
    if (n == 0) continue;
    d.sampled[line] = 1;
    if (n == 1) continue;
    const index_t pe = line % (enc1 * enc2), sl = line / (enc1 * enc2);
    for (index_t c = 0; c < coils; ++c)
      for (index_t k = 0; k < enc0; ++k) d.kspace[k + enc0 * (pe + enc1 * enc2 * (c + coils * sl))] /= static_cast<float>(n);
  }
  d.header.calibrationLines = static_cast<int>(std::count(calibPe1.begin(), calibPe1.end(), 1));
}

// The protocol's partial Fourier against the data (which decide): one warning per axis where they disagree.
void warnPartialFourierClaim(const std::string& path, const TwixSummary& summary, index_t enc2, Dataset& d) {
  const Header& h = d.header;
  const double claim[3] = {summary.readoutPartialFourier, summary.phasePartialFourier,
                           enc2 > 1 ? summary.slicePartialFourier : 1.0};
  static const char* axis[3] = {"readout", "phase", "slice"};
  for (int a = 0; a < 3; ++a)
    if (claim[a] < 1 && std::abs(claim[a] - h.acquiredFraction[a]) > 1.0 / 16)
      d.warnings.push_back(path + ": the protocol says " + axis[a] + " partial Fourier " +
                           std::to_string(static_cast<int>(claim[a] * 8 + 0.5)) + "/8 but the data fill " +
                           std::to_string(h.acquiredFraction[a]).substr(0, 5) +
                           " of that axis; the reconstruction goes by the data");
}

// Cartesian: the matrix decided and its size checked before k-space is allocated, then the readouts placed.
void readCartesian(const twix::FileReader& f, const twix::Layout& L, const ScanSets& sets, const ReadoutSize& r,
                   const std::string& path, const TwixSummary& summary, Dataset& d) {
  Header& h = d.header;
  const CartesianMatrix m = cartesianMatrix(L, sets.all, r.samples);
  const index_t enc0 = m.enc0, enc1 = m.a1.size, enc2 = m.a2.size;
  const Shape ks{enc0, enc1, enc2, r.coils, r.slices};
  checkSize(f, ks, r.sampleBytes);
  h.trajectory = TrajectoryKind::Cartesian;
  h.encoded[0] = enc0, h.encoded[1] = enc1, h.encoded[2] = enc2;
  h.recon[0] = m.base > 0 && m.base <= enc0 ? m.base : enc0;
  h.recon[1] = enc1, h.recon[2] = enc2;
  h.encodedFovMm[0] = h.reconFovMm[0] * static_cast<float>(enc0) / static_cast<float>(h.recon[0]);
  d.kspace = CArray(ks, cfloat(0, 0));
  d.sampled = Array<std::uint8_t>(Shape{enc1, enc2, r.slices}, 0);
  d.calibration = Array<std::uint8_t>(Shape{enc1, enc2, r.slices}, 0);
  fillCartesian(f, L, sets.use, m, r, d);
  detail::setAccelerationFromMask(d);
  detail::setPartialFourierFromData(d);
  warnPartialFourierClaim(path, summary, enc2, d);
}

// What follows the samples: noise as Dataset::noise, the trigger time, the warnings, slice positions.
void finishTwix(const std::string& path, const std::string& incomplete, const std::vector<const Scan*>& use,
                const ReadoutSize& r, TwixRead& out) {
  Dataset& d = out.dataset;
  Header& h = d.header;
  if (!out.noise.empty()) {
    // Dataset::noise is [samples_total, coils]: the [samples, scans, coils] block read as one.
    CArray n = out.noise;
    n.reshape(Shape{out.noise.shape()[0] * out.noise.shape()[1], r.coils});
    d.noise = std::move(n);
  }
  // Trigger time: the mean PMU stamp of the frame's imaging readouts (physiology_stamps.hpp, one rule
  // with the ISMRMRD reader).
  PhysiologyStamps stamps;
  for (const Scan* s : use) stamps.add(s->pmuStamp);
  out.triggerTimeMs = stamps.triggerTimeMs();
  if (!incomplete.empty()) d.warnings.push_back(incomplete);
  if (out.skipped > 0)
    d.warnings.push_back(path + ": skipped " + std::to_string(out.skipped) +
                         " navigator, phase-correction, feedback or dummy readouts (not imaging data)");
  h.geometry.slicePositions.assign(static_cast<std::size_t>(r.slices), 0.f);
  for (index_t i = 0; i < r.slices; ++i)
    h.geometry.slicePositions[static_cast<std::size_t>(i)] =
        (static_cast<float>(i) - 0.5f * static_cast<float>(r.slices - 1)) * h.reconFovMm[2];
}

}  // namespace

TwixRead readTwix(const std::string& path, const TwixOptions& options) {
  const twix::FileReader f(path);
  const twix::Layout L = twix::readLayout(f);
  const std::string incomplete = cutShort(f, L, options.allowCutShort);
  TwixRead out;
  out.summary = twix::summarize(L);
  Dataset& d = out.dataset;
  d.source = path;
  fillHeader(L, d.header);

  const ScanSets sets = sortScans(f, L, options, out);
  d.noiseScans = static_cast<index_t>(sets.noise.size());
  const ReadoutSize r = readoutSize(f, L, sets, options);
  d.header.coils = r.coils;
  d.header.slices = r.slices;
  out.noise = readNoise(f, L, sets.noise, r.coils);
  if (options.trajectory || !options.trajectoryName.empty()) readNonCartesian(f, L, sets.use, r, options, d);
  else readCartesian(f, L, sets, r, path, out.summary, d);
  finishTwix(path, incomplete, sets.use, r, out);
  d.validate();
  return out;
}

std::vector<FrameKey> twixFrames(const std::string& path) {
  const twix::FileReader f(path);
  const twix::Layout L = twix::readLayout(f);
  std::set<FrameKey> keys;
  for (const Scan& s : L.scans)
    if (twix::scanRole(s.mask) == ScanRole::Image) keys.insert(FrameKey{s.eco, s.phs, s.rep, s.set});
  return {keys.begin(), keys.end()};
}

double twixEchoTimeMs(const std::string& path, int contrast) {
  const twix::FileReader f(path);
  const twix::Layout L = twix::readLayout(f);
  const auto te = twix::ascInt(L.protocol, "alTE[" + std::to_string(contrast) + "]", 1, 100000000);
  return te ? static_cast<double>(*te) / 1000.0 : unknownTime();
}

}  // namespace larmor::io
