#pragma once
// The workstation's live view (File ▸ Listen…, docs/streaming.md): the streaming reconstruction server
// (larmor/stream/server.hpp) inside the workstation. Its images arrive on the server's device threads and are
// posted to the GUI thread (a queued call on this object), where each connection's images are collected into a
// scan of its own (model/live_scan.hpp): several scanners streaming at once are several scans, none replacing
// another. One of them is shown (the window shows it as it grows): the first, until it has ended and another
// connection sends; the user may show any other (show()). Nothing here touches a widget from another thread, and
// stop() returns once no image can arrive any more.
#include <QObject>
#include <QString>

#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "larmor/recon/settings.hpp"
#include "live_scan.hpp"

namespace larmor::stream {
class Server;
struct ServedImage;
}  // namespace larmor::stream

namespace larmor::ui {

class LiveView : public QObject {
  Q_OBJECT
 public:
  struct Options {
    int port = 9002;  ///< 0: any free port
    QString listen = QStringLiteral("127.0.0.1");
    QString devices = QStringLiteral("auto");  ///< the server's devices (stream::openDevices' spec)
    recon::ReconSettings settings;              ///< what the presets (default.xml, no configuration) reconstruct with
  };
  explicit LiveView(QObject* parent = nullptr);
  ~LiveView() override;

  /// Starts the server on a thread of its own (opening and warming up GPUs takes seconds), a running one
  /// stopped first: started() once it listens, or failed().
  void start(const Options& options);
  /// Stops listening (or starting) and ends the open connections; the scan shown stays.
  void stop();
  bool listening() const { return static_cast<bool>(server_); }
  /// "127.0.0.1:9002" while listening, else "".
  QString address() const;
  /// The scan shown, or null.
  const model::LiveScan* scan() const { return scan(connection_); }
  /// The connection of the scan shown (0: none).
  int connection() const { return connection_; }
  /// Every connection that sent an image since start(), oldest first (at most kKeptScans ended ones besides
  /// the shown one and those still streaming).
  std::vector<int> connections() const;
  const model::LiveScan* scan(int connection) const;
  /// "connection 2 · 127.0.0.1:5000 · 3 images, streaming" (or "ended", "ended early").
  QString describe(int connection) const;
  /// Shows that connection's scan instead (scanGrew(true)); false when there is no such scan.
  bool show(int connection);
  static constexpr std::size_t kKeptScans = 8;

 signals:
  void started(const QString& address);
  void failed(const QString& error);
  /// scan() has one more image; `fresh`: the shown scan is another than before (a new connection's, or show()).
  void scanGrew(bool fresh);
  /// The list of scans changed (a scan not shown grew, a connection came or ended).
  void scansChanged();
  /// A connection ended: `error` empty after the scan's CLOSE.
  void connectionEnded(int connection, const QString& peer, const QString& error);
  void logLine(const QString& line);

 private:
  void take(const stream::ServedImage& image);
  void ended(int connection, const QString& peer, const QString& error);
  void forgetOldScans();
  /// On this object's thread: the server start `generation` made (null: it failed with `error`).
  void arrived(std::shared_ptr<stream::Server> server, quint64 generation, const QString& address, const QString& error);

  std::thread starter_;
  quint64 generation_ = 0;  ///< a start that stop() or a later start superseded is stopped when it arrives
  std::shared_ptr<stream::Server> server_;
  QString address_;
  struct Entry {
    std::unique_ptr<model::LiveScan> scan;
    QString peer;
    bool ended = false;
    QString error;
  };
  std::map<int, Entry> scans_;  ///< by connection
  int connection_ = 0;          ///< the one shown
};

}  // namespace larmor::ui
