// A connection's images in the order its slices finished (larmor/stream/outbox.hpp).
#include "larmor/stream/outbox.hpp"

#include <cstdio>

#include "larmor/stream/images.hpp"

namespace larmor::stream {

Outbox::Outbox(SocketStream& s, std::size_t limit, Log log, Keep keep)
    : s_(s), limit_(limit < 1 ? 1 : limit), log_(std::move(log)), keep_(std::move(keep)), thread_([this] { run(); }) {}

Outbox::~Outbox() { finish(); }

void Outbox::push(OutgoingSlice o) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return queue_.size() < limit_; });
  queue_.push_back(std::move(o));
  changed_.notify_all();
}

void Outbox::finish() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string Outbox::failure() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

int Outbox::sent() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return sent_;
}

void Outbox::run() {
  for (;;) {
    OutgoingSlice o;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return closed_ || !queue_.empty(); });
      if (queue_.empty()) return;
      o = std::move(queue_.front());
      queue_.pop_front();
    }
    changed_.notify_all();
    deliver(o);
  }
}

// Waits for the slice's reconstruction and sends it. A failed reconstruction ends the connection (its reader
// is stopped; the caller sends the error); a failed send (the client is gone) stops the sending, not the work:
// the devices still reconstruct, and write to the output folder (and keep for the PACS), what was queued.
void Outbox::deliver(OutgoingSlice& o) {
  SliceOutcome r;
  try {
    r = o.result.get();
  } catch (const std::exception& e) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (failure_.empty()) failure_ = e.what();
    dropping_ = true;
    s_.shutdownRead();
    return;
  }
  if (keep_) keep_(o, r);
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (dropping_) return;
  }
  try {
    writeImage(s_, imageMessage(r.image, *o.slice, o.index, 1, o.comment));
  } catch (const std::exception& e) {
    const std::lock_guard<std::mutex> lock(mutex_);
    dropping_ = true;
    log_(std::string("images no longer sent: ") + e.what());
    return;
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - o.arrived).count();
  char line[200];
  std::snprintf(line, sizeof line, "slice %d repetition %d (%s) on %s, recon %.1f ms, sent %.1f ms after its last acquisition",
                o.slice->slice, o.slice->key.repetition, o.comment.c_str(), r.device.c_str(), r.reconMs, ms);
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    ++sent_;
  }
  log_(line);
}

}  // namespace larmor::stream
