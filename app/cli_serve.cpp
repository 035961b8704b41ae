// larmor-cli serve: the reconstruction server of the ISMRMRD streaming protocol (docs/streaming.md), its options
// into larmor/stream/server.hpp's Server, which listens until the process is killed. --send: each image also goes
// to a PACS as soon as it is made, each scan one DICOM series; a PACS that refuses or does not answer is a line
// for that image in its connection's log.
#include "cli_serve.hpp"

#include <CLI/CLI.hpp>

#include "larmor/util/error.hpp"
#ifdef LARMOR_HAVE_IO
#include "cli_pacs.hpp"

#include "larmor/batch/settings_file.hpp"
#include "larmor/stream/server.hpp"
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
  cmd->add_option("--send", a.send, "Also send each image to a PACS as it is made, each scan one DICOM series: AET@host:port (C-STORE)");
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
int serve(const ServeArgs& a) {
  stream::ServerOptions o;
  o.port = a.port;
  o.listen = a.listen;
  o.devices = a.devices;
  if (!a.settings.empty()) o.settings = batch::readSettingsFile(a.settings).settings;
  o.outputDir = a.outputDir;
  o.idleTimeoutS = a.idleTimeout;
  o.maxConnections = a.maxConnections;
  o.maxScanGiB = a.maxScanGiB;
  // A malformed node stops the server; a PACS that does not answer is each scan's own error, later.
  if (!a.send.empty()) o.pacs = pacsNode(a.send, a.callingAet, a.sendTimeout);
  stream::Server server(std::move(o));
  server.start();
  server.wait();
  return 0;
}
#endif

}  // namespace larmor::cli
