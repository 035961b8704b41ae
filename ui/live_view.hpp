#pragma once
// The workstation's live view (File ▸ Listen…, docs/streaming.md): the streaming reconstruction server
// (larmor/stream/server.hpp) inside the workstation. Its images arrive on the server's device threads and are
// posted to the GUI thread (a queued call on this object), where the newest connection's images are collected
// into one scan (model/live_scan.hpp) and announced; the window shows the scan as it grows. Nothing here
// touches a widget from another thread, and stop() returns once no image can arrive any more.
#include <QObject>
#include <QString>

#include <memory>
#include <thread>

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
  /// The scan on screen (the newest connection's), or null.
  const model::LiveScan* scan() const { return scan_.get(); }
  int connection() const { return connection_; }

 signals:
  void started(const QString& address);
  void failed(const QString& error);
  /// scan() has one more image; `fresh`: it is a new connection's first.
  void scanGrew(bool fresh);
  /// A connection ended: `error` empty after the scan's CLOSE.
  void connectionEnded(int connection, const QString& peer, const QString& error);
  void logLine(const QString& line);

 private:
  void take(const stream::ServedImage& image);
  /// On this object's thread: the server start `generation` made (null: it failed with `error`).
  void arrived(std::shared_ptr<stream::Server> server, quint64 generation, const QString& address, const QString& error);

  std::thread starter_;
  quint64 generation_ = 0;  ///< a start that stop() or a later start superseded is stopped when it arrives
  std::shared_ptr<stream::Server> server_;
  QString address_;
  std::unique_ptr<model::LiveScan> scan_;
  int connection_ = 0;
};

}  // namespace larmor::ui
