#pragma once
// A connection's images, sent back in the order its slices finished (docs/streaming.md). The slices are
// reconstructed on whichever device is idle (larmor/stream/device_pool.hpp), several at once where there are
// several devices; one sender thread per connection waits for each in turn and sends it, while the connection's
// own thread keeps reading acquisitions. At most `limit` slices wait per connection: beyond that the reader
// waits (and TCP slows the client), so a client faster than the devices cannot fill the server's memory.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "larmor/array/array.hpp"
#include "larmor/stream/assembler.hpp"
#include "larmor/stream/socket.hpp"

namespace larmor::stream {

/// What a device made of one slice.
struct SliceOutcome {
  CArray image;
  std::string device;
  double reconMs = 0;
  nlohmann::json provenance;  ///< recon::run's, for the DICOM series (the server's PACS send)
};

/// One slice on its way back: its reconstruction (a future of the device pool's task) and what its IMAGE says.
struct OutgoingSlice {
  std::future<SliceOutcome> result;
  std::shared_ptr<const FinishedSlice> slice;
  int index = 0;  ///< image_index, from 1 in the order the slices finished
  std::string comment;
  std::chrono::steady_clock::time_point arrived;  ///< when its last acquisition arrived
};

class Outbox {
 public:
  using Log = std::function<void(const std::string&)>;
  /// Called with each slice reconstructed, whether or not its client is still there to receive it.
  using Keep = std::function<void(const OutgoingSlice&, const SliceOutcome&)>;
  Outbox(SocketStream& s, std::size_t limit, Log log, Keep keep = {});
  ~Outbox();
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  /// Queues a slice; waits while `limit` are queued.
  void push(OutgoingSlice o);
  /// No more slices: returns once each queued one is sent, or dropped after a failure or a vanished client.
  void finish();
  /// The first reconstruction's error ("" when none). After one, the connection's reads are shut down (its
  /// reader stops) and later slices are not sent.
  std::string failure() const;
  int sent() const;

 private:
  void run();
  void deliver(OutgoingSlice& o);

  SocketStream& s_;
  std::size_t limit_;
  Log log_;
  Keep keep_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<OutgoingSlice> queue_;
  bool closed_ = false, dropping_ = false;
  std::string failure_;
  int sent_ = 0;
  std::thread thread_;  // last: started when the rest is ready
};

}  // namespace larmor::stream
