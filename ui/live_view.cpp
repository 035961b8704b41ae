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
bool LiveView::start(const Options&, QString* error) {
  if (error) *error = tr("Listen: this build has no ISMRMRD support (LARMOR_IO=OFF)");
  return false;
}
void LiveView::stop() {}
void LiveView::take(const stream::ServedImage&) {}
#else
bool LiveView::start(const Options& o, QString* error) {
  stop();
  stream::ServerOptions s;
  s.port = o.port;
  s.listen = o.listen.toStdString();
  s.devices = o.devices.toStdString();
  s.settings = o.settings;
  stream::ServerCallbacks c;
  QPointer<LiveView> self(this);
  c.log = [self](const std::string& line) {
    QMetaObject::invokeMethod(self, [self, l = QString::fromStdString(line)] { if (self) emit self->logLine(l); }, Qt::QueuedConnection);
  };
  c.image = [self](const stream::ServedImage& image) {
    QMetaObject::invokeMethod(self, [self, image] { if (self) self->take(image); }, Qt::QueuedConnection);
  };
  c.ended = [self](int id, const std::string& peer, const std::string& why) {
    QMetaObject::invokeMethod(
        self, [self, id, p = QString::fromStdString(peer), w = QString::fromStdString(why)] { if (self) emit self->connectionEnded(id, p, w); },
        Qt::QueuedConnection);
  };
  try {
    auto server = std::make_unique<stream::Server>(std::move(s), std::move(c));
    server->start();
    address_ = o.listen + QStringLiteral(":") + QString::number(server->port());
    server_ = std::move(server);
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
}

void LiveView::stop() {
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
