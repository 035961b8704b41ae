#pragma once
// The reconstruction server of the ISMRMRD streaming protocol (docs/streaming.md), for `larmor-cli serve` and the
// workstation's live view. One thread accepts connections; one thread per connection reads its messages
// (protocol.hpp), collects its acquisitions into slices (assembler.hpp) and hands each finished slice to the
// first idle device (device_pool.hpp: one warm backend per device, opened at start, for every connection); each
// connection sends its images back in the order its slices finished (outbox.hpp), then CLOSE. A bad message
// costs its connection a TEXT "error: ..." and a CLOSE, never the server. Optionally every image is also written
// to a folder, handed to the caller (Callbacks::image, on the device's thread) and, once its connection ends,
// sent with the rest of its scan to a PACS as one DICOM series (pacs_series.hpp).
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "larmor/array/array.hpp"
#include "larmor/data/dataset.hpp"
#include "larmor/io/dicom_send.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/stream/assembler.hpp"

namespace larmor::stream {

struct ServerOptions {
  int port = 9002;                     ///< 0: any free port (Server::port() says which)
  std::string listen = "127.0.0.1";    ///< an IPv4 address; 0.0.0.0: every interface
  std::string devices = "all";         ///< openDevices' spec
  recon::ReconSettings settings;       ///< the presets' settings (CONFIG_FILE default.xml and the methods' names)
  std::string outputDir;               ///< non-empty: every image also as a .cfl here (an existing folder)
  int idleTimeoutS = 60;               ///< seconds a connection may stay silent
  int maxConnections = 32;             ///< served at once; one more gets an error
  double maxScanGiB = 4;               ///< unfinished slices one connection may hold
  std::optional<io::DicomNode> pacs;   ///< each scan's images also to this PACS, as one series
};

/// One image the server made, as it goes back to its client.
struct ServedImage {
  int connection = 0;                          ///< 1, 2, ... in the order the connections came
  std::string peer;                            ///< the client's "address:port"
  std::shared_ptr<const FinishedSlice> slice;  ///< its slice index, frame key and one-slice Dataset (geometry)
  std::shared_ptr<const Header> scan;          ///< the scan's HEADER: its slices (as declared), patient, study
  CArray image;                                ///< [x, y, z, 1, 1]
  std::string method;                          ///< "fft", "gridding", ...
  std::string device;                          ///< the device that made it ("cpu", "cuda:1")
  double reconMs = 0;                          ///< its reconstruction's time
};

struct ServerCallbacks {
  std::function<void(const std::string&)> log;        ///< one line per event (none: standard output)
  std::function<void(const ServedImage&)> image;      ///< each image reconstructed, on its device's thread
  /// A connection ended: `error` empty after its CLOSE, else why it did not end well.
  std::function<void(int connection, const std::string& peer, const std::string& error)> ended;
};

class Server {
 public:
  /// Opens and warms up the devices; Error for a bad option (an output folder that is not one, bad settings).
  Server(ServerOptions options, ServerCallbacks callbacks = {});
  /// stop().
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Listens (Error when it cannot) and accepts connections on a thread of its own.
  void start();
  /// The port listened on (after start()).
  int port() const;
  /// Stops listening, ends every open connection (nothing more is read or sent; the slices already queued are
  /// still reconstructed, written and handed to the image callback) and joins every thread. No callback is
  /// called after it returns.
  void stop();
  /// Waits until stop() (from another thread), or forever; Error when the listening socket fails.
  void wait();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace larmor::stream
