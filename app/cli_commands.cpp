#include "cli_commands.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iomanip>
#include <iostream>
#include <algorithm>
#include <map>
#include <sstream>

#include "larmor/backend/registry.hpp"
#include "larmor/batch/settings_file.hpp"
#include "larmor/io/cfl.hpp"
#include "larmor/io/dicom.hpp"
#include "larmor/data/frames.hpp"
#include "larmor/io/dataset_io.hpp"
#include "larmor/io/export.hpp"
#include "larmor/io/nifti.hpp"
#include "larmor/io/output_safety.hpp"
#include "larmor/io/png.hpp"
#include "larmor/io/twix.hpp"
#include "larmor/phantom/dynamic.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/quality/metrics.hpp"
#include "larmor/bench/bench.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/coil_maps.hpp"
#include "larmor/recon/noncartesian.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/resources.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/recon/warm_up.hpp"
#include "larmor/util/atomic_file.hpp"
#include "larmor/util/provenance.hpp"
#include "cli_pacs.hpp"
#ifdef LARMOR_HAVE_IO
#include "larmor/io/ismrmrd.hpp"
#endif

namespace larmor::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string extension(const std::string& path) {
  std::string e = fs::path(path).extension().string();
  for (auto& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

void writeJson(const std::string& path, const json& j) {
  if (path.empty()) return;
  AtomicFile file(path);
  std::ofstream f(file.tempPath());
  f << std::setw(2) << io::withProvenance(j) << "\n";  // "software": "Larmor": a later run may replace it
  f.close();
  require(f.good(), path + ": could not write the JSON file");
  file.commit();
}

/// The reference image of a comparison: a .cfl image, or the reference stored in a dataset file.
CArray loadImage(const std::string& path) {
  const std::string e = extension(path);
  // A DICOM series: one of its files, or its folder (the stored magnitude, io::readDicomSeriesImage).
  if (e == ".dcm" || std::filesystem::is_directory(path)) {
#ifdef LARMOR_HAVE_IO
    return io::readDicomSeriesImage(path);
#else
    throw Error(path + ": DICOM is not in this build (LARMOR_IO=OFF)");
#endif
  }
  if (e == ".cfl" || e == ".hdr" || e.empty()) return io::readCfl(path);
  if (e == ".nii" || path.ends_with(".nii.gz") || path.ends_with(".NII.GZ")) return io::readNiftiImage(path);  // NIfTI-1
  Dataset d = io::loadDataset(path);
  require(d.reference.has_value(), path + ": has no reference image");
  return *d.reference;
}

bool isDicomSeriesPath(const std::string& path) {
  return extension(path) == ".dcm" || std::filesystem::is_directory(path);
}

/// compare with two DICOM series (e.g. Larmor's reconstruction and the scanner's images from a PACS): the
/// reference's images paired with the test's by geometry and frame (io::matchDicomSeries); what was matched.
std::string loadMatchedDicom(const std::string& testPath, const std::string& refPath, CArray& test, CArray& ref) {
#ifdef LARMOR_HAVE_IO
  io::DicomSeries t = io::readDicomSeries(testPath);
  const io::DicomSeries r = io::readDicomSeries(refPath);
  io::DicomMatch m = io::matchDicomSeries(t, r, testPath, refPath);
  test = std::move(t.image);
  ref = std::move(m.reference);
  return "matched " + std::to_string(t.images.size()) + " image" + (t.images.size() == 1 ? "" : "s") + " of " +
         std::to_string(m.referenceImages) + " in the reference " + (m.byOrder ? "by order (no positions)" : "by position and frame");
#else
  (void)test, (void)ref;
  throw Error(testPath + ", " + refPath + ": DICOM is not in this build (LARMOR_IO=OFF)");
#endif
}

void printTimings(const Timings& t) {
  for (const auto& s : t.stages())
    std::cout << "  " << std::left << std::setw(22) << s.stage << std::right << std::setw(10) << std::fixed
              << std::setprecision(3) << s.milliseconds << " ms  " << s.device << "\n";
  std::cout << "  " << std::left << std::setw(22) << "total" << std::right << std::setw(10) << t.totalMilliseconds()
            << " ms\n";
}

/// How an iterative solve ended (slice 0 of several): iterations, why it stopped, the final relative
/// residual ||b - A x|| / ||b||, so that a run that hit the iteration limit far from convergence shows.
void printConvergence(const json& c) {
  if (!c.is_object()) return;
  const bool perSlice = c.contains("slices") && c["slices"].is_array() && !c["slices"].empty();
  const json& s = perSlice ? c["slices"].front() : c;
  if (!s.contains("iterations") || !s.contains("stop")) return;
  const std::string stop = s["stop"].get<std::string>();
  const std::string solver = s.value("solver", std::string("CG"));
  std::cout << "  " << solver << ": " << s["iterations"].get<int>() << " iterations, stopped by "
            << (stop == "iterations" ? "the iteration limit (--iters)" : stop == "tolerance" ? "the tolerance (--tol)" : stop);
  const json& r = s.contains("relative_residual") ? s["relative_residual"] : json();
  if (r.is_array() && !r.empty() && r.back().is_number())
    std::cout << ", relative residual " << std::scientific << std::setprecision(2) << r.back().get<double>()
              << std::defaultfloat;
  const json& ch = s.contains("relative_change") ? s["relative_change"] : json();
  if (ch.is_array() && !ch.empty() && ch.back().is_number())
    std::cout << ", relative change " << std::scientific << std::setprecision(2) << ch.back().get<double>()
              << std::defaultfloat;
  // The lambda the solve used: lambda_used where a rule chose it (noise, cv), else the given one.
  const char* key = s.contains("lambda_used") && s["lambda_used"].is_number() ? "lambda_used" : "lambda";
  if (s.contains(key) && s[key].is_number()) {
    std::cout << ", λ " << std::setprecision(3) << s[key].get<double>();
    const json& rule = s.contains("lambda_rule") ? s["lambda_rule"] : json();
    const std::string by = rule.is_object() && rule.contains("rule") ? rule["rule"].get<std::string>() + "; " : "";
    if (s.contains("lambda_absolute") && s["lambda_absolute"].is_number())
      std::cout << " (" << by << "relative; " << std::scientific << std::setprecision(3)
                << s["lambda_absolute"].get<double>() << std::defaultfloat << " absolute)";
  }
  if (perSlice) std::cout << " (slice 0 of " << c["slices"].size() << ")";
  std::cout << "\n";
}

/// "256" -> {256,256,1}, "256x128" -> {256,128,1}, "64x64x64" -> 3D: the settings table's rule.
void parseMatrix(const std::string& text, long out[3]) {
  const auto& m = recon::settings::find("matrix");
  const auto d = std::get<std::vector<long>>(recon::settings::parse(m, text));
  for (int i = 0; i < 3; ++i) out[i] = d[static_cast<std::size_t>(i)];
}

/// --accel "R" -> {R, 1}, "RyxRz" -> {Ry, Rz}.
void parseAcceleration(const std::string& text, int out[2]) {
  const std::string bad = "--accel " + text + ": expected R or RyxRz with integers 1 to 64 (e.g. 2 or 2x2)";
  const auto x = text.find('x');
  const std::string parts[2] = {text.substr(0, x), x == std::string::npos ? "1" : text.substr(x + 1)};
  for (int i = 0; i < 2; ++i) {
    require(!parts[i].empty() && parts[i].size() <= 2 &&
                parts[i].find_first_not_of("0123456789") == std::string::npos,
            bad);
    out[i] = std::stoi(parts[i]);
    require(out[i] >= 1 && out[i] <= 64, bad);
  }
}

io::PlannedOutput jsonOutput(const std::string& path) {
  io::PlannedOutput o;
  o.path = path;
  o.role = io::OutputRole::Json;
  return o;
}

io::PlannedOutput imageOutput(const std::string& path, const io::ExportOptions& eo, const Shape& shape) {
  io::PlannedOutput o;
  o.path = path;
  o.role = io::OutputRole::Image;
  o.options = eo;
  o.image = shape;
  return o;
}

/// The image recon will write, [x, y, z, 1, slices], from --matrix alone (before loading; empty when the
/// matrix comes from the header) or from the dataset too.
Shape plannedImage(const recon::ReconSettings& s, const Dataset* d) {
  index_t m[3] = {s.matrix[0], s.matrix[1], s.matrix[2] > 0 ? s.matrix[2] : 1};
  if (d == nullptr) return m[0] > 0 && m[1] > 0 ? Shape{m[0], m[1], m[2], 1, 1} : Shape{};
  recon::outputMatrix(*d, s, m);
  return Shape{m[0], m[1], std::max<index_t>(1, m[2]), 1, std::max<index_t>(1, d->kspace.shape()[4])};
}

/// Every file recon reads: the data, the trajectory, the anatomical prior's reference, a coil-maps file.
std::vector<std::string> reconInputs(const ReconArgs& a) {
  std::vector<std::string> inputs = {a.input, a.traj, a.settings.iterative.referencePath};
  if (a.settings.iterative.coilMaps == recon::CoilMapSource::File) inputs.push_back(a.settings.iterative.coilMapsPath);
  return inputs;
}

/// Export options that the chosen output format does not read are errors, not silently
/// ignored.
void requireFormatOptions(const ReconArgs& a) {
  const io::OutputKind kind = io::outputKind(a.output);
  const std::string format = io::toString(kind);
  const auto refuse = [&](const std::string& option, const std::string& appliesTo) {
    throw Error(option + ": does not apply to " + a.output + " (" + format + "); it applies to " + appliesTo);
  };
  if (!a.components.empty() && kind != io::OutputKind::Dicom) refuse("--component", "a DICOM series (DIR/)");
  if (!a.seriesDescription.empty() && kind != io::OutputKind::Dicom)
    refuse("--series-description", "a DICOM series (DIR/)");
  const std::pair<const char*, bool> dicomOnly[] = {
      {"--patient-name", !a.patientName.empty()}, {"--patient-id", !a.patientId.empty()},
      {"--accession", !a.accession.empty()},      {"--study-description", !a.studyDescription.empty()},
      {"--study-uid", !a.studyUid.empty()},       {"--series-number", a.seriesNumber != 0}};
  for (const auto& [option, given] : dicomOnly)
    if (given && kind != io::OutputKind::Dicom) refuse(option, "a DICOM series (DIR/)");
  if (a.niftiComplex && kind != io::OutputKind::Nifti) refuse("--nifti-complex", "NIfTI (.nii)");
  if ((a.windowCenter != 0 || a.windowWidth != 0) && kind == io::OutputKind::Bart)
    refuse(a.windowWidth != 0 ? "--window-width" : "--window-center", "DICOM, NIfTI and PNG (.cfl holds the complex values)");
}

/// Host memory `larmor-cli maps` holds for maps on `out` (the planner's limit, recon::availableHostBytes):
/// the maps of every slice, [out0, out1, out2, coils, slices] complex floats, the copy handed to the .cfl
/// writer (io::toBartImage) and the slice being computed, (2 S + 1) O C 8 bytes. A lower bound: the
/// estimation's own working set comes on top. Refused with one line naming the input and the figures,
/// instead of std::bad_alloc inside the estimation.
void requireMapsMemory(const Dataset& d, const index_t out[3], const std::string& input) {
  const double coils = static_cast<double>(std::max<index_t>(1, d.header.coils));
  const double slices = static_cast<double>(std::max<index_t>(1, d.header.slices));
  const double voxels = static_cast<double>(out[0]) * static_cast<double>(out[1]) * static_cast<double>(out[2]);
  const double need = (2 * slices + 1) * voxels * coils * 8.0;
  const std::uint64_t avail = recon::availableHostBytes();
  if (avail == 0 || need <= static_cast<double>(avail)) return;
  const bool capped = std::getenv("LARMOR_MEMORY_LIMIT") != nullptr;
  throw Error(input + ": coil maps " + std::to_string(out[0]) + "x" + std::to_string(out[1]) + "x" +
              std::to_string(out[2]) + " x " + std::to_string(static_cast<long long>(coils)) + " coils x " +
              std::to_string(static_cast<long long>(slices)) + (slices == 1 ? " slice" : " slices") + " need at least " + recon::bytesText(need) +
              " of host memory, " + recon::bytesText(static_cast<double>(avail)) + " available (" +
              (capped ? "MemAvailable or LARMOR_MEMORY_LIMIT" : "MemAvailable") + "); use a smaller --matrix");
}

/// The reference of `compare`, refused with its file named when it holds no signal (the metrics would
/// say only "the reference image is all zero").
void requireNonZeroReference(const CArray& ref, const std::string& path) {
  for (index_t i = 0; i < ref.size(); ++i)
    if (ref[i] != cfloat(0.f, 0.f)) return;
  throw Error(path + ": the reference image is all zero (" + ref.shape().str() + "); nothing to compare against");
}

/// "all" -> -1, "N" -> N (>= 0); anything else is an Error naming the flag.
int frameIndex(const std::string& flag, const std::string& text) {
  if (text == "all") return -1;
  std::size_t used = 0;
  long v = -1;
  try {
    v = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || v < 0 || v > 65535)
    throw Error(flag + " " + text + ": expected a frame index 0..65535 or 'all'");
  return static_cast<int>(v);
}

void applyFrames(const FrameArgs& f, io::LoadOptions& lo) {
  lo.contrast = frameIndex("--contrast", f.contrast);
  lo.phase = frameIndex("--phase", f.phase);
  lo.repetition = frameIndex("--repetition", f.repetition);
  lo.set = frameIndex("--set", f.set);
}

/// The series' frame dims for `info` and the JSON: values each dim takes, and the frames read.
json framesJson(const io::Series& s) {
  json frames = json::array();
  for (std::size_t i = 0; i < s.keys.size(); ++i) {
    const auto& k = s.keys[i];
    const Header& h = s.frames[i].header;
    json f = {{"contrast", k.contrast}, {"phase", k.phase}, {"repetition", k.repetition}, {"set", k.set},
              {"acceleration", {h.accelerationPe1, h.accelerationPe2}}, {"calibration_lines", h.calibrationLines}};
    if (std::isfinite(s.echoTimeMs[i])) f["echo_time_ms"] = s.echoTimeMs[i];
    if (std::isfinite(s.triggerTimeMs[i])) f["trigger_time_ms"] = s.triggerTimeMs[i];
    frames.push_back(f);
  }
  return frames;
}

}  // namespace

int version() {
  std::cout << "larmor-cli " << versionString() << "\n";
  auto& reg = BackendRegistry::instance();
  const auto devs = reg.devices();
  for (const auto& m : reg.pluginMessages()) std::cout << "plugin: " << m << "\n";
  for (const auto& d : devs) std::cout << "device: " << d.id << " " << d.name << "  [" << d.library << "]\n";
  const std::string why = reg.whyNoGpu();
  if (!why.empty()) std::cout << "no GPU: " << why << "\n";
  return 0;
}

int devices(const std::string& jsonPath) {
  io::checkOutputs({jsonOutput(jsonPath)}, {});
  auto& reg = BackendRegistry::instance();
  const auto devs = reg.devices();
  json list = json::array();
  for (const auto& d : devs) {
    std::cout << std::left << std::setw(8) << d.id << " " << d.name;
    if (d.gpu)
      std::cout << ", " << (d.memoryBytes >> 20) << " MiB, sm_" << d.computeMajor << d.computeMinor << ", "
                << d.multiprocessors << " SMs";
    std::cout << "  [" << d.library << "]\n";
    list.push_back({{"id", d.id}, {"name", d.name}, {"gpu", d.gpu}, {"memory_bytes", d.memoryBytes},
                    {"compute_capability", std::to_string(d.computeMajor) + "." + std::to_string(d.computeMinor)},
                    {"multiprocessors", d.multiprocessors}, {"library", d.library}});
  }
  const std::string why = reg.whyNoGpu();
  if (!why.empty()) std::cout << "no GPU: " << why << "\n";
  writeJson(jsonPath, {{"devices", list}, {"plugins", reg.pluginMessages()}, {"no_gpu_reason", why}});
  return 0;
}

int info(const std::string& file, const std::string& jsonPath, const FrameArgs& frameArgs) {
  io::checkOutputs({jsonOutput(jsonPath)}, {file});
  io::LoadOptions lo;
  applyFrames(frameArgs, lo);
  lo.structureOnly = true;  // ISMRMRD: the samples are checked, not kept (the k-space shape is the header's)
  const io::Series series = io::loadSeries(file, lo);
  const Dataset& d = series.frames.front();
  const Header& h = d.header;
  const Shape kspaceShape =
      d.kspace.empty() ? Shape{h.encoded[0], h.encoded[1], h.encoded[2], h.coils, h.slices} : d.kspace.shape();
  // Every acquisition of the file (a frame holds only its own).
  const std::vector<AcquisitionInfo>& acquisitions = series.acquisitions.empty() ? d.acquisitions : series.acquisitions;
  // The reference is described, not read (ISMRMRD structure only: its shape, not its values).
  const std::optional<Shape> reference = d.reference ? std::optional<Shape>(d.reference->shape()) : series.referenceShape;
  std::map<std::string, int> flagCounts;
  for (const auto& a : acquisitions) flagCounts[describeAcquisitionFlags(a.flags)]++;
  std::cout << file << "\n"
            << "  trajectory   " << toString(h.trajectory) << "\n"
            << "  encoded      " << h.encoded[0] << " x " << h.encoded[1] << " x " << h.encoded[2] << "  FOV "
            << h.encodedFovMm[0] << " x " << h.encodedFovMm[1] << " x " << h.encodedFovMm[2] << " mm\n"
            << "  recon        " << h.recon[0] << " x " << h.recon[1] << " x " << h.recon[2] << "  FOV "
            << h.reconFovMm[0] << " x " << h.reconFovMm[1] << " x " << h.reconFovMm[2] << " mm\n"
            << "  coils        " << h.coils << "\n  slices       " << h.slices << "\n"
            << "  frames       " << series.frames.size() << " read; the file holds " << series.describeDims() << "\n"
            << "  acceleration " << h.accelerationPe1 << " x " << h.accelerationPe2 << ", calibration lines "
            << h.calibrationLines << (series.frames.size() > 1 ? " (frame 0)" : "") << "\n"
            << (std::min({h.acquiredFraction[0], h.acquiredFraction[1], h.acquiredFraction[2]}) < 1
                    ? "  acquired     " + std::to_string(h.acquiredFraction[0]).substr(0, 5) + " x " +
                          std::to_string(h.acquiredFraction[1]).substr(0, 5) + " x " +
                          std::to_string(h.acquiredFraction[2]).substr(0, 5) +
                          " of readout x pe1 x pe2 (partial Fourier / asymmetric echo)\n"
                    : std::string())
            << "  acquisitions " << acquisitions.size() << " (+" << d.noiseScans << " noise scans)\n"
            << "  noise        " << (d.noise ? d.noise->shape().str() + " samples x coils" : std::string("none")) << "\n"
            << "  k-space      " << kspaceShape.str() << (series.frames.size() > 1 ? " per frame" : "") << "\n"
            << "  reference    " << (reference ? reference->str() : std::string("none")) << "\n";
  for (const auto& [flags, n] : flagCounts) std::cout << "    " << std::setw(6) << n << "  " << (flags.empty() ? "-" : flags) << "\n";
  if (series.frames.size() > 1)
    for (std::size_t i = 0; i < series.frames.size(); ++i) {
      const Header& fh = series.frames[i].header;
      std::cout << "  frame " << std::setw(3) << i << "  " << series.keys[i].str() << ": acceleration "
                << fh.accelerationPe1 << " x " << fh.accelerationPe2 << ", calibration lines " << fh.calibrationLines;
      if (std::isfinite(series.echoTimeMs[i])) std::cout << ", TE " << series.echoTimeMs[i] << " ms";
      if (std::isfinite(series.triggerTimeMs[i])) std::cout << ", trigger " << series.triggerTimeMs[i] << " ms";
      std::cout << "\n";
    }
  json twix = nullptr;  // what a Siemens twix file's own headers say (io/twix.hpp)
  if (extension(file) == ".dat") {
    const std::vector<std::string> lines = io::describeTwix(io::inspectTwix(file));
    twix = lines;
    for (const auto& l : lines) std::cout << "  twix " << l << "\n";
  }
  for (const auto& w : d.warnings) std::cerr << "warning: " << w << "\n";
  json flags = json::object();
  for (const auto& [f, n] : flagCounts) flags[f.empty() ? "none" : f] = n;
  writeJson(jsonPath, {{"file", file},
                       {"twix", twix},
                       {"trajectory", toString(h.trajectory)},
                       {"encoded_matrix", {h.encoded[0], h.encoded[1], h.encoded[2]}},
                       {"recon_matrix", {h.recon[0], h.recon[1], h.recon[2]}},
                       {"encoded_fov_mm", {h.encodedFovMm[0], h.encodedFovMm[1], h.encodedFovMm[2]}},
                       {"recon_fov_mm", {h.reconFovMm[0], h.reconFovMm[1], h.reconFovMm[2]}},
                       {"coils", h.coils},
                       {"slices", h.slices},
                       {"acceleration", {h.accelerationPe1, h.accelerationPe2}},
                       {"acquired_fraction", {h.acquiredFraction[0], h.acquiredFraction[1], h.acquiredFraction[2]}},
                       {"calibration_lines", h.calibrationLines},
                       {"acquisitions", acquisitions.size()},
                       {"noise_scans", d.noiseScans},
                       {"noise_shape", d.noise ? json(d.noise->shape().dims()) : json()},
                       {"flag_counts", flags},
                       {"kspace_shape", kspaceShape.dims()},
                       {"has_reference", reference.has_value()},
                       {"dims", {{"contrasts", series.contrasts.size()}, {"phases", series.phases.size()},
                                 {"repetitions", series.repetitions.size()}, {"sets", series.sets.size()}}},
                       {"frames", framesJson(series)}});
  return 0;
}

namespace {

phantom::SimulateSettings simulateSettings(const SimulateArgs& a) {
  phantom::SimulateSettings s;
  s.phantom = a.phantom;
  long m[3];
  parseMatrix(a.matrix, m);
  for (int i = 0; i < 3; ++i) s.matrix[i] = m[i];
  s.slices = a.slices;
  s.coils = a.coils;
  s.trajectory = trajectoryKindFromString(a.traj);
  int accel[2];
  parseAcceleration(a.accel, accel);
  s.accel = accel[0];
  s.accelPe2 = accel[1];
  s.coilRings = a.coilRings;
  s.acs = a.acs;
  s.readoutOversampling = a.oversampling;
  s.noiseSigma = a.noise;
  s.seed = a.seed;
  s.spokes = a.spokes;
  s.readout = a.readout;
  s.interleaves = a.interleaves;
  s.frames = a.frames;
  s.spokesPerFrame = a.spokesPerFrame;
  require(a.noise >= 0 && std::isfinite(a.noise), "--noise must be a finite number >= 0");
  require(a.frames >= 1, "--frames must be at least 1, got " + std::to_string(a.frames));
  require(a.spokesPerFrame == 0 || a.frames > 1, "--spokes-per-frame needs --frames N (N >= 2)");
  return s;
}

/// The frames stacked along BART's TIME dimension (10); one frame as toBartImage gives it.
CArray bartTimeSeries(const std::vector<CArray>& frames) {
  if (frames.size() == 1) return io::toBartImage(frames.front());
  std::vector<index_t> dims(io::kBartTimeDim + 1, 1);
  const Shape& s = frames.front().shape();  // [x, y, z, coils, 1]: slices are refused with frames
  for (std::size_t i = 0; i < 4; ++i) dims[i] = s[i];
  dims[io::kBartTimeDim] = static_cast<index_t>(frames.size());
  CArray out{Shape(dims)};
  for (std::size_t f = 0; f < frames.size(); ++f)
    std::copy(frames[f].data(), frames[f].data() + frames[f].size(), out.data() + frames[f].size() * static_cast<index_t>(f));
  return out;
}

/// --traj-output: BART's [3, readout, profiles] (cycles per FOV, real), frames along TIME (10).
void writeSimulatedTrajectory(const std::string& path, const std::vector<Dataset>& frames, TrajectoryKind kind) {
  require(frames.front().trajectory.size() > 0, "--traj-output: " + toString(kind) + " data has no trajectory file (Cartesian)");
  std::vector<CArray> t;
  for (const Dataset& d : frames) {
    CArray c(d.trajectory.shape());
    for (index_t i = 0; i < c.size(); ++i) c[i] = cfloat(d.trajectory[i], 0.f);
    t.push_back(std::move(c));
  }
  io::writeCfl(path, bartTimeSeries(t));
}

}  // namespace

int simulate(const SimulateArgs& a) {
  const phantom::SimulateSettings s = simulateSettings(a);
  const std::string ext = extension(a.output);
  require(ext == ".h5" || ext == ".cfl",
          a.output + ": simulate writes ISMRMRD (.h5) or BART k-space (.cfl, without header or truth)");
#ifndef LARMOR_HAVE_IO
  require(ext == ".cfl", a.output + ": this build has no ISMRMRD support (LARMOR_IO=OFF); write .cfl");
#endif
  io::PlannedOutput kspace;
  kspace.path = a.output;
  kspace.role = io::OutputRole::Kspace;
  // Cartesian k-space: readout (oversampled) x pe1 x pe2 x coils x slices complex floats (per frame); others
  // are of the same order.
  kspace.bytes = static_cast<std::uintmax_t>(static_cast<double>(s.matrix[0]) * std::max(1.f, a.oversampling) *
                                             static_cast<double>(s.matrix[1]) * static_cast<double>(std::max<index_t>(1, s.matrix[2])) *
                                             std::max(1, a.coils) * std::max(1, a.slices) * 8.0 * std::max(1, a.frames)) + (1u << 20);
  io::PlannedOutput trajOut = jsonOutput(a.trajOutput);
  trajOut.role = io::OutputRole::Kspace;
  require(a.trajOutput.empty() || s.trajectory != TrajectoryKind::Cartesian,
          "--traj-output: " + toString(s.trajectory) + " data has no trajectory file (Cartesian)");
  // Non-Cartesian k-space in a .cfl without its trajectory reads back as a Cartesian array: an image of nothing.
  require(ext != ".cfl" || s.trajectory == TrajectoryKind::Cartesian || !a.trajOutput.empty(),
          a.output + ": " + toString(s.trajectory) + " k-space in a .cfl needs its trajectory: add --traj-output "
          "TRAJ.cfl (recon then takes --traj TRAJ.cfl), or write .h5, which carries it");
  // Every output new, empty or our own earlier output of its kind (output_safety.hpp), before the work.
  io::checkOutputs({kspace, jsonOutput(a.json), trajOut}, {});
  const phantom::DynamicModel model;
  std::vector<Dataset> frames;
  if (s.frames > 1)
    frames = phantom::simulateSeries(s, model);
  else
    frames.push_back(phantom::simulate(s));
  if (!a.trajOutput.empty()) writeSimulatedTrajectory(a.trajOutput, frames, s.trajectory);
  json settings = toJson(s);
  if (s.frames > 1) settings["dynamics"] = phantom::toJson(model);
  if (s.frames > 1 && s.trajectory != TrajectoryKind::Cartesian) settings["spokesPerFrame"] = frames.front().kspace.shape()[1];
  if (ext == ".cfl") {
    std::vector<CArray> k;
    for (const Dataset& d : frames) k.push_back(d.kspace);
    io::writeCfl(a.output, bartTimeSeries(k));
  } else {
#ifdef LARMOR_HAVE_IO
    io::writeIsmrmrdSeries(frames, a.output, settings);
#endif
  }
  const Dataset& d = frames.front();
  std::cout << "wrote " << a.output << ": " << toString(s.trajectory) << " " << d.kspace.shape().str() << ", "
            << s.coils << " coils" << (s.frames > 1 ? ", " + std::to_string(s.frames) + " frames" : "") << "\n";
  writeJson(a.json, {{"output", a.output}, {"settings", settings}, {"kspace_shape", d.kspace.shape().dims()},
                     {"frames", s.frames}});
  return 0;
}

namespace {

/// The series with its one frame cut into frames as --frames / --spokes-per-frame ask (data/frames.hpp); unchanged
/// when neither is given. A file of several frames already is refused (its frames are its own).
io::Series binned(io::Series s, const BinArgs& b, const std::string& path) {
  if (b.overlap > 0 && b.spokesPerFrame == 0) throw Error("--frame-overlap needs --spokes-per-frame");
  if (!b.any()) return s;
  if (b.frames > 0 && b.spokesPerFrame > 0) throw Error("--frames and --spokes-per-frame: give one of them");
  if (s.frames.size() != 1)
    throw Error(path + ": holds " + s.describeDims() + " already; --frames/--spokes-per-frame cut one continuous acquisition");
  std::vector<Dataset> frames = b.frames > 0 ? binFramesByCount(s.frames.front(), b.frames)
                                             : binFrames(s.frames.front(), b.spokesPerFrame, b.overlap);
  s.keys.clear();
  s.repetitions.clear();
  for (std::size_t t = 0; t < frames.size(); ++t) {
    io::FrameKey k;
    k.repetition = static_cast<int>(t);
    s.keys.push_back(k);
    s.repetitions.push_back(static_cast<int>(t));
  }
  s.echoTimeMs.assign(frames.size(), io::unknownTime());
  s.triggerTimeMs.assign(frames.size(), io::unknownTime());
  s.frames = std::move(frames);
  return s;
}

/// The export's options from the command line.
io::ExportOptions exportOptions(const ReconArgs& a) {
  io::ExportOptions eo;
  eo.anonymize = a.anonymize;
  eo.seriesDescription = a.seriesDescription;
  eo.patientName = a.patientName, eo.patientId = a.patientId, eo.accessionNumber = a.accession;
  eo.studyDescription = a.studyDescription, eo.studyInstanceUid = a.studyUid;
  eo.seriesNumber = a.seriesNumber;
  if (!a.components.empty()) eo.components = a.components;
  eo.windowCenter = a.windowCenter;
  eo.windowWidth = a.windowWidth;
  eo.niftiComplex = a.niftiComplex;
  return eo;
}

/// A GPU's first reconstruction in a process loads its kernels, cuFFT's first plan and the libraries' handles
/// (warm_up.hpp: 2.2x a warm gridding, 3.7x a warm CG-SENSE): a tiny reconstruction of the same method runs
/// beside the read, so that the read hides it. Its work is what the first reconstruction would do anyway; the
/// recon waits for it rather than contend with it. None (invalid) on the CPU or under --no-warm-up.
std::future<json> startWarmUp(const ReconArgs& a, const Selection& sel, const recon::ReconSettings& settings) {
  if (!sel.backend->info().gpu || a.noWarmUp) return {};
  recon::WarmUpHint hint;
  const recon::Method m = settings.method;
  hint.nonCartesian = !a.traj.empty() || m == recon::Method::Gridding || m == recon::Method::Tron ||
                      m == recon::Method::Dft;
  hint.threeD = settings.matrix[2] > 1;
  return std::async(std::launch::async, [backend = sel.backend, settings, hint] {
    std::string why;
    const double ms = recon::warmUp(backend, settings, hint, &why);
    json w = {{"ms", ms}};
    if (!why.empty()) w["error"] = why;
    return w;
  });
}

/// The warm-up's record once it is done (null where none ran): its time, how long the recon waited for it
/// beyond the read, why it failed.
json waitForWarmUp(std::future<json>& warm) {
  if (!warm.valid()) return nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  json warmUp = warm.get();
  warmUp["wait_ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return warmUp;
}

/// Each frame's record (time, metrics, convergence; the joint reconstruction's are the first frame's) and, for
/// several frames, a line each on the terminal; the frames' warnings added to `warnings` once each.
json framesRecord(const io::Series& series, const std::vector<recon::ReconResult>& results, bool joint,
                  std::vector<std::string>& warnings) {
  const std::size_t nFrames = series.frames.size();
  json frames = framesJson(series);
  for (std::size_t f = 0; f < nFrames; ++f) {
    const recon::ReconResult& r = results[f];
    for (const auto& w : r.warnings)
      if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
    if (!joint) frames[f]["total_ms"] = r.timings.totalMilliseconds();
    if (!r.metrics.is_null()) frames[f]["metrics"] = r.metrics;
    if (!r.convergence.is_null() && !joint) frames[f]["convergence"] = r.convergence;
    if (nFrames > 1) {
      std::cout << "  frame " << std::setw(3) << f << "  " << series.keys[f].str() << ":";
      if (!joint) std::cout << " " << std::fixed << std::setprecision(1) << r.timings.totalMilliseconds() << " ms";
      if (r.metrics.contains("percent_error"))
        std::cout << " " << std::fixed << std::setprecision(2) << r.metrics["percent_error"].get<double>()
                  << " % error vs reference";
      std::cout << "\n";
    }
  }
  return frames;
}

/// What was written and how it went (the first frame's): the files, the device, the stages, the convergence,
/// the noise whitening and the metrics against the reference.
void printSummary(const ReconArgs& a, const recon::ReconResult& r, const io::ExportReport& rep, std::size_t nFrames) {
  std::cout << "wrote " << a.output << " (" << io::toString(rep.kind) << ", " << rep.files.size() << " file"
            << (rep.files.size() == 1 ? "" : "s") << ") " << r.image.shape().str()
            << (nFrames > 1 ? " x " + std::to_string(nFrames) + " frames" : std::string()) << " on " << r.device
            << " (" << r.deviceName << ")\n";
  printTimings(r.timings);
  printConvergence(r.convergence);
  if (r.provenance.contains("noise_whitening"))
    std::cout << "  " << r.provenance["noise_whitening"]["report"].get<std::string>() << "\n";
  if (r.metrics.contains("percent_error"))
    std::cout << "  vs reference" << (nFrames > 1 ? " (frame 0)" : "") << ": " << std::fixed << std::setprecision(2)
              << r.metrics["percent_error"].get<double>() << " % error, PSNR "
              << (r.metrics["psnr_db"].is_number() ? std::to_string(r.metrics["psnr_db"].get<double>()).substr(0, 6)
                                                     : std::string("inf"))
              << " dB, SSIM " << std::setprecision(3) << r.metrics["ssim"].get<double>() << "\n";
}

/// The --json sidecar (the first frame's provenance with the outputs, the frames, the read and the warm-up)
/// and the --save-settings file.
void writeSidecars(const ReconArgs& a, const recon::ReconResult& r, const io::ExportReport& rep,
                   const io::Series& series, const json& frames, const json& load, const json& warmUp,
                   const std::vector<std::string>& warnings) {
  json stats = r.provenance;
  stats["output"] = a.output;
  stats["files"] = rep.files;
  if (!r.convergence.is_null()) stats["convergence"] = r.convergence;
  stats["image_shape"] = r.image.shape().dims();
  stats["frames"] = frames;
  stats["dims"] = series.describeDims();
  stats["load"] = load;
  if (!warmUp.is_null()) stats["warm_up"] = warmUp;
  if (!warnings.empty()) stats["warnings"] = warnings;
  if (!r.metrics.is_null()) stats["metrics"] = r.metrics;
  // --anonymize covers the sidecar too: no date, host, path or file name (util/provenance.hpp).
  writeJson(a.json, a.anonymize ? anonymizedProvenance(std::move(stats)) : stats);
  // After the reconstruction worked: the settings that made it, for `larmor-cli batch --settings`.
  writeJson(a.saveSettings, batch::settingsFileJson(a.settings, fs::exists(a.traj) ? fs::absolute(a.traj).string() : a.traj));
  if (!a.saveSettings.empty()) std::cout << "wrote " << a.saveSettings << " (settings for larmor-cli batch --settings)\n";
}

}  // namespace

int recon(const ReconArgs& a) {
  io::LoadOptions lo;
  lo.trajectoryPath = a.traj;
  recon::ReconRequest req;
  req.settings = a.settings;
  for (int i = 0; i < 3; ++i) lo.matrix[i] = req.settings.matrix[i];
  req.device = a.device;
  req.settings.keepCoilImages = false;  // only the combined image is written
  recon::settings::validate(req.settings);

  // Decide the output before the work, so a bad path fails fast (and nothing is written).
  const io::ExportOptions eo = exportOptions(a);
  // Output safety (output_safety.hpp): no output is an input (the data, --traj, --ref, --coil-maps FILE) or
  // another output, an existing output is our own earlier one, the folder is writable, a DICOM folder is
  // new, empty or our earlier export, and an explicit --matrix fits the format.
  const std::vector<std::string> inputs = reconInputs(a);
  requireFormatOptions(a);
  io::checkOutputs({imageOutput(a.output, eo, plannedImage(req.settings, nullptr)), jsonOutput(a.json),
                    jsonOutput(a.saveSettings)},
                   inputs);
  // --send: a DICOM output and a node that answers C-ECHO, before the work.
  std::optional<io::DicomNode> pacs;
  if (!a.send.empty()) checkSendTarget(*(pacs = pacsNode(a.send, a.callingAet, a.sendTimeout)), a.output);

  // The device next: `--device cuda` on a machine without one fails before any loading.
  const Selection sel = BackendRegistry::instance().select(a.device);
  if (!sel.notice.empty()) std::cout << "note: " << sel.notice << "\n";
  req.backend = sel.backend;
  // Once the header is read, before the samples (ISMRMRD): a --matrix that does not apply, and the memory
  // the reconstruction would need (resources.hpp), refused before a large file is read. recon::run
  // checks both again with the loaded data.
  lo.beforeData = [&](const Dataset& headerOnly) {
    recon::requireMatrixFitsData(headerOnly, req.settings);
    (void)recon::planMemory(headerOnly, req.settings, sel.backend->info(), a.device == "auto", false);
  };

  std::future<json> warm = startWarmUp(a, sel, req.settings);
  applyFrames(a.frames, lo);
  const auto loadStart = std::chrono::steady_clock::now();
  const io::Series series = binned(io::loadSeries(a.input, lo), a.bin, a.input);
  const json warmUp = waitForWarmUp(warm);
  // The read as its own stage (the recon's stages come from recon::run): its time and the process's peak
  // resident memory when it ends (the arrays read, before any reconstruction work).
  const json load = {{"ms", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - loadStart).count()},
                     {"peak_resident_bytes", recon::peakResidentBytes()}};
  const Dataset& d = series.frames.front();
  const std::size_t nFrames = series.frames.size();
  // Again with the image size the dataset gives: format limits and free disk space, before the work.
  Shape planned = plannedImage(req.settings, &d);
  if (nFrames > 1) planned = Shape{planned[0], planned[1], planned[2], 1, planned[4] * static_cast<index_t>(nFrames)};
  io::checkOutputs({imageOutput(a.output, eo, planned), jsonOutput(a.json), jsonOutput(a.saveSettings)}, inputs);
  if (nFrames > 1) std::cout << a.input << ": " << nFrames << " frames (" << series.describeDims() << ")\n";
  // Every frame with the same settings on the same backend: jointly with a temporal prior (cs on a series), else
  // one by one.
  const bool joint = recon::jointOverFrames(series.frames, req.settings);
  if (joint) std::cout << "  the " << nFrames << " frames jointly (--frames-independent: one by one)\n";
  std::vector<recon::ReconResult> results = recon::runFrames(series.frames, req);
  std::vector<std::string> warnings = d.warnings;
  const json frames = framesRecord(series, results, joint, warnings);
  const recon::ReconResult& r = results.front();
  for (const auto& w : warnings) std::cerr << "warning: " << w << "\n";

