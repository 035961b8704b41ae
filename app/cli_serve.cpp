// larmor-cli serve: a reconstruction server speaking the ISMRMRD streaming protocol (docs/streaming.md). One
// thread per connection reads its messages (larmor/stream/protocol.hpp), collects its acquisitions into slices
// (larmor/stream/assembler.hpp) and reconstructs each slice with recon::run as soon as its last acquisition
// arrives, sending the image back at once. One warm backend per device (--devices: every GPU, or CPU workers),
// opened at start, serves every connection: each finished slice goes to the first idle device
// (larmor/stream/device_pool.hpp), so one scan's slices may run on several devices at once, and each connection
// sends its images back in the order its slices finished (cli_serve_outbox.hpp). A bad message costs its
// connection a TEXT message "error: ..." and a CLOSE, never the server. --send: once a connection ends, its
// scan's images also go to a PACS as one DICOM series (larmor/stream/pacs_series.hpp); a PACS that refuses or
// does not answer is a line in that connection's log.
#include "cli_serve.hpp"

#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

#include "larmor/backend/registry.hpp"
#include "larmor/util/error.hpp"
#ifdef LARMOR_HAVE_IO
#include <nlohmann/json.hpp>

#include "cli_pacs.hpp"
#include "cli_serve_outbox.hpp"

#include "larmor/batch/settings_file.hpp"
#include "larmor/io/cfl.hpp"
#include "larmor/io/export.hpp"
#include "larmor/io/output_safety.hpp"
#include "larmor/recon/operator_cache.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/recon/warm_up.hpp"
#include "larmor/stream/assembler.hpp"
#include "larmor/stream/device_pool.hpp"
#include "larmor/stream/images.hpp"
#include "larmor/stream/pacs_series.hpp"
#include "larmor/stream/socket.hpp"
#endif

namespace larmor::cli {

CLI::App* addServeCommand(CLI::App& app, ServeArgs& a) {
  auto* cmd = app.add_subcommand("serve", "Reconstruction server speaking the ISMRMRD streaming protocol (docs/streaming.md)");
  cmd->add_option("--port", a.port, "TCP port (default 9002; 0: any free port, printed)")->check(CLI::Range(0, 65535));
  cmd->add_option("--listen", a.listen, "Address to listen on (default 127.0.0.1; 0.0.0.0: every interface)");
  cmd->add_option("--settings", a.settings, "Settings JSON (recon --save-settings) for preset configurations");
  cmd->add_option("--output-dir", a.outputDir, "Also write every image as a .cfl here");
  cmd->add_option("--devices", a.devices, "all (every GPU, else the CPU) | cuda:0,cuda:1,... | cpu | cpu,cpu (CPU workers)");
  cmd->add_option("--device", a.devices, "One device: auto|cpu|cuda[:N] (as --devices)");
  cmd->add_option("--idle-timeout", a.idleTimeout, "Seconds a connection may stay silent (default 60)")
      ->check(CLI::Range(1, 86400));
  cmd->add_option("--max-connections", a.maxConnections, "Connections served at once (default 32)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--max-scan-memory", a.maxScanGiB, "GiB of unfinished slices one connection may hold (default 4)")
      ->check(CLI::Range(0.001, 1024.0));
  cmd->add_option("--send", a.send, "Also send each scan's images to a PACS as one DICOM series: AET@host:port (C-STORE)");
  cmd->add_option("--calling-aet", a.callingAet, "--send: our AE title (default LARMOR)");
  cmd->add_option("--send-timeout", a.sendTimeout, "--send: seconds to wait for the PACS (default 10)");
  return cmd;
}

CLI::App* addStreamCommand(CLI::App& app, StreamArgs& a) {
  auto* cmd = app.add_subcommand("stream", "Stream a raw-data file to a reconstruction server and write the images");
  cmd->add_option("FILE", a.input, "ISMRMRD .h5, Siemens twix .dat, or BART .cfl k-space (--traj for non-Cartesian)")->required();
  cmd->add_option("--traj", a.traj, "Trajectory of a .cfl or .dat FILE, as recon --traj takes it");
  cmd->add_flag("--pace", a.pace, "Send at the acquisition's own pace (its time stamps, 2.5 ms ticks), not at full speed");
  cmd->add_option("--tr", a.tr, "With --pace: ms per acquisition where the file has no time stamps")
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--to", a.to, "host:port of the server")->required();
  cmd->add_option("--config", a.config, "Configuration name: default.xml, a method (gridding, cg, ...), or a settings .json on the server");
  cmd->add_option("--output", a.output, "OUT.cfl: the images [x, y, z, 1, slices]");
  cmd->add_option("--timeout", a.timeout, "Seconds to wait for the server (default 120)")->check(CLI::Range(1, 86400));
  return cmd;
}

#ifndef LARMOR_HAVE_IO
int serve(const ServeArgs&) { throw Error("serve: this build has no ISMRMRD support (LARMOR_IO=OFF)"); }
#else
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// What a connection's configuration chose: the settings, and whether the method follows the header.
struct Config {
  recon::ReconSettings settings;
  bool fitMethod = true;  ///< a preset: Cartesian data keep the method, non-Cartesian data get gridding for fft
  std::string name;
};

class Server {
 public:
  explicit Server(const ServeArgs& a) : args_(a) {
    if (!a.settings.empty()) base_ = batch::readSettingsFile(a.settings).settings;
    recon::settings::validate(base_);
    if (!a.outputDir.empty())
      require(fs::is_directory(a.outputDir), "--output-dir " + a.outputDir + ": not a folder");
    // A malformed node stops the server; a PACS that does not answer is each scan's own error, later.
    if (!a.send.empty()) pacs_ = pacsNode(a.send, a.callingAet, a.sendTimeout);
    std::string notice;
    std::vector<stream::PoolDevice> devices = stream::openDevices(a.devices, &notice);
    if (!notice.empty()) log("note: " + notice);
    warmUp(devices);
    std::string names;
    for (const auto& d : devices) names += (names.empty() ? "" : ", ") + d.label;
    log("devices: " + names);
    if (pacs_) log("each scan's images also go to the PACS " + io::toString(*pacs_) + " as one DICOM series");
    pool_ = std::make_unique<stream::DevicePool>(std::move(devices));
  }

