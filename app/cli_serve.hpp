#pragma once
// larmor-cli serve (a reconstruction server speaking the ISMRMRD streaming protocol) and larmor-cli stream (its
// client, replaying a raw-data file as a scanner streams it). docs/streaming.md.
#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "larmor/array/array.hpp"

namespace CLI {
class App;
}

namespace larmor::cli {

struct ServeArgs {
  int port = 9002;
  std::string listen = "127.0.0.1", settings, outputDir, devices = "all";
  int idleTimeout = 60;  ///< seconds without a byte before a connection is closed
  int maxConnections = 32;  ///< connections served at once; one more gets an error
  double maxScanGiB = 4;    ///< unfinished slices one connection may hold (SliceAssembler's limit)
  std::string send, callingAet = "LARMOR";  ///< --send AET@host:port: each scan also to this PACS, as one series
  int sendTimeout = 10;                     ///< seconds: the PACS's deadline per exchange (io/dicom_send.hpp)
};

struct StreamArgs {
  std::string input, to, config = "default.xml", output, traj;
  int timeout = 120;  ///< seconds without a byte from the server
  bool pace = false;  ///< at the acquisition's own pace
  double tr = 0;      ///< ms per acquisition where the file has no time stamps
};

/// One scan streamed to a server (stream, batch --server).
struct ScanRequest {
  std::string input, trajectory;                          ///< the raw data; a .cfl's trajectory
  std::string to, configName = "default.xml", configText;  ///< configText non-empty: sent as CONFIG_TEXT instead
  int timeoutS = 120;
  bool pace = false;  ///< at the acquisition's own pace (its timestamps), not at full speed
  double trMs = 0;    ///< the pace where the file has no time stamps: one acquisition per trMs
  std::mutex* fileLock = nullptr;  ///< held while the file is read (libhdf5 is not thread-safe)
};
using ImageKey = std::tuple<int, int, int, int, int>;  ///< slice, contrast, phase, repetition, set
/// What came back.
struct ScanReply {
  std::map<ImageKey, CArray> images;  ///< [x, y, z, channels] each
  std::vector<double> latencyMs;      ///< per image: from its slice's last acquisition sent to the image received
  std::vector<std::string> errors;    ///< the server's "error: ..." messages, or the connection's failure
  bool closed = false;                ///< the server ended with CLOSE
  std::size_t sent = 0;               ///< acquisitions
  std::size_t slicesSent = 0;         ///< slices whose last acquisition went out
  double totalMs = 0;                 ///< from connecting to the server's CLOSE
  double streamMs = 0;                ///< from the first acquisition sent to the last image received
  double scanMs = 0;                  ///< the acquisition's own duration, from its timestamps (0: none)
};
/// Streams `r.input` to `r.to` and collects the replies. Throws Error when the file cannot be read or the
/// connection fails before the scan is sent; what the server reports is in errors.
ScanReply streamScan(const ScanRequest& r);

/// The `serve` and `stream` subcommands, their options into `a`.
CLI::App* addServeCommand(CLI::App& app, ServeArgs& a);
CLI::App* addStreamCommand(CLI::App& app, StreamArgs& a);

/// Serves until killed; each connection on its own thread. Returns non-zero only when it cannot listen.
int serve(const ServeArgs& a);
/// Sends `input` to `to`, writes the images that come back to `output` (.cfl; none: not written). Exit 1 when the
/// server reported an error.
int stream(const StreamArgs& a);

}  // namespace larmor::cli
