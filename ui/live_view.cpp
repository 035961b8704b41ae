// The live view's server and scan (live_view.hpp). The server's callbacks run on its threads: each posts a
// copy of what it has to this object's thread with a queued call, which Qt drops once this object is gone.
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

#ifndef LARMOR_HAVE_IO
void LiveView::start(const Options&) { emit failed(tr("this build has no ISMRMRD support (LARMOR_IO=OFF)")); }
void LiveView::stop() {}
void LiveView::take(const stream::ServedImage&) {}
void LiveView::arrived(std::shared_ptr<stream::Server>, quint64, const QString&, const QString&) {}
#else
namespace {

// The server's callbacks: each posts what it has to `self`'s thread.
stream::ServerCallbacks postingTo(QPointer<LiveView> self, const std::function<void(const stream::ServedImage&)>& take) {
  stream::ServerCallbacks c;
  c.log = [self](const std::string& line) {
    QMetaObject::invokeMethod(self, [self, l = QString::fromStdString(line)] { if (self) emit self->logLine(l); }, Qt::QueuedConnection);
  };
  c.image = [self, take](const stream::ServedImage& image) {
    QMetaObject::invokeMethod(self, [self, take, image] { if (self) take(image); }, Qt::QueuedConnection);
  };
  c.ended = [self](int id, const std::string& peer, const std::string& why) {
    QMetaObject::invokeMethod(
        self, [self, id, p = QString::fromStdString(peer), w = QString::fromStdString(why)] { if (self) emit self->connectionEnded(id, p, w); },
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
  stream::ServerCallbacks c = postingTo(self, [this](const stream::ServedImage& i) { take(i); });
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

// On this object's thread: the newest connection's images make the scan shown; an older connection's late
// images are left out (its scan is no longer on screen).
void LiveView::take(const stream::ServedImage& image) {
  if (image.connection < connection_) return;
  const bool fresh = image.connection != connection_ || !scan_;
  if (fresh) {
    connection_ = image.connection;
    scan_ = std::make_unique<model::LiveScan>(image.scan ? *image.scan : image.slice->dataset.header,
                                              "stream from " + image.peer);
  }
  try {
    scan_->add({image.slice->slice, image.slice->key, std::shared_ptr<const Dataset>(image.slice, &image.slice->dataset),
                image.image, image.method, image.device, image.reconMs});
  } catch (const std::exception& e) {
    emit logLine(QString::fromStdString(e.what()));
    return;
  }
  emit scanGrew(fresh);
}
#endif

}  // namespace larmor::ui