  void run() {
    stream::Listener listener(args_.listen, args_.port);
    log("larmor-cli serve: listening on " + args_.listen + ":" + std::to_string(listener.port()));
    for (;;) {
      std::string peer;
      const int fd = listener.accept(peer);
      const int id = ++connections_;
      try {
        std::thread([this, fd, peer, id] { serveConnection(fd, peer, id); }).detach();
      } catch (const std::system_error& e) {  // no thread to be had: this connection is refused, not the server
        stream::SocketStream refused(fd, peer, 1000);
        log("connection " + std::to_string(id) + " (" + peer + "): refused (" + e.what() + ")");
      }
    }
  }

 private:
  // A GPU's first reconstruction pays for library handles, plans and kernel loads (recon/warm_up.hpp): paid
  // here, before the first scan, for Cartesian and non-Cartesian data.
  // Every GPU at the same time, each on its own thread.
  void warmUp(const std::vector<stream::PoolDevice>& devices) {
    std::vector<std::thread> threads;
    for (const auto& d : devices)
      if (d.gpu) threads.emplace_back([this, &d] { warmUp(d); });
    for (auto& t : threads) t.join();
  }

  void warmUp(const stream::PoolDevice& d) {
    for (bool nonCartesian : {false, true}) {
      recon::ReconSettings s = base_;
      if (nonCartesian && s.method == recon::Method::Fft) s.method = recon::Method::Gridding;
      if (!nonCartesian && s.method != recon::Method::Fft && s.method != recon::Method::Grappa) s.method = recon::Method::Fft;
      recon::WarmUpHint hint;
      hint.nonCartesian = nonCartesian;
      std::string why;
      const double ms = recon::warmUp(d.backend, s, hint, &why);
      log("warm-up of " + d.label + " (" + recon::toString(s.method) + "): " + (why.empty() ? std::to_string(ms) + " ms" : why));
    }
  }

  void log(const std::string& line) {
    const std::lock_guard<std::mutex> lock(logMutex_);
    std::cout << line << std::endl;
  }

  void serveConnection(int fd, const std::string& peer, int id) {
    stream::SocketStream s(fd, peer, args_.idleTimeout * 1000);
    const std::string who = "connection " + std::to_string(id) + " (" + peer + ")";
    const int open = ++open_;
    log(who + ": open");
    std::vector<stream::SeriesSlice> kept;  // what was reconstructed, for --send
    try {
      if (open > args_.maxConnections)
        throw Error("the server is serving " + std::to_string(args_.maxConnections) +
                    " connections (--max-connections); try again later");
      session(s, who, id, kept);
      log(who + ": closed");
    } catch (const std::exception& e) {
      log(who + ": error: " + e.what());
      try {  // tell the client, where it still listens
        stream::writeText(s, stream::kText, std::string("error: ") + e.what());
        stream::writeClose(s);
      } catch (const std::exception&) {
      }
    }
    sendToPacs(std::move(kept), who, id);  // after the client has everything: a slow PACS delays no image
    --open_;
  }

