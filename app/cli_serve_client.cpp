// larmor-cli stream: the client of the streaming server (docs/streaming.md). Replays an ISMRMRD file (or a BART
// .cfl or Siemens twix .dat, converted: larmor/stream/replay.hpp) as a scanner streams it (CONFIG_FILE, HEADER, every acquisition,
// CLOSE), at full speed or at the acquisition's own pace (its time stamps, or --tr), while a second thread reads
// what comes back (IMAGE and TEXT messages until CLOSE), so neither side can block the other. Each image's latency is timed from the
// moment the slice's last acquisition was sent. The images are written as a BART .cfl as `larmor-cli recon --output
// OUT.cfl` writes the file's: [x, y, z, 1, slices] in slice order, a series' frames at BART's frame dimensions.
#include "cli_serve.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "larmor/util/error.hpp"
#ifdef LARMOR_HAVE_IO
#include "larmor/io/cfl.hpp"
#include "larmor/io/export.hpp"
#include "larmor/io/output_safety.hpp"
#include "larmor/io/series.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/stream/images.hpp"
#include "larmor/stream/replay.hpp"
#include "larmor/stream/socket.hpp"
#endif

namespace larmor::cli {

#ifndef LARMOR_HAVE_IO
int stream(const StreamArgs&) { throw Error("stream: this build has no ISMRMRD support (LARMOR_IO=OFF)"); }
ScanReply streamScan(const ScanRequest&) { throw Error("stream: this build has no ISMRMRD support (LARMOR_IO=OFF)"); }
#else
namespace {

using Clock = std::chrono::steady_clock;

// What the reader thread collects, under its mutex.
struct Received {
  std::mutex mutex;
  std::map<ImageKey, Clock::time_point> lastSent;  ///< when each slice's last acquisition went out
  Clock::time_point firstSent, lastImage;
  ScanReply reply;
};

void readReplies(stream::SocketStream& s, Received& r) {
  try {
    for (;;) {
      stream::Message m = stream::readMessage(s);
      const std::lock_guard<std::mutex> lock(r.mutex);
      if (m.id == stream::kClose) {
        r.reply.closed = true;
        return;
      }
      if (m.id == stream::kText) {
        if (m.text.rfind("error", 0) == 0) r.reply.errors.push_back(m.text);
        else std::cout << "server: " << m.text << "\n";
        continue;
      }
      if (m.id != stream::kImage) continue;
      const auto& h = m.image.head;
      const ImageKey key{h.slice, h.contrast, h.phase, h.repetition, h.set};
      if (auto it = r.lastSent.find(key); it != r.lastSent.end())
        r.reply.latencyMs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - it->second).count());
      r.reply.images[key] = stream::imagePixels(m.image);
      r.lastImage = Clock::now();
    }
  } catch (const std::exception& e) {
    const std::lock_guard<std::mutex> lock(r.mutex);
    if (!r.reply.closed) r.reply.errors.push_back(e.what());
  }
}

// One frame's images into [x, y, z, 1, slices] by slice index.
CArray stacked(const std::map<int, const CArray*>& images, const Shape& one, const std::string& output) {
  const int slices = images.rbegin()->first + 1;
  require(static_cast<std::size_t>(slices) == images.size(), output + ": the server sent " +
                                                                 std::to_string(images.size()) + " images for " +
                                                                 std::to_string(slices) + " slices of a frame");
  CArray out(Shape{one[0], one[1], one[2], 1, slices});
  for (const auto& [slice, img] : images) std::copy_n(img->data(), img->size(), out.data() + img->size() * slice);
  return out;
}

// The images as `recon --output OUT.cfl` writes the same file's: one frame as [x, y, z, 1, slices], several frames
// (contrast, phase, repetition, set) at BART's dimensions of a series (io::writeSeriesOutput).
void writeImages(const std::map<ImageKey, CArray>& images, const std::string& output) {
  std::map<io::FrameKey, std::map<int, const CArray*>> frames;
  const Shape one = images.begin()->second.shape();
  for (const auto& [key, img] : images) {
    const auto& [slice, c, p, rep, set] = key;
    require(img.shape() == one, output + ": the server's images differ in size");
    frames[io::FrameKey{c, p, rep, set}][slice] = &img;
  }
  io::Series series;
  std::vector<recon::ReconResult> results;
  for (const auto& [key, slices] : frames) {
    series.keys.push_back(key);
    series.frames.emplace_back();  // the .cfl writer reads the frames' keys and images only
    results.emplace_back().image = stacked(slices, one, output);
  }
  require(results.front().image.shape() == results.back().image.shape(), output + ": the frames differ in slices");
  if (results.size() == 1) io::writeCfl(output, io::toBartImage(results.front().image));
  else io::writeSeriesOutput(output, results, series);
}

void printLatency(std::vector<double> ms) {
  if (ms.empty()) return;
  std::sort(ms.begin(), ms.end());
  char line[160];
  std::snprintf(line, sizeof line, "latency after a slice's last acquisition: median %.1f ms, max %.1f ms (%zu images)",
                ms[ms.size() / 2], ms.back(), ms.size());
  std::cout << line << "\n";
}

