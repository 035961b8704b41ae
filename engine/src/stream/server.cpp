// The streaming reconstruction server (larmor/stream/server.hpp): the listening thread, one thread per
// connection reading its messages until CLOSE, each finished slice reconstructed with recon::run on the first
// idle device, the images back through the connection's Outbox, and each image to the PACS as it is made.
// stop() shuts the listening socket and every connection's reads down, so each thread ends and is joined.
#include "larmor/stream/server.hpp"

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "larmor/batch/settings_file.hpp"
#include "larmor/io/cfl.hpp"
#include "larmor/io/export.hpp"
#include "larmor/io/output_safety.hpp"
#include "larmor/recon/dynamic.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/recon/warm_up.hpp"
#include "larmor/stream/device_pool.hpp"
#include "larmor/stream/outbox.hpp"
#include "larmor/stream/pacs_series.hpp"
#include "larmor/stream/socket.hpp"
#include "larmor/util/error.hpp"

namespace larmor::stream {

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

// CONFIG_FILE's name: a settings file (.json, as `recon --save-settings` writes), a method name (fft,
// gridding, cg, cs, grappa, tron, dft; ".xml" allowed: the server's settings with that method and, where it is not
// theirs, the method's defaults), or any other preset name (default.xml, a Gadgetron configuration): the server's
// settings, the method fitted to the header.
Config configFor(const recon::ReconSettings& base, const std::string& name) {
  Config c{base, true, name};
  if (name.size() > 5 && name.substr(name.size() - 5) == ".json") {
    require(fs::is_regular_file(name), "CONFIG_FILE " + name + ": no such settings file on the server");
    c.settings = batch::readSettingsFile(name).settings;
    c.fitMethod = false;
  } else {
    std::string method = name.size() > 4 && name.substr(name.size() - 4) == ".xml" ? name.substr(0, name.size() - 4) : name;
    for (const char* m : {"fft", "gridding", "tron", "dft", "cg", "cs", "grappa"}) {
      if (method != m) continue;
      const recon::Method named = recon::methodFromString(method);
      // Another method than the server's settings': its own defaults (cs's prior and lambda), as `recon --method`.
      if (named != c.settings.method) c.settings.method = named, recon::settings::applyMethodDefaults(c.settings);
      c.fitMethod = false;
    }
  }
  recon::settings::validate(c.settings);
  return c;
}

// CONFIG_TEXT: a settings JSON (recon --save-settings' file as text).
Config configFromText(const std::string& text) {
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

// DIR/larmor-CONNECTION-sSLICE-rREP-cCON-pPHASE-tSET.cfl, written atomically, never over a file that is not
// Larmor's own (output_safety.hpp).
void writeResult(const std::string& dir, const CArray& image, const FinishedSlice& slice, int id) {
  const auto& k = slice.key;
  const std::string name = "larmor-" + std::to_string(id) + "-s" + std::to_string(slice.slice) + "-r" +
                           std::to_string(k.repetition) + "-c" + std::to_string(k.contrast) + "-p" +
                           std::to_string(k.phase) + "-t" + std::to_string(k.set) + ".cfl";
  const std::string path = (fs::path(dir) / name).string();
  io::requireReplaceable(path, io::OutputRole::Image);
  io::writeCfl(path, io::toBartImage(image));
}

// The scan's header as the caller sees it: every slice its encoding limits declare.
std::shared_ptr<const Header> scanHeader(const SliceAssembler& a) {
  auto h = std::make_shared<Header>(a.header());
  if (a.declaredSlices() > 0) h->slices = a.declaredSlices();
  return h;
}

// Whether a scan's slices wait for the scan's end, to be reconstructed with their other frames jointly (cs on 2D
// frames, as recon::runFrames does a file's series): unless the header declares a single frame.
bool holdsFrames(const Config& config, const SliceAssembler& a) {
  const recon::ReconSettings& s = config.settings;
  return s.method == recon::Method::Cs && !s.dynamic.framesIndependent && !a.header().is3D() && a.declaredFrames() != 1;
}

std::uint64_t bytesOf(const Dataset& d) {
  return static_cast<std::uint64_t>(d.kspace.size()) * sizeof(cfloat) +
         static_cast<std::uint64_t>(d.trajectory.size()) * sizeof(float);
}

// A dynamic scan's finished slices, per slice index, until the scan ends (bounded as the unfinished ones are).
struct HeldFrames {
  std::map<int, std::vector<FinishedSlice>> slices;
  std::uint64_t bytes = 0, maxBytes = 0;
  void hold(FinishedSlice s, const std::string& who) {
    bytes += bytesOf(s.dataset);
    require(bytes <= maxBytes, who + ": the dynamic scan's frames held for the joint reconstruction would exceed " +
                                   std::to_string(maxBytes) + " bytes (--max-scan-memory)");
    slices[s.slice].push_back(std::move(s));
  }
};

// What one connection's reader knows while it reads.
struct Connection {
  int id = 0;
  std::string who;  ///< "connection 3 (127.0.0.1:5000)"
  SocketStream* socket = nullptr;
  std::shared_ptr<const Header> scan;
  std::shared_ptr<PacsSeries> pacs;  ///< the scan's series for --send (from its HEADER on)
};

}  // namespace

struct Server::Impl {
  ServerOptions options;
  ServerCallbacks callbacks;
  std::unique_ptr<DevicePool> pool;
  std::unique_ptr<Listener> listener;
  std::thread acceptor;
  std::mutex mutex, logMutex;
  std::condition_variable stopped;
  bool stopping = false;
  std::string failure;  ///< why the listening socket failed ("" while it works)
  std::map<int, std::thread> threads;  ///< the connections' threads; joined when they end, or by stop()
  std::vector<int> ended;              ///< connections whose threads have ended, not joined yet
  std::set<SocketStream*> open;        ///< the connections' sockets, for stop()
  std::atomic<int> connections{0}, serving{0};