  // --send: the scan's images as one series to the PACS. Whatever goes wrong is this scan's log line.
  void sendToPacs(std::vector<stream::SeriesSlice> kept, const std::string& who, int id) {
    if (!pacs_ || kept.empty()) return;
    const fs::path dir = fs::temp_directory_path() / ("larmor-serve-" + std::to_string(::getpid()) + "-" + std::to_string(id));
    try {
      const io::SendReport rep = io::send(*pacs_, stream::writeScanSeries(dir.string(), std::move(kept)));
      for (const auto& r : rep.results)
        if (!r.ok) log(who + ": PACS: " + fs::path(r.file).filename().string() + ": " + r.message);
      log(who + ": PACS: " + rep.summary() + (rep.allSent() ? "" : " (error: not every instance was stored)"));
    } catch (const std::exception& e) {
      log(who + ": PACS: error: " + e.what());
    }
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }

  // CONFIG_FILE's name: a settings file (.json, as `recon --save-settings` writes), a method name (fft,
  // gridding, cg, cs, grappa, tron, dft; ".xml" allowed), or any other preset name (default.xml, a Gadgetron
  // configuration): the server's settings, the method fitted to the header.
  Config configFor(const std::string& name) const {
    Config c{base_, true, name};
    if (name.size() > 5 && name.substr(name.size() - 5) == ".json") {
      require(fs::is_regular_file(name), "CONFIG_FILE " + name + ": no such settings file on the server");
      c.settings = batch::readSettingsFile(name).settings;
      c.fitMethod = false;
    } else {
      std::string method = name.size() > 4 && name.substr(name.size() - 4) == ".xml" ? name.substr(0, name.size() - 4) : name;
      for (const char* m : {"fft", "gridding", "tron", "dft", "cg", "cs", "grappa"})
        if (method == m) c.settings.method = recon::methodFromString(method), c.fitMethod = false;
    }
    recon::settings::validate(c.settings);
    return c;
  }

  // CONFIG_TEXT: a settings JSON (recon --save-settings' file as text).
  Config configFromText(const std::string& text) const {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const std::exception&) {
      throw Error("CONFIG_TEXT: not a Larmor settings JSON (recon --save-settings writes one)");
    }
    Config c{batch::settingsFromJson(j, "CONFIG_TEXT").settings, false, "CONFIG_TEXT"};
    recon::settings::validate(c.settings);
    return c;
  }

  // A connection's scan: its messages read here, its images sent by its Outbox as the devices finish them.
  void session(stream::SocketStream& s, const std::string& who, int id, std::vector<stream::SeriesSlice>& kept) {
    Outbox::Keep keep;
    if (pacs_)  // on the outbox's thread, which finish() joins before `kept` is read
      keep = [&kept](const OutgoingSlice& o, const SliceOutcome& r) { kept.push_back({o.slice, r.image, r.provenance}); };
    Outbox out(s, 2 * pool_->size() + 2, [this, who](const std::string& line) { log(who + ": " + line); }, keep);
    try {
      readUntilClose(s, who, id, out);
    } catch (const std::exception&) {
      out.finish();  // what was reconstructed goes out first
      if (!out.failure().empty()) throw Error(out.failure());
      throw;
    }
    out.finish();
    if (!out.failure().empty()) throw Error(out.failure());
    stream::writeClose(s);
    log(who + ": " + std::to_string(out.sent()) + " images sent");
  }

