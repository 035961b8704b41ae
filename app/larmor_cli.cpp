// larmor-cli: the headless front end. Parses the command line (contract in ARCHITECTURE.md) and calls
// the engine; every failure is one line on stderr and a non-zero exit.
#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>

#include "batch.hpp"
#include "cli_commands.hpp"
#include "cli_pacs.hpp"
#include "cli_serve.hpp"
#include "settings_options.hpp"
#include "larmor/util/error.hpp"
#include "larmor/util/openmp_policy.hpp"
#include "larmor/util/provenance.hpp"
#include "larmor/util/temp_registry.hpp"

namespace {

// The frame selectors of a series (io/series.hpp), on recon and info.
void addFrameOptions(CLI::App& cmd, larmor::cli::FrameArgs& f) {
  cmd.add_option("--contrast", f.contrast, "Frames: contrast (echo) N or all (default all)");
  cmd.add_option("--phase", f.phase, "Frames: cardiac phase N or all (default all)");
  cmd.add_option("--repetition", f.repetition, "Frames: repetition N or all (default all)");
  cmd.add_option("--set", f.set, "Frames: set N or all (default all)");
}

// Commands that run no OpenMP loops beside other threads keep libgomp's default waiting policy: setting it
// re-executes the process (util/openmp_policy.hpp), ~20 ms of a second start-up (`info` on a large file
// checks its samples on std::threads; the others print or send).
bool needsPassiveOpenMp(int argc, char** argv) {
  if (argc < 2) return false;
  const std::string command = argv[1];
  for (const char* quick : {"info", "devices", "version", "--version", "--help", "-h", "echo", "send", "query", "retrieve"})
    if (command == quick) return false;
  return true;
}

/// Every command's arguments and its CLI11 subcommand, filled by the parser, read by dispatch().
struct Commands {
  std::string json;  ///< devices --json, info --json
  CLI::App *version = nullptr, *devices = nullptr, *info = nullptr;
  std::string infoFile;
  larmor::cli::FrameArgs infoFrames;
  CLI::App* simulate = nullptr;
  larmor::cli::SimulateArgs sim;
  CLI::App* recon = nullptr;
  larmor::cli::ReconArgs rec;
  larmor::cli::SettingsOptions reconSettings;  // --method, --matrix, --lambda, ...: the engine's settings table
  CLI::App *echo = nullptr, *send = nullptr, *query = nullptr, *retrieve = nullptr;
  larmor::cli::PacsArgs pacs;  // DICOM network commands (cli_pacs.hpp)
  larmor::cli::QueryArgs qr;
  CLI::App* maps = nullptr;
  larmor::cli::MapsArgs mp;
  CLI::App* compare = nullptr;
  larmor::cli::CompareArgs cmp;
  CLI::App *settings = nullptr, *bench = nullptr;
  larmor::cli::BenchArgs bn;
  CLI::App* batch = nullptr;
  larmor::cli::BatchArgs bat;
  CLI::App *serve = nullptr, *stream = nullptr;
  larmor::cli::ServeArgs srv;
  larmor::cli::StreamArgs str;
};

void addDeviceAndInfoCommands(CLI::App& app, Commands& c) {
  c.version = app.add_subcommand("version", "Print the version, the GPU plugin and the devices found");
  c.devices = app.add_subcommand("devices", "List the CPU and the GPUs Larmor can use");
  c.devices->add_option("--json", c.json, "Write the list as JSON");
  c.info = app.add_subcommand("info", "Describe a raw-data file (header, acquisitions, flags)");
  c.info->add_option("FILE", c.infoFile)->required();
  c.info->add_option("--json", c.json, "Write the description as JSON");
  addFrameOptions(*c.info, c.infoFrames);
}

void addSimulateCommand(CLI::App& app, Commands& c) {
  larmor::cli::SimulateArgs& sim = c.sim;
  auto* simCmd = c.simulate = app.add_subcommand("simulate", "Write analytic multi-coil phantom k-space (ISMRMRD .h5)");
  simCmd->add_option("--phantom", sim.phantom, "Phantom")->check(CLI::IsMember({"shepp-logan"}));
  simCmd->add_option("--matrix", sim.matrix, "N, NxN or NxNxN");
  simCmd->add_option("--coils", sim.coils, "Receive coils")->check(CLI::Range(1, 1024));
  simCmd->add_option("--traj", sim.traj, "cartesian|radial|golden|spiral|stack-of-spirals|radial3d");
  simCmd->add_option("--accel", sim.accel, "Cartesian acceleration R along pe1, or RyxRz along pe1 x pe2 (3D)");
  simCmd->add_option("--acs", sim.acs, "Calibration (ACS) lines when R > 1 (RyxRz: an ACS x ACS centre box)");
  simCmd->add_option("--coil-rings", sim.coilRings, "3D: coil rings along z (0: 2 when pe2 is accelerated, else 1)")
      ->check(CLI::Range(0, 8));
  simCmd->add_option("--spokes", sim.spokes, "Radial spokes");
  simCmd->add_option("--readout", sim.readout, "Samples per readout (non-Cartesian)");
  simCmd->add_option("--interleaves", sim.interleaves, "Spiral interleaves");
  simCmd->add_option("--frames", sim.frames, "Frames of a dynamic phantom (beating, breathing, wash-in): repetitions in .h5, TIME (10) in .cfl")
      ->check(CLI::Range(1, 65536));
  simCmd->add_option("--spokes-per-frame", sim.spokesPerFrame, "Radial/golden with --frames: spokes per frame (default 21)")
      ->check(CLI::Range(0, 1 << 20));
  simCmd->add_option("--slices", sim.slices, "Slices (2D multi-slice)")->check(CLI::Range(1, 4096));
  simCmd->add_option("--oversampling", sim.oversampling, "Cartesian readout oversampling")->check(CLI::Range(1.0, 4.0));
  simCmd->add_option("--noise", sim.noise, "Complex Gaussian noise sigma (per real/imaginary part)");
  simCmd->add_option("--seed", sim.seed, "Noise seed");
  simCmd->add_option("--output", sim.output, "Output file (.h5)")->required();
  simCmd->add_option("--json", sim.json, "Write the settings as JSON");
  simCmd->add_option("--traj-output", sim.trajOutput, "Also write the trajectory as BART .cfl (for recon --traj; needed with non-Cartesian .cfl output)");
}

void addReconCommand(CLI::App& app, Commands& c) {
  larmor::cli::ReconArgs& rec = c.rec;
  auto* reconCmd = c.recon = app.add_subcommand("recon", "Reconstruct images from raw k-space");
  reconCmd->add_option("FILE", rec.input, "ISMRMRD .h5, BART .cfl k-space, Siemens twix .dat")->required();
  reconCmd->add_option("--traj", rec.traj, "BART trajectory .cfl for .cfl k-space or twix .dat; twix also radial:180|radial:360");
  reconCmd->add_option("--device", rec.device, "auto|cpu|cuda[:N]");
  addFrameOptions(*reconCmd, rec.frames);
  reconCmd->add_option("--frames", rec.bin.frames, "Cut a continuous non-Cartesian acquisition into N frames (acquisition order)")
      ->check(CLI::Range(1, 1 << 20));
  reconCmd->add_option("--spokes-per-frame", rec.bin.spokesPerFrame, "Cut it into frames of K consecutive spokes/interleaves")
      ->check(CLI::Range(1, 1 << 24));
  reconCmd->add_option("--frame-overlap", rec.bin.overlap, "With --spokes-per-frame: spokes shared by consecutive frames (sliding window)")
      ->check(CLI::Range(0, 1 << 24));
  c.reconSettings.addTo(*reconCmd);
  reconCmd->add_option("--output", rec.output, "OUT.cfl | OUT.png | OUT.nii | DIR/ (DICOM series)")->required();
  reconCmd->add_flag("--anonymize", rec.anonymize, "DICOM: basic de-identification profile");
  reconCmd->add_option("--series-description", rec.seriesDescription, "DICOM SeriesDescription");
  reconCmd->add_option("--patient-name", rec.patientName, "DICOM PatientName, e.g. DOE^JANE (default: the raw data's)");
  reconCmd->add_option("--patient-id", rec.patientId, "DICOM PatientID (default: the raw data's)");
  reconCmd->add_option("--accession", rec.accession, "DICOM AccessionNumber");
  reconCmd->add_option("--study-description", rec.studyDescription, "DICOM StudyDescription (default: the raw data's)");
  reconCmd->add_option("--study-uid", rec.studyUid, "DICOM StudyInstanceUID, to add a series to an exported study");
  reconCmd->add_option("--series-number", rec.seriesNumber, "DICOM SeriesNumber (default 1 + component)")
      ->check(CLI::Range(1, 99999));
  reconCmd->add_option("--component", rec.components, "DICOM series: magnitude|phase|real|imaginary (repeatable)");
  reconCmd->add_option("--window-center", rec.windowCenter, "Display window centre (DICOM/NIfTI); 0 = automatic");
  reconCmd->add_option("--window-width", rec.windowWidth, "Display window width; 0 = automatic");
  reconCmd->add_flag("--nifti-complex", rec.niftiComplex, "NIfTI: complex64 voxels instead of magnitude");
  reconCmd->add_option("--json", rec.json, "Write timings, device, metrics, settings as JSON");
  reconCmd->add_option("--send", rec.send, "Then send the DICOM series to a PACS: AET@host:port (C-STORE)");
  reconCmd->add_option("--calling-aet", rec.callingAet, "--send: our AE title (default LARMOR)");
  reconCmd->add_option("--send-timeout", rec.sendTimeout, "--send: seconds to wait for the PACS (default 10)");
  reconCmd->add_flag("--no-warm-up", rec.noWarmUp,
                     "GPU: no tiny reconstruction beside the read to load kernels and libraries (time a cold start)");
  reconCmd->add_option("--save-settings", rec.saveSettings, "Write these settings as JSON for `larmor-cli batch --settings`");
}

void addPacsCommands(CLI::App& app, Commands& c) {
  larmor::cli::PacsArgs& pacs = c.pacs;
  auto* echoCmd = c.echo = app.add_subcommand("echo", "Check that a PACS answers (DICOM C-ECHO)");
  echoCmd->add_option("NODE", pacs.node, "AET@host:port")->required();
  auto* sendCmd = c.send = app.add_subcommand("send", "Send DICOM files or series directories to a PACS (C-STORE)");
  sendCmd->add_option("FILES", pacs.paths, "DICOM files, or directories of .dcm files")->required();
  sendCmd->add_option("--to", pacs.node, "AET@host:port")->required();
  larmor::cli::QueryArgs& qr = c.qr;
  auto* queryCmd = c.query = app.add_subcommand("query", "Find a patient's studies or series on a PACS (C-FIND)");
  queryCmd->add_option("--patient-id", qr.filters.patientId, "PatientID");
  queryCmd->add_option("--patient-name", qr.filters.patientName, "PatientName, e.g. DOE^JANE or DOE*");
  queryCmd->add_option("--study-date", qr.filters.studyDate, "StudyDate YYYYMMDD or a range YYYYMMDD-YYYYMMDD");
  queryCmd->add_option("--modality", qr.filters.modality, "Modality, e.g. MR");
  queryCmd->add_option("--accession", qr.filters.accession, "AccessionNumber");
  queryCmd->add_option("--study", qr.filters.studyUid, "StudyInstanceUID: only this study");
  queryCmd->add_option("--level", qr.level, "study|series (default series)");
  queryCmd->add_option("--json", qr.json, "Write the matches as JSON (- for standard output)");
  auto* retrieveCmd = c.retrieve = app.add_subcommand("retrieve", "Fetch a series from a PACS into a new folder (C-GET)");
  retrieveCmd->add_option("--series", qr.series, "SeriesInstanceUID")->required();
  retrieveCmd->add_option("--study", qr.study, "StudyInstanceUID (default: looked up)");
  retrieveCmd->add_option("--output-dir", qr.outputDir, "A new or empty folder for the series' .dcm files")->required();
  for (auto* cmd : {queryCmd, retrieveCmd}) cmd->add_option("--pacs", pacs.node, "AET@host:port")->required();
  for (auto* cmd : {echoCmd, sendCmd, queryCmd, retrieveCmd}) {
    cmd->add_option("--calling-aet", pacs.callingAet, "Our AE title (default LARMOR)");
    cmd->add_option("--timeout", pacs.timeout, "Seconds to wait for the PACS (default 10)");
  }
}

void addMapsAndCompareCommands(CLI::App& app, Commands& c) {
  larmor::cli::MapsArgs& mp = c.mp;
  auto* mapsCmd = c.maps = app.add_subcommand("maps", "Estimate coil sensitivity maps (ESPIRiT or Walsh) and write a BART .cfl");
  mapsCmd->add_option("FILE", mp.input, "ISMRMRD .h5, BART .cfl k-space, Siemens twix .dat")->required();
  mapsCmd->add_option("--traj", mp.traj, "BART trajectory .cfl for .cfl k-space or twix .dat; twix also radial:180|radial:360");
  mapsCmd->add_option("--output", mp.output, "OUT.cfl: the maps [x, y, z, coils] (slices in BART's dimension 13)")
      ->required();
  mapsCmd->add_option("--coil-maps", mp.coilMaps, "espirit|walsh")->check(CLI::IsMember({"espirit", "walsh", "estimate"}));
  mapsCmd->add_option("--calibration-size", mp.calibrationSize, "Calibration region per dimension (BART ecalib -r)");
  mapsCmd->add_option("--espirit-crop", mp.crop, "ESPIRiT: zero where the eigenvalue < this (BART ecalib -c)");
  mapsCmd->add_option("--matrix", mp.matrix, "Output matrix N, NxN or NxNxN (default: the header's)");
  mapsCmd->add_option("--device", mp.device, "auto|cpu|cuda[:N]");
  mapsCmd->add_option("--json", mp.json, "Write what was done and the time as JSON");
  addFrameOptions(*mapsCmd, mp.frames);

  larmor::cli::CompareArgs& cmp = c.cmp;
  auto* compareCmd = c.compare = app.add_subcommand("compare", "Percent error, PSNR and SSIM of an image against a reference");
  compareCmd->add_option("--ref", cmp.ref, "Reference image (.cfl, a DICOM series' .dcm file or folder, NIfTI .nii/.nii.gz, or .h5 with a reference)")->required();
  compareCmd->add_option("--test", cmp.test, "Test image (.cfl, .nii, or a DICOM series: matched to a DICOM reference by geometry and frame)")->required();
  compareCmd->add_option("--map", cmp.map, "Write the error map as PNG");
  compareCmd->add_option("--json", cmp.json, "Write the metrics as JSON");
}

void addSettingsAndBenchCommands(CLI::App& app, Commands& c) {
  larmor::cli::BenchArgs& bn = c.bn;
  c.settings = app.add_subcommand("settings", "Print the reference of every reconstruction setting (Markdown)");
  auto* benchCmd = c.bench = app.add_subcommand("bench", "Benchmark the seed workloads on a device (docs/benchmarks.md)");
  benchCmd->add_option("--suite", bn.suite, "Suite")->check(CLI::IsMember({"seeds"}));
  benchCmd->add_option("--device", bn.device, "auto|cpu|cuda[:N]");
  benchCmd->add_flag("--quick", bn.quick, "Fewer repetitions, smaller sizes: about a minute");
  benchCmd->add_option("--workload", bn.workloads, "Run only these (NAME[,NAME]; --list shows them)")->delimiter(',');
  benchCmd->add_flag("--list", bn.list, "List the workloads and exit");
  benchCmd->add_option("--json", bn.json, "Write the results as JSON (schema in docs/benchmarks.md)");
  benchCmd->add_option("--chart", bn.chart, "Write a bar chart (.png)");
}

/// Parses the command line; an exit code when the run ends here (help, version, a parse error: one line).
std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line and exit 1 like every other error (CLI11 prints two lines and exits 104/105/...).
    std::string what = e.what();
    for (auto& c : what)
      if (c == '\n') c = ' ';
    std::cerr << "larmor-cli: " << what << " (run with --help for the options)\n";
    return 1;
  }
  return std::nullopt;
}

