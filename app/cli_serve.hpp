#pragma once
// larmor-cli serve (a reconstruction server speaking the ISMRMRD streaming protocol) and larmor-cli stream (its
// client, replaying a raw-data file as a scanner streams it). docs/streaming.md.
#include <string>

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
};

struct StreamArgs {
  std::string input, to, config = "default.xml", output;
  int timeout = 120;  ///< seconds without a byte from the server
};

/// The `serve` and `stream` subcommands, their options into `a`.
CLI::App* addServeCommand(CLI::App& app, ServeArgs& a);
CLI::App* addStreamCommand(CLI::App& app, StreamArgs& a);

/// Serves until killed; each connection on its own thread. Returns non-zero only when it cannot listen.
int serve(const ServeArgs& a);
/// Sends `input` to `to`, writes the images that come back to `output` (.cfl; none: not written). Exit 1 when the
/// server reported an error.
int stream(const StreamArgs& a);

}  // namespace larmor::cli