  void log(const std::string& line) {
    const std::lock_guard<std::mutex> lock(logMutex);
    if (callbacks.log) callbacks.log(line);
    else std::cout << line << std::endl;
  }

  void openDevices();
  void warmUp(const std::vector<PoolDevice>& devices);
  void warmUp(const PoolDevice& d);
  void acceptLoop();
  void joinEnded();
  void serveConnection(int fd, const std::string& peer, int id);
  void startSeries(Connection& c, const SliceAssembler& a);
  void session(Connection& c);
  void readUntilClose(Connection& c, Outbox& out);
  void submit(Outbox& out, const Connection& c, FinishedSlice slice, const Config& config, int index,
              Clock::time_point arrived);
  void submitFrames(Outbox& out, const Connection& c, std::vector<FinishedSlice> frames, const Config& config, int& queued);
  recon::ReconRequest request(PoolDevice& d, const recon::ReconSettings& settings) const;
  SliceOutcome finished(PoolDevice& d, recon::ReconResult result, double ms, const std::shared_ptr<const FinishedSlice>& slice,
                        const recon::ReconSettings& settings, const Connection& c);
  std::vector<SliceOutcome> reconstructFrames(PoolDevice& d, const std::vector<std::shared_ptr<const FinishedSlice>>& frames,
                                              const recon::ReconSettings& settings, const Connection& c);
  SliceOutcome reconstruct(PoolDevice& d, const std::shared_ptr<const FinishedSlice>& slice,
                           const recon::ReconSettings& settings, const Connection& c);
};

Server::Server(ServerOptions options, ServerCallbacks callbacks) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->callbacks = std::move(callbacks);
  const ServerOptions& o = impl_->options;
  recon::settings::validate(o.settings);
  if (!o.outputDir.empty()) require(fs::is_directory(o.outputDir), "--output-dir " + o.outputDir + ": not a folder");
  impl_->openDevices();
}