/// Runs the command that was given. Every failure is one line on stderr and a non-zero exit.
int dispatch(Commands& c) {
  using namespace larmor::cli;
  try {
    if (*c.version) return version();
    if (*c.devices) return devices(c.json);
    if (*c.info) return info(c.infoFile, c.json, c.infoFrames);
    if (*c.simulate) return simulate(c.sim);
    if (*c.recon) {
      c.reconSettings.apply(c.rec.settings);
      return recon(c.rec);
    }
    if (*c.compare) return compare(c.cmp);
    if (*c.maps) return maps(c.mp);
    if (*c.settings) {
      std::cout << larmor::cli::settingsReferenceMarkdown();
      return 0;
    }
    if (*c.bench) return bench(c.bn);
    if (*c.echo) return echoCommand(c.pacs);
    if (*c.send) return sendCommand(c.pacs);
    if (*c.query) return queryCommand(c.pacs, c.qr);
    if (*c.retrieve) return retrieveCommand(c.pacs, c.qr);
    if (*c.batch) return batch(c.bat);
    if (*c.serve) return serve(c.srv);
    if (*c.stream) return stream(c.str);
  } catch (const larmor::Cancelled&) {
    std::cerr << "larmor-cli: cancelled\n";
    return 130;
  } catch (const std::exception& e) {
    std::cerr << "larmor-cli: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (needsPassiveOpenMp(argc, argv)) larmor::usePassiveOpenMpWait(argv);
  CLI::App app{"larmor-cli: MRI reconstruction on the CPU or a CUDA GPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "larmor-cli " + larmor::versionString());
  Commands c;  // the subcommands in the order --help lists them
  addDeviceAndInfoCommands(app, c);
  addSimulateCommand(app, c);
  addReconCommand(app, c);
  addPacsCommands(app, c);
  addMapsAndCompareCommands(app, c);
  addSettingsAndBenchCommands(app, c);
  c.batch = larmor::cli::addBatchCommand(app, c.bat);
  c.serve = larmor::cli::addServeCommand(app, c.srv);
  c.stream = larmor::cli::addStreamCommand(app, c.str);
  if (const auto exit = parse(app, argc, argv)) return *exit;
  // SIGINT/SIGTERM/SIGHUP remove the temporaries of a write in progress (docs/reliability.md).
  larmor::installTempCleanupOnSignals();
  return dispatch(c);
}