  const io::ExportReport rep = io::writeSeriesOutput(a.output, results, series, eo);
  printSummary(a, r, rep, nFrames);
  writeSidecars(a, r, rep, series, frames, load, warmUp, warnings);
  return pacs ? sendSeries(*pacs, rep.files, false) : 0;
}

int maps(const MapsArgs& a) {
  namespace st = recon::settings;
  recon::ReconSettings s;
  s.method = recon::Method::Cg;
  st::set(s, st::find("iterative.coil_maps"), a.coilMaps);
  st::set(s, st::find("iterative.calibration_size"), std::to_string(a.calibrationSize));
  st::set(s, st::find("iterative.espirit_crop"), std::to_string(a.crop));
  if (!a.matrix.empty()) st::set(s, st::find("matrix"), a.matrix);
  const std::string e = extension(a.output);
  require(e == ".cfl" || e == ".hdr" || e.empty(), "--output " + a.output + ": the maps are written as a BART .cfl");
  // Output safety (output_safety.hpp), before the work: neither output is the data or the trajectory, and
  // each is new, empty or our own earlier output of its kind.
  io::PlannedOutput mapsOut;
  mapsOut.path = a.output;
  mapsOut.role = io::OutputRole::Kspace;  // a .cfl pair (a bare path is completed to one)
  io::checkOutputs({mapsOut, jsonOutput(a.json)}, {a.input, a.traj});
  const Selection sel = BackendRegistry::instance().select(a.device);
  if (!sel.notice.empty()) std::cout << "note: " << sel.notice << "\n";
  io::LoadOptions lo;
  lo.trajectoryPath = a.traj;
  applyFrames(a.frames, lo);
  for (int i = 0; i < 3; ++i) lo.matrix[i] = s.matrix[i];
  // The memory the maps need (requireMapsMemory): from an ISMRMRD header before the samples are read
  // (Cartesian data: a non-Cartesian rank needs the trajectory), then from the loaded dataset.
  lo.beforeData = [&](const Dataset& headerOnly) {
    if (headerOnly.header.trajectory != TrajectoryKind::Cartesian) return;
    index_t early[3];
    recon::outputMatrix(headerOnly, s, early);
    requireMapsMemory(headerOnly, early, a.input);
  };
  const Dataset d = io::loadDataset(a.input, lo);
  index_t out[3];
  recon::outputMatrix(d, s, out);
  if (d.header.trajectory != TrajectoryKind::Cartesian && recon::nonCartesianRank(d, out[2]) == 2) out[2] = 1;
  requireMapsMemory(d, out, a.input);
  json info;
  const auto t0 = std::chrono::steady_clock::now();
  const CArray m = recon::coilMaps(*sel.backend, d, out, s, &info);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  io::writeCfl(a.output, io::toBartImage(m));
  const DeviceInfo dev = sel.backend->info();
  std::cout << "wrote " << a.output << " " << m.shape().str() << ": " << info.value("coil_maps", "") << ", calibration "
            << info.value("calibration_region", "-");
  if (info.contains("espirit_kernels")) std::cout << ", kernels " << info["espirit_kernels"].get<std::string>();
  std::cout << ", " << std::fixed << std::setprecision(1) << ms << " ms on " << dev.id << " (" << dev.name << ")\n";
  info["output"] = a.output;
  info["time_ms"] = ms;
  info["device"] = dev.id;
  info["shape"] = m.shape().dims();
  writeJson(a.json, info);
  return 0;
}

int compare(const CompareArgs& a) {
  io::PlannedOutput map;
  map.path = a.map;
  map.role = io::OutputRole::Map;
  io::checkOutputs({map, jsonOutput(a.json)}, {a.ref, a.test});
  CArray ref, test;
  std::string matched;  // DICOM against DICOM: how the images were paired
  if (isDicomSeriesPath(a.ref) && isDicomSeriesPath(a.test)) {
    matched = loadMatchedDicom(a.test, a.ref, test, ref);
    requireNonZeroReference(ref, a.ref);
  } else {
    ref = loadImage(a.ref);
    requireNonZeroReference(ref, a.ref);
    test = loadImage(a.test);
  }
  const auto m = quality::compare(test, ref);
  if (!matched.empty()) std::cout << matched << "\n";
  std::cout << std::fixed << std::setprecision(3) << "percent error " << m.percentError << " %\nPSNR          "
            << m.psnrDb << " dB\nSSIM          " << std::setprecision(4) << m.ssim << "\nscale         "
            << std::setprecision(6) << m.scale << "\n";
  if (!a.map.empty()) {
    const RArray err = quality::errorMap(test, ref, m.scale);
    io::writePng(a.map, io::renderMosaic(err, 0, 0, io::Colormap::Viridis));
  }
  json j = quality::toJson(m);
  j["reference"] = a.ref;
  j["test"] = a.test;
  if (!matched.empty()) j["matched"] = matched;
  writeJson(a.json, j);
  return 0;
}

int bench(const BenchArgs& a) {
  if (a.list) {
    for (const auto& w : recon::benchWorkloads(a.suite))
      std::cout << std::left << std::setw(24) << w.name << w.title << (w.gpuOnly ? " [GPU only]" : "") << "\n";
    return 0;
  }
  std::vector<io::PlannedOutput> outputs;
  if (!a.json.empty()) outputs.push_back(jsonOutput(a.json));
  if (!a.chart.empty()) {
    require(extension(a.chart) == ".png", a.chart + ": --chart writes a PNG; give a .png file name");
    io::PlannedOutput chart;
    chart.path = a.chart;
    chart.role = io::OutputRole::Map;
    chart.image = Shape{1400, 800, 1};
    outputs.push_back(chart);
  }
  io::checkOutputs(outputs, {});
  recon::BenchOptions o;
  o.suite = a.suite;
  o.device = a.device;
  o.quick = a.quick;
  o.only = a.workloads;
  o.log = [](const std::string& line) { std::cerr << line << "\n"; };
  const json results = recon::runBenchSuite(o);
  std::cout << recon::formatBenchTable(results) << std::flush;
  writeJson(a.json, results);
  if (!a.chart.empty()) recon::writeBenchChart(a.chart, results);
  const auto& errors = results.at("errors");
  if (!errors.empty())
    throw Error(std::to_string(errors.size()) + " workload(s) failed, first " + errors[0].value("name", "?") + ": " +
                errors[0].value("error", "?"));
  return 0;
}

}  // namespace larmor::cli