// Slices per second from the first acquisition sent to the last image back, against the acquisition's own rate.
void printThroughput(const ScanReply& r) {
  if (r.images.empty() || r.streamMs <= 0) return;
  const double n = static_cast<double>(r.images.size()), rate = n / (r.streamMs / 1e3);
  char line[240];
  std::snprintf(line, sizeof line, "throughput: %zu images in %.3f s = %.1f slices/s", r.images.size(), r.streamMs / 1e3, rate);
  std::cout << line;
  if (r.scanMs > 0) {
    const double own = n / (r.scanMs / 1e3);
    std::snprintf(line, sizeof line, "; the acquisition's own pace %.1f slices/s (%.3f s of acquisitions): %.1fx its pace",
                  own, r.scanMs / 1e3, rate / own);
    std::cout << line;
  }
  std::cout << "\n";
}

// The file's scan, read under the caller's file lock where it has one.
stream::RecordedScan record(const ScanRequest& q) {
  if (!q.fileLock) return stream::recordScan(q.input, q.trajectory);
  const std::lock_guard<std::mutex> lock(*q.fileLock);
  return stream::recordScan(q.input, q.trajectory);
}

// The acquisition's own duration: n acquisitions at their schedule's mean interval (0 when it has none).
double scanDuration(const stream::RecordedScan& scan, double trMs) {
  const std::size_t n = scan.acquisitions.size();
  if (n < 2) return 0;
  try {
    const std::vector<double> at = stream::acquisitionSchedule(scan, trMs, "");
    return at.back() * static_cast<double>(n) / static_cast<double>(n - 1);
  } catch (const Error&) {
    return 0;
  }
}

// CONFIG, HEADER, every acquisition (at `at[i]` ms from the first when pacing), CLOSE.
void sendScan(stream::SocketStream& s, const ScanRequest& q, const stream::RecordedScan& scan,
              const std::vector<double>& at, Received& r) {
  if (q.configText.empty()) stream::writeConfigFile(s, q.configName);
  else stream::writeText(s, stream::kConfigText, q.configText);
  stream::writeText(s, stream::kHeader, scan.header);
  const auto t0 = Clock::now();
  {
    const std::lock_guard<std::mutex> lock(r.mutex);
    r.firstSent = t0;
  }
  for (std::size_t k = 0; k < scan.acquisitions.size(); ++k) {
    const stream::Acquisition& acq = scan.acquisitions[k];
    if (!at.empty()) std::this_thread::sleep_until(t0 + std::chrono::duration<double, std::milli>(at[k]));
    stream::writeAcquisition(s, acq);
    const std::lock_guard<std::mutex> lock(r.mutex);
    ++r.reply.sent;
    if (acq.head.flags & (std::uint64_t{1} << (ISMRMRD::ISMRMRD_ACQ_LAST_IN_SLICE - 1))) {
      const auto& i = acq.head.idx;
      r.lastSent[{i.slice, i.contrast, i.phase, i.repetition, i.set}] = Clock::now();
      ++r.reply.slicesSent;
    }
  }
  stream::writeClose(s);
}

}  // namespace

ScanReply streamScan(const ScanRequest& q) {
  const stream::RecordedScan scan = record(q);  // read (and a .cfl or .dat converted) before connecting
  const std::vector<double> at = q.pace ? stream::acquisitionSchedule(scan, q.trMs, q.input) : std::vector<double>{};
  std::string host;
  int port = 0;
  stream::splitHostPort(q.to, host, port, "--to");
  const auto start = Clock::now();
  stream::SocketStream s(stream::connectTcp(host, port), q.to, q.timeoutS * 1000);
  Received r;
  std::thread reader([&] { readReplies(s, r); });
  try {
    sendScan(s, q, scan, at, r);
  } catch (const std::exception&) {
    s.shutdownWrite();
    reader.join();
    for (const auto& err : r.reply.errors) std::cerr << "server: " << err << "\n";
    throw;
  }
  reader.join();
  r.reply.totalMs = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (!r.reply.images.empty())
    r.reply.streamMs = std::chrono::duration<double, std::milli>(r.lastImage - r.firstSent).count();
  r.reply.scanMs = scanDuration(scan, q.trMs);
  return std::move(r.reply);
}

int stream(const StreamArgs& a) {
  if (!a.output.empty()) io::requireReplaceable(a.output, io::OutputRole::Image);
  ScanRequest q;
  q.input = a.input, q.trajectory = a.traj, q.to = a.to, q.configName = a.config, q.timeoutS = a.timeout;
  q.pace = a.pace, q.trMs = a.tr;
  const ScanReply r = streamScan(q);
  std::cout << a.input << ": " << r.sent << " acquisitions sent, " << r.images.size() << " images back in "
            << static_cast<int>(r.totalMs) << " ms\n";
  printLatency(r.latencyMs);
  printThroughput(r);
  for (const auto& err : r.errors) std::cerr << "server: " << err << "\n";
  if (!r.errors.empty()) return 1;
  require(r.closed, a.to + ": the server ended the connection without CLOSE");
  if (!a.output.empty() && !r.images.empty()) {
    writeImages(r.images, a.output);
    std::cout << "wrote " << io::cflBasePath(a.output) << ".cfl\n";
  }
  return 0;
}
#endif

}  // namespace larmor::cli