  // Reads messages until CLOSE; each finished slice goes to the devices at once.
  void readUntilClose(stream::SocketStream& s, const std::string& who, int id, Outbox& out) {
    Config config = configFor("default.xml");
    std::optional<stream::SliceAssembler> assembler;
    int queued = 0;
    for (;;) {
      stream::Message m;
      try {
        m = stream::readMessage(s);
      } catch (const Error&) {
        if (assembler && assembler->pending() > 0)
          log(who + ": " + std::to_string(assembler->pending()) + " acquisitions of unfinished slices dropped (" +
              std::to_string(queued) + " slices were reconstructed or queued)");
        throw;
      }
      switch (m.id) {
        case stream::kConfigFile: config = configFor(m.text); break;
        case stream::kConfigText: config = configFromText(m.text); break;
        case stream::kHeader:
          assembler.emplace(m.text, "stream from " + s.peer(),
                            static_cast<std::uint64_t>(args_.maxScanGiB * 1024 * 1024 * 1024));
          if (config.fitMethod && assembler->header().trajectory != TrajectoryKind::Cartesian &&
              config.settings.method == recon::Method::Fft)
            config.settings.method = recon::Method::Gridding;
          break;
        case stream::kAcquisition: {
          require(assembler.has_value(), "ACQUISITION before the HEADER message");
          const auto arrived = Clock::now();
          for (auto& slice : assembler->add(std::move(m.acquisition))) submit(out, id, std::move(slice), config, ++queued, arrived);
          break;
        }
        case stream::kClose:
          if (assembler)
            for (auto& slice : assembler->finish()) submit(out, id, std::move(slice), config, ++queued, Clock::now());
          return;
        case stream::kText: log(who + ": client says: " + m.text); break;
        case stream::kWaveform: break;  // read and dropped
        default: throw Error("message id " + std::to_string(m.id) + " is not taken from a client");
      }
    }
  }

  // The slice to the first idle device; its image into the connection's outbox, in order.
  void submit(Outbox& out, int id, stream::FinishedSlice slice, const Config& config, int index,
              Clock::time_point arrived) {
    auto shared = std::make_shared<const stream::FinishedSlice>(std::move(slice));
    auto task = std::make_shared<std::packaged_task<SliceOutcome(stream::PoolDevice&)>>(
        [this, shared, settings = config.settings, id](stream::PoolDevice& d) {
          return reconstruct(d, *shared, settings, id);
        });
    OutgoingSlice o;
    o.result = task->get_future();
    o.slice = shared;
    o.index = index;
    o.comment = "Larmor " + recon::toString(config.settings.method);
    o.arrived = arrived;
    pool_->submit([task](stream::PoolDevice& d) { (*task)(d); });
    out.push(std::move(o));
  }

  // On device `d`'s thread. Written to --output-dir before it is sent: a client gone by then loses nothing.
  SliceOutcome reconstruct(stream::PoolDevice& d, const stream::FinishedSlice& slice, const recon::ReconSettings& settings,
                           int id) {
    recon::ReconRequest req;
    req.dataset = &slice.dataset;
    req.settings = settings;
    req.settings.keepCoilImages = false;
    if (pool_->size() > 1) req.settings.iterative.multiGpu = false;  // each slice stays on its device
    req.device = d.gpu ? d.label : "cpu";
    req.backend = d.backend;
    req.cache = d.cache;  // a scan's slices usually share one trajectory: its operators are built once per device
    const auto t0 = Clock::now();
    recon::ReconResult result = recon::run(req);
    SliceOutcome r{std::move(result.image), d.label, 0, std::move(result.provenance)};
    r.reconMs = msSince(t0);
    if (!args_.outputDir.empty()) writeResult(r.image, slice, id);
    return r;
  }

  // DIR/larmor-CONNECTION-sSLICE-rREP-cCON-pPHASE-tSET.cfl, written atomically, never over a file that is not
  // Larmor's own (output_safety.hpp).
  void writeResult(const CArray& image, const stream::FinishedSlice& slice, int id) {
    const auto& k = slice.key;
    const std::string name = "larmor-" + std::to_string(id) + "-s" + std::to_string(slice.slice) + "-r" +
                             std::to_string(k.repetition) + "-c" + std::to_string(k.contrast) + "-p" +
                             std::to_string(k.phase) + "-t" + std::to_string(k.set) + ".cfl";
    const std::string path = (fs::path(args_.outputDir) / name).string();
    io::requireReplaceable(path, io::OutputRole::Image);
    io::writeCfl(path, io::toBartImage(image));
  }

  ServeArgs args_;
  recon::ReconSettings base_;
  std::unique_ptr<stream::DevicePool> pool_;
  std::optional<io::DicomNode> pacs_;
  std::mutex logMutex_;
  std::atomic<int> connections_{0}, open_{0};
};

}  // namespace

int serve(const ServeArgs& a) {
  Server server(a);
  server.run();
  return 0;
}
#endif

}  // namespace larmor::cli