Server::~Server() { stop(); }

void Server::Impl::openDevices() {
  std::string notice;
  std::vector<PoolDevice> devices = stream::openDevices(options.devices, &notice);
  if (!notice.empty()) log("note: " + notice);
  warmUp(devices);
  std::string names;
  for (const auto& d : devices) names += (names.empty() ? "" : ", ") + d.label;
  log("devices: " + names);
  if (options.pacs) log("each scan's images also go to the PACS " + io::toString(*options.pacs) + " as one DICOM series");
  pool = std::make_unique<DevicePool>(std::move(devices));
}

// A GPU's first reconstruction pays for library handles, plans and kernel loads (recon/warm_up.hpp): paid
// here, before the first scan, for Cartesian and non-Cartesian data. Every GPU at the same time, each on its
// own thread.
void Server::Impl::warmUp(const std::vector<PoolDevice>& devices) {
  std::vector<std::thread> warming;
  for (const auto& d : devices)
    if (d.gpu) warming.emplace_back([this, &d] { warmUp(d); });
  for (auto& t : warming) t.join();
}

void Server::Impl::warmUp(const PoolDevice& d) {
  for (bool nonCartesian : {false, true}) {
    recon::ReconSettings s = options.settings;
    if (nonCartesian && s.method == recon::Method::Fft) s.method = recon::Method::Gridding;
    if (!nonCartesian && s.method != recon::Method::Fft && s.method != recon::Method::Grappa) s.method = recon::Method::Fft;
    recon::WarmUpHint hint;
    hint.nonCartesian = nonCartesian;
    std::string why;
    const double ms = recon::warmUp(d.backend, s, hint, &why);
    log("warm-up of " + d.label + " (" + recon::toString(s.method) + "): " + (why.empty() ? std::to_string(ms) + " ms" : why));
  }
}

void Server::start() {
  Impl& m = *impl_;
  require(!m.listener, "the server is already listening");
  m.listener = std::make_unique<Listener>(m.options.listen, m.options.port);
  m.log("larmor-cli serve: listening on " + m.options.listen + ":" + std::to_string(m.listener->port()));
  m.acceptor = std::thread([&m] { m.acceptLoop(); });
}

int Server::port() const { return impl_->listener ? impl_->listener->port() : 0; }

void Server::wait() {
  std::unique_lock<std::mutex> lock(impl_->mutex);
  impl_->stopped.wait(lock, [this] { return impl_->stopping || !impl_->failure.empty(); });
  if (!impl_->failure.empty()) throw Error(impl_->failure);
}

void Server::stop() {
  Impl& m = *impl_;
  {
    const std::lock_guard<std::mutex> lock(m.mutex);
    if (m.stopping) return;
    m.stopping = true;
    if (m.listener) m.listener->shutdown();
    for (SocketStream* s : m.open) {  // each reader sees the end of its stream; a stalled client blocks no write
      s->shutdownRead();
      s->shutdownWrite();
    }
  }
  m.stopped.notify_all();
  if (m.acceptor.joinable()) m.acceptor.join();
  std::map<int, std::thread> left;
  {
    const std::lock_guard<std::mutex> lock(m.mutex);
    left.swap(m.threads);
  }
  for (auto& [id, t] : left) t.join();
  m.pool.reset();  // runs what is queued (nothing: every connection waited for its slices), joins the devices
}

