#pragma once
// The streaming server's devices and its scheduler (docs/streaming.md). One warm backend per device (a GPU's
// context, plans and kernels loaded once, an operator cache kept between slices), one thread per device, and one
// queue of tasks in arrival order: each task goes to the first device that is idle, whichever connection it came
// from, so one scan's slices may run on several devices at once. The connections put their results back in
// order themselves (outbox.hpp).
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace larmor {
class Backend;
}
namespace larmor::recon {
class OperatorCache;
}

namespace larmor::stream {

/// One device of the pool, opened once.
struct PoolDevice {
  std::string label;  ///< "cuda:0", "cpu"; "cpu#1" where several CPU workers share the processor
  std::shared_ptr<Backend> backend;
  std::shared_ptr<recon::OperatorCache> cache;  ///< declared after backend, so released before it
  int ompThreads = 0;                           ///< > 0: this worker's OpenMP threads (CPU workers share the cores)
  bool gpu = false;
};

/// The devices `spec` names, each opened (GPU contexts at the same time, on their own threads):
///  - "all" or "auto": every GPU, else the CPU (*notice says why);
///  - a list "cuda:0,cuda:1" or "cpu,cpu" (a CPU listed k times: k workers sharing the cores' OpenMP threads).
/// A GPU listed twice is refused. Errors name "--devices SPEC".
std::vector<PoolDevice> openDevices(const std::string& spec, std::string* notice);

/// A thread per device, one FIFO queue of tasks. A task runs on the first idle device; an exception out of a
/// task is the task's own business (the pool swallows nothing it can see: wrap tasks in std::packaged_task).
class DevicePool {
 public:
  using Task = std::function<void(PoolDevice&)>;
  explicit DevicePool(std::vector<PoolDevice> devices);
  /// Runs what is queued, then joins the threads.
  ~DevicePool();
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  void submit(Task task);
  std::size_t size() const { return devices_.size(); }
  const PoolDevice& device(std::size_t i) const { return devices_[i]; }

 private:
  void loop(PoolDevice& d);

  std::vector<PoolDevice> devices_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace larmor::stream
