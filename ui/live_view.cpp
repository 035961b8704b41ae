// The live view's server and scan (live_view.hpp). The server's callbacks run on its threads: each posts a
// copy of what it has to this object's thread with a queued call, which Qt drops once this object is gone. Each
// connection's images make a scan of its own; the one shown changes only when it has ended (or the user asks).
#include "live_view.hpp"

#include <QMetaObject>
#include <QPointer>

#include "larmor/util/error.hpp"
#ifdef LARMOR_HAVE_IO
#include "larmor/stream/server.hpp"
#endif

namespace larmor::ui {

LiveView::LiveView(QObject* parent) : QObject(parent) {}

LiveView::~LiveView() { stop(); }

QString LiveView::address() const { return server_ ? address_ : QString(); }

std::vector<int> LiveView::connections() const {
  std::vector<int> out;
  for (const auto& [id, e] : scans_) out.push_back(id);
  return out;
}

const model::LiveScan* LiveView::scan(int connection) const {
  const auto it = scans_.find(connection);
  return it == scans_.end() ? nullptr : it->second.scan.get();
}

QString LiveView::describe(int connection) const {
  const auto it = scans_.find(connection);
  if (it == scans_.end()) return {};
  const Entry& e = it->second;
  const QString state = !e.ended ? tr("streaming") : e.error.isEmpty() ? tr("ended") : tr("ended early");
  return tr("connection %1 · %2 · %3 images, %4").arg(connection).arg(e.peer).arg(e.scan->imageCount()).arg(state);
}

bool LiveView::show(int connection) {
  if (!scan(connection)) return false;
  connection_ = connection;
  emit scanGrew(true);
  emit scansChanged();
  return true;
}

// Ended scans beyond kKeptScans, oldest first, except the one shown: a long session keeps no k-space it cannot show.
void LiveView::forgetOldScans() {
  std::size_t endedScans = 0;
  for (const auto& [id, e] : scans_) endedScans += e.ended && id != connection_ ? 1 : 0;
  for (auto it = scans_.begin(); it != scans_.end() && endedScans > kKeptScans;) {
    if (it->second.ended && it->first != connection_) {
      it = scans_.erase(it);
      --endedScans;
    } else {
      ++it;
    }
  }
}

#ifndef LARMOR_HAVE_IO
void LiveView::start(const Options&) { emit failed(tr("this build has no ISMRMRD support (LARMOR_IO=OFF)")); }
void LiveView::stop() {}
void LiveView::take(const stream::ServedImage&) {}
void LiveView::ended(int, const QString&, const QString&) {}
void LiveView::arrived(std::shared_ptr<stream::Server>, quint64, const QString&, const QString&) {}
#else
namespace {

// The server's callbacks: each posts what it has to `self`'s thread.
using Ended = std::function<void(int, const QString&, const QString&)>;
stream::ServerCallbacks postingTo(QPointer<LiveView> self, const std::function<void(const stream::ServedImage&)>& take,
                                  const Ended& ended) {
  stream::ServerCallbacks c;
  c.log = [self](const std::string& line) {
    QMetaObject::invokeMethod(self, [self, l = QString::fromStdString(line)] { if (self) emit self->logLine(l); }, Qt::QueuedConnection);
  };
  c.image = [self, take](const stream::ServedImage& image) {
    QMetaObject::invokeMethod(self, [self, take, image] { if (self) take(image); }, Qt::QueuedConnection);
  };
  c.ended = [self, ended](int id, const std::string& peer, const std::string& why) {
    QMetaObject::invokeMethod(
        self, [self, ended, id, p = QString::fromStdString(peer), w = QString::fromStdString(why)] { if (self) ended(id, p, w); },
        Qt::QueuedConnection);
  };
  return c;
}

}  // namespace

void LiveView::start(const Options& o) {
  stop();
  stream::ServerOptions s;
  s.port = o.port;
  s.listen = o.listen.toStdString();
  s.devices = o.devices.toStdString();
  s.settings = o.settings;
  QPointer<LiveView> self(this);
  stream::ServerCallbacks c = postingTo(self, [this](const stream::ServedImage& i) { take(i); },
                                        [this](int id, const QString& peer, const QString& why) { ended(id, peer, why); });
  scans_.clear();  // the new server counts its connections from 1 again
  connection_ = 0;
  emit scansChanged();
  const quint64 generation = ++generation_;
  starter_ = std::thread([self, s = std::move(s), c = std::move(c), generation, listen = o.listen]() mutable {
    std::shared_ptr<stream::Server> server;
    QString address, error;
    try {
      server = std::make_shared<stream::Server>(std::move(s), std::move(c));
      server->start();
      address = listen + QStringLiteral(":") + QString::number(server->port());
    } catch (const std::exception& e) {
      server.reset();
      error = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(
        self, [self, server, generation, address, error] { if (self) self->arrived(server, generation, address, error); },
        Qt::QueuedConnection);
  });
}

void LiveView::arrived(std::shared_ptr<stream::Server> server, quint64 generation, const QString& address,
                       const QString& error) {
  if (starter_.joinable()) starter_.join();  // it has posted this: it is ending
  if (generation != generation_) {
    if (server) server->stop();
    return;
  }
  if (!server) {
    emit failed(error);
    return;
  }
  server_ = std::move(server);
  address_ = address;
  emit started(address_);
}

void LiveView::stop() {
  ++generation_;
  if (starter_.joinable()) starter_.join();  // a start in progress: stopped when it arrives
  if (!server_) return;
  server_->stop();
  server_.reset();
}

// On this object's thread: each connection's images grow its own scan. A new connection's scan is shown when
// none is, or the one shown has ended; else it grows beside it (scansChanged), shown when the user asks.
void LiveView::take(const stream::ServedImage& image) {
  Entry& e = scans_[image.connection];
  const bool fresh = !e.scan;
  if (fresh) {
    e.scan = std::make_unique<model::LiveScan>(image.scan ? *image.scan : image.slice->dataset.header,
                                               "stream from " + image.peer);
    e.peer = QString::fromStdString(image.peer);
  }
  try {
    e.scan->add({image.slice->slice, image.slice->key, std::shared_ptr<const Dataset>(image.slice, &image.slice->dataset),
                 image.image, image.method, image.device, image.reconMs});
  } catch (const std::exception& ex) {
    emit logLine(QString::fromStdString(ex.what()));
    return;
  }
  const auto shown = scans_.find(connection_);
  const bool takeOver = fresh && (shown == scans_.end() || shown->second.ended);
  if (takeOver) connection_ = image.connection;
  if (image.connection == connection_) emit scanGrew(takeOver);
  emit scansChanged();
}

// On this object's thread: a connection ended (its CLOSE, or `error`).
void LiveView::ended(int connection, const QString& peer, const QString& error) {
  if (const auto it = scans_.find(connection); it != scans_.end()) it->second.ended = true, it->second.error = error;
  forgetOldScans();
  emit connectionEnded(connection, peer, error);
  emit scansChanged();
}
#endif

}  // namespace larmor::ui