void Server::Impl::acceptLoop() {
  for (;;) {
    std::string peer;
    int fd = -1;
    try {
      fd = listener->accept(peer);
    } catch (const std::exception& e) {
      const std::lock_guard<std::mutex> lock(mutex);
      if (stopping) return;
      failure = e.what();  // a listening socket that fails for another reason: nothing more can be served
      log("error: " + failure);
      stopped.notify_all();
      return;
    }
    joinEnded();
    const std::lock_guard<std::mutex> lock(mutex);
    if (stopping) {
      SocketStream refused(fd, peer, 1000);
      return;
    }
    const int id = ++connections;
    try {
      threads.emplace(id, std::thread([this, fd, peer, id] { serveConnection(fd, peer, id); }));
    } catch (const std::system_error& e) {  // no thread to be had: this connection is refused, not the server
      SocketStream refused(fd, peer, 1000);
      log("connection " + std::to_string(id) + " (" + peer + "): refused (" + e.what() + ")");
    }
  }
}

// The threads of the connections that have ended, joined (a long-running server keeps no dead threads).
void Server::Impl::joinEnded() {
  std::vector<std::thread> done;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    for (int id : ended)
      if (auto it = threads.find(id); it != threads.end()) {
        done.push_back(std::move(it->second));
        threads.erase(it);
      }
    ended.clear();
  }
  for (auto& t : done) t.join();
}

void Server::Impl::serveConnection(int fd, const std::string& peer, int id) {
  SocketStream s(fd, peer, options.idleTimeoutS * 1000);
  Connection c{id, "connection " + std::to_string(id) + " (" + peer + ")", &s, nullptr};
  {
    const std::lock_guard<std::mutex> lock(mutex);
    open.insert(&s);
    if (stopping) s.shutdownRead(), s.shutdownWrite();
  }
  const int now = ++serving;
  log(c.who + ": open");
  std::string error;
  try {
    if (now > options.maxConnections)
      throw Error("the server is serving " + std::to_string(options.maxConnections) +
                  " connections (--max-connections); try again later");
    session(c);
    log(c.who + ": closed");
  } catch (const std::exception& e) {
    error = e.what();
    log(c.who + ": error: " + error);
    try {  // tell the client, where it still listens
      writeText(s, kText, std::string("error: ") + e.what());
      writeClose(s);
    } catch (const std::exception&) {
    }
  }
  if (c.pacs) c.pacs->finish();  // the slices still on their way to the PACS, then its summary line
  --serving;
  if (callbacks.ended) callbacks.ended(id, peer, error);
  const std::lock_guard<std::mutex> lock(mutex);
  open.erase(&s);
  ended.push_back(id);
}

// The scan's series for --send: each image goes to the PACS as soon as it is made (pacs_series.hpp), on the
// series' own thread; whatever goes wrong is that slice's log line.
void Server::Impl::startSeries(Connection& c, const SliceAssembler& a) {
  if (!options.pacs || c.pacs) return;
  const fs::path dir = fs::temp_directory_path() / ("larmor-serve-" + std::to_string(::getpid()) + "-" + std::to_string(c.id));
  c.pacs = std::make_shared<PacsSeries>(*options.pacs, dir.string(), a.declaredSlices(),
                                        [this, who = c.who](const std::string& line) { log(who + ": " + line); });
}

// A connection's scan: its messages read here, its images sent by its Outbox as the devices finish them.
void Server::Impl::session(Connection& c) {
  Outbox::Keep keep;
  if (options.pacs)  // on the outbox's thread, in the order the slices finished; c.pacs is made at the HEADER
    keep = [&c](const OutgoingSlice& o, const SliceOutcome& r) {
      if (c.pacs) c.pacs->push({o.slice, r.image, r.provenance});
    };
  Outbox out(*c.socket, 2 * pool->size() + 2, [this, who = c.who](const std::string& line) { log(who + ": " + line); }, keep);
  try {
    readUntilClose(c, out);
  } catch (const std::exception&) {
    out.finish();  // what was reconstructed goes out first
    if (!out.failure().empty()) throw Error(out.failure());
    throw;
  }
  out.finish();
  if (!out.failure().empty()) throw Error(out.failure());
  writeClose(*c.socket);
  log(c.who + ": " + std::to_string(out.sent()) + " images sent");
}

