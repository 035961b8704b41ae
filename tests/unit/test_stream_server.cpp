// The streaming server as a class (larmor/stream/server.hpp): on port 0 it listens on a free port, one scan
// streamed to it comes back as one image per slice, each also handed to the image callback with its slice
// and the scan's header, the connection's end is announced; stop() returns with a client still connected
// (its connection ended), also when that client reads nothing (the server's writes blocked), and nothing
// listens afterwards.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <set>

#include "larmor/io/ismrmrd.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/stream/replay.hpp"
#include "larmor/stream/server.hpp"
#include "larmor/stream/socket.hpp"
#include "larmor/util/error.hpp"

namespace larmor::stream {
namespace {

/// A two-slice scan written to `name` (a file of each test's own: ctest runs the tests at once).
RecordedScan twoSliceScan(const std::string& name) {
  std::filesystem::create_directories(LARMOR_TEST_TMP);
  const std::string path = std::string(LARMOR_TEST_TMP) + "/" + name;
  std::filesystem::remove(path);
  phantom::SimulateSettings ss;
  ss.matrix[0] = ss.matrix[1] = 16;
  ss.coils = 2;
  ss.slices = 2;
  io::writeIsmrmrd(phantom::simulate(ss), path);
  return recordScan(path);
}

struct Seen {
  std::mutex mutex;
  std::set<int> slices;
  index_t scanSlices = 0;
  std::atomic<int> ended{0};
  std::string error;
};

ServerCallbacks record(Seen& seen) {
  ServerCallbacks c;
  c.log = [](const std::string&) {};
  c.image = [&seen](const ServedImage& i) {
    const std::lock_guard<std::mutex> lock(seen.mutex);
    seen.slices.insert(i.slice->slice);
    if (i.scan) seen.scanSlices = i.scan->slices;
  };
  c.ended = [&seen](int, const std::string&, const std::string& error) {
    const std::lock_guard<std::mutex> lock(seen.mutex);
    seen.error = error;
    ++seen.ended;
  };
  return c;
}

/// A server on the CPU, listening on any free port.
ServerOptions cpuOnAnyFreePort() {
  ServerOptions o;
  o.port = 0;
  o.devices = "cpu";
  return o;
}

/// `scan` streamed to the server on `port` under the configuration `config`: the images that came back, the
/// server's TEXT messages in `text`.
int streamTo(int port, const char* config, const RecordedScan& scan, std::string* text = nullptr) {
  SocketStream s(connectTcp("127.0.0.1", port), "server", 20000);
  writeConfigFile(s, config);
  writeText(s, kHeader, scan.header);
  for (const auto& a : scan.acquisitions) writeAcquisition(s, a);
  writeClose(s);
  int images = 0;
  for (;;) {
    const Message m = readMessage(s);
    if (m.id == kClose) return images;
    if (m.id == kImage) ++images;
    if (m.id == kText && text) *text += m.text;
  }
}

TEST(StreamServer, OneScanOnAnyFreePortThenStop) {
  const RecordedScan scan = twoSliceScan("server_two_slices.h5");
  const ServerOptions o = cpuOnAnyFreePort();
  Seen seen;
  Server server(o, record(seen));
  server.start();
  ASSERT_GT(server.port(), 0);
  EXPECT_EQ(streamTo(server.port(), "default.xml", scan), 2);
  for (int i = 0; i < 100 && seen.ended == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(seen.ended, 1);
  EXPECT_EQ(seen.error, "");
  EXPECT_EQ(seen.slices, (std::set<int>{0, 1}));
  EXPECT_EQ(seen.scanSlices, 2);
  // A client that stays silent does not keep stop() waiting: its connection ends.
  SocketStream idle(connectTcp("127.0.0.1", server.port()), "server", 20000);
  writeConfigFile(idle, "default.xml");
  for (int i = 0; i < 100 && seen.ended == 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const int port = server.port();
  server.stop();
  EXPECT_EQ(seen.ended, 2);
  EXPECT_THROW(connectTcp("127.0.0.1", port), Error);
}

// A configuration named after a method other than the server's (fft by default) runs it with its defaults: "cs"
// takes total variation, not cg's Tikhonov prior (which --method cs refuses).
TEST(StreamServer, AMethodNameGetsThatMethodsDefaults) {
  const RecordedScan scan = twoSliceScan("server_method_names.h5");
  const ServerOptions o = cpuOnAnyFreePort();
  Seen seen;
  Server server(o, record(seen));
  server.start();
  for (const char* config : {"cs", "cs.xml", "cg"}) {
    std::string text;
    EXPECT_EQ(streamTo(server.port(), config, scan, &text), 2) << config << ": " << text;
  }
  server.stop();
}

// A client that sends a scan and never reads its images: the server's writes block, stop() does not wait for
// the connection's timeout.
TEST(StreamServer, StopDoesNotWaitForAStalledClient) {
  std::filesystem::create_directories(LARMOR_TEST_TMP);
  const std::string path = std::string(LARMOR_TEST_TMP) + "/server_stalled.h5";
  std::filesystem::remove(path);
  phantom::SimulateSettings ss;
  ss.matrix[0] = ss.matrix[1] = 256;
  ss.coils = 1;
  ss.slices = 24;  // 24 images of 512 KiB back: more than the loopback's buffers hold
  io::writeIsmrmrd(phantom::simulate(ss), path);
  const RecordedScan scan = recordScan(path);
  ServerOptions o = cpuOnAnyFreePort();
  o.idleTimeoutS = 60;
  Seen seen;
  Server server(o, record(seen));
  server.start();
  SocketStream s(connectTcp("127.0.0.1", server.port()), "server", 20000);
  // The client writes on its own thread: once the server waits to send, it reads no more (TCP slows the client).
  std::thread writer([&] {
    try {
      writeConfigFile(s, "default.xml");
      writeText(s, kHeader, scan.header);
      for (const auto& a : scan.acquisitions) writeAcquisition(s, a);
      writeClose(s);
    } catch (const Error&) {  // the server ended the connection
    }
  });
  for (int i = 0; i < 500; ++i) {
    {
      const std::lock_guard<std::mutex> lock(seen.mutex);
      if (seen.slices.size() >= 4) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // its outbox now waits on a full socket
  const auto t0 = std::chrono::steady_clock::now();
  server.stop();
  const double s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s_, 5.0) << "stop() waited for the stalled client";
  EXPECT_EQ(seen.ended, 1);
  writer.join();
}

TEST(StreamServer, AnOutputDirThatIsNotAFolderIsRefused) {
  ServerOptions o;
  o.devices = "cpu";
  o.outputDir = "/nonexistent-larmor-folder";
  EXPECT_THROW(Server(o, {}), Error);
}

}  // namespace
}  // namespace larmor::stream