// Reads messages until CLOSE; each finished slice goes to the devices at once.
void Server::Impl::readUntilClose(Connection& c, Outbox& out) {
  Config config = configFor(options.settings, "default.xml");
  std::optional<SliceAssembler> assembler;
  int queued = 0;
  bool joint = false;  // a dynamic cs scan: each slice's frames reconstructed together at the end
  HeldFrames held;
  held.maxBytes = static_cast<std::uint64_t>(options.maxScanGiB * 1024 * 1024 * 1024);
  const auto take = [&](FinishedSlice slice, Clock::time_point arrived) {
    if (joint) held.hold(std::move(slice), c.who);
    else submit(out, c, std::move(slice), config, ++queued, arrived);
  };
  for (;;) {
    Message m;
    try {
      m = readMessage(*c.socket);
    } catch (const Error&) {
      if (assembler && assembler->pending() > 0)
        log(c.who + ": " + std::to_string(assembler->pending()) + " acquisitions of unfinished slices dropped (" +
            std::to_string(queued) + " slices were reconstructed or queued)");
      throw;
    }
    switch (m.id) {
      case kConfigFile: config = configFor(options.settings, m.text); break;
      case kConfigText: config = configFromText(m.text); break;
      case kHeader:
        assembler.emplace(m.text, "stream from " + c.socket->peer(),
                          static_cast<std::uint64_t>(options.maxScanGiB * 1024 * 1024 * 1024));
        c.scan = scanHeader(*assembler);
        startSeries(c, *assembler);
        joint = holdsFrames(config, *assembler);
        if (config.fitMethod && assembler->header().trajectory != TrajectoryKind::Cartesian &&
            config.settings.method == recon::Method::Fft)
          config.settings.method = recon::Method::Gridding;
        break;
      case kAcquisition: {
        require(assembler.has_value(), "ACQUISITION before the HEADER message");
        const auto arrived = Clock::now();
        for (auto& slice : assembler->add(std::move(m.acquisition))) take(std::move(slice), arrived);
        break;
      }
      case kClose:
        if (assembler)
          for (auto& slice : assembler->finish()) take(std::move(slice), Clock::now());
        for (auto& [index, frames] : held.slices) submitFrames(out, c, std::move(frames), config, queued);
        return;
      case kText: log(c.who + ": client says: " + m.text); break;
      case kWaveform: break;  // read and dropped
      default: throw Error("message id " + std::to_string(m.id) + " is not taken from a client");
    }
  }
}

// The slice to the first idle device; its image into the connection's outbox, in order.
void Server::Impl::submit(Outbox& out, const Connection& c, FinishedSlice slice, const Config& config, int index,
                          Clock::time_point arrived) {
  auto shared = std::make_shared<const FinishedSlice>(std::move(slice));
  auto task = std::make_shared<std::packaged_task<SliceOutcome(PoolDevice&)>>(
      [this, shared, settings = config.settings, c](PoolDevice& d) { return reconstruct(d, shared, settings, c); });
  OutgoingSlice o;
  o.result = task->get_future();
  o.slice = shared;
  o.index = index;
  o.comment = "Larmor " + recon::toString(config.settings.method);
  o.arrived = arrived;
  pool->submit([task](PoolDevice& d) { (*task)(d); });
  out.push(std::move(o));
}

// A slice's frames: jointly on the first idle device where recon::runFrames would reconstruct them jointly (their
// images then go out one per frame, in frame order), else each alone as any slice.
void Server::Impl::submitFrames(Outbox& out, const Connection& c, std::vector<FinishedSlice> frames,
                                const Config& config, int& queued) {
  std::stable_sort(frames.begin(), frames.end(), [](const FinishedSlice& a, const FinishedSlice& b) { return a.key < b.key; });
  std::vector<Dataset> data;
  for (const auto& f : frames) data.push_back(f.dataset);
  if (!recon::jointOverFrames(data, config.settings)) {
    for (auto& f : frames) submit(out, c, std::move(f), config, ++queued, Clock::now());
    return;
  }
  data.clear();
  std::vector<std::shared_ptr<const FinishedSlice>> shared;
  for (auto& f : frames) shared.push_back(std::make_shared<const FinishedSlice>(std::move(f)));
  auto promises = std::make_shared<std::vector<std::promise<SliceOutcome>>>(shared.size());
  std::vector<std::future<SliceOutcome>> futures;
  for (auto& p : *promises) futures.push_back(p.get_future());
  pool->submit([this, shared, promises, settings = config.settings, c](PoolDevice& d) {
    try {
      std::vector<SliceOutcome> outcomes = reconstructFrames(d, shared, settings, c);
      for (std::size_t t = 0; t < outcomes.size(); ++t) (*promises)[t].set_value(std::move(outcomes[t]));
    } catch (...) {
      for (auto& p : *promises) p.set_exception(std::current_exception());
    }
  });
  const auto now = Clock::now();
  for (std::size_t t = 0; t < shared.size(); ++t) {
    OutgoingSlice o;
    o.result = std::move(futures[t]);
    o.slice = shared[t];
    o.index = ++queued;
    o.comment = "Larmor " + recon::toString(config.settings.method);
    o.arrived = now;
    out.push(std::move(o));
  }
}

recon::ReconRequest Server::Impl::request(PoolDevice& d, const recon::ReconSettings& settings) const {
  recon::ReconRequest req;
  req.settings = settings;
  req.settings.keepCoilImages = false;
  if (pool->size() > 1) req.settings.iterative.multiGpu = false;  // each slice stays on its device
  req.device = d.gpu ? d.label : "cpu";
  req.backend = d.backend;
  req.cache = d.cache;  // a scan's slices usually share one trajectory: its operators are built once per device
  return req;
}

// On device `d`'s thread. Written to the output folder and handed to the caller before it is sent: a client
// gone by then loses nothing.
SliceOutcome Server::Impl::finished(PoolDevice& d, recon::ReconResult result, double ms,
                                    const std::shared_ptr<const FinishedSlice>& slice,
                                    const recon::ReconSettings& settings, const Connection& c) {
  SliceOutcome r{std::move(result.image), d.label, ms, std::move(result.provenance)};
  if (!options.outputDir.empty()) writeResult(options.outputDir, r.image, *slice, c.id);
  if (callbacks.image)
    callbacks.image(ServedImage{c.id, c.socket->peer(), slice, c.scan, r.image, recon::toString(settings.method), d.label, r.reconMs});
  return r;
}

SliceOutcome Server::Impl::reconstruct(PoolDevice& d, const std::shared_ptr<const FinishedSlice>& slice,
                                       const recon::ReconSettings& settings, const Connection& c) {
  recon::ReconRequest req = request(d, settings);
  req.dataset = &slice->dataset;
  const auto t0 = Clock::now();
  recon::ReconResult result = recon::run(req);
  return finished(d, std::move(result), msSince(t0), slice, settings, c);
}

// A slice's frames jointly (recon::runFrames, as `recon` does a file's series); each frame's reconstruction time
// is the whole series'.
std::vector<SliceOutcome> Server::Impl::reconstructFrames(PoolDevice& d,
                                                          const std::vector<std::shared_ptr<const FinishedSlice>>& frames,
                                                          const recon::ReconSettings& settings, const Connection& c) {
  std::vector<Dataset> data;
  for (const auto& f : frames) data.push_back(f->dataset);
  const auto t0 = Clock::now();
  std::vector<recon::ReconResult> results = recon::runFrames(data, request(d, settings));
  const double ms = msSince(t0);
  std::vector<SliceOutcome> out;
  for (std::size_t t = 0; t < frames.size(); ++t) out.push_back(finished(d, std::move(results[t]), ms, frames[t], settings, c));
  return out;
}

}  // namespace larmor::stream
