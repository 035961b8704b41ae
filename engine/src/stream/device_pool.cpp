// The streaming server's devices and scheduler (larmor/stream/device_pool.hpp): devices opened from a --devices
// list, one thread per device taking tasks from one FIFO queue.
#include "larmor/stream/device_pool.hpp"

#include <omp.h>

#include <algorithm>
#include <future>
#include <set>
#include <sstream>

#include "larmor/backend/registry.hpp"
#include "larmor/recon/operator_cache.hpp"
#include "larmor/util/error.hpp"

namespace larmor::stream {

namespace {

std::vector<std::string> deviceSpecs(const std::string& spec, std::string* notice) {
  auto& reg = BackendRegistry::instance();
  std::vector<std::string> specs;
  if (spec == "all" || spec == "auto") {
    for (const auto& d : reg.devices())
      if (d.gpu) specs.push_back(d.id);
    if (specs.empty()) {
      if (notice) *notice = "no GPU (" + reg.whyNoGpu() + "): serving on the CPU";
      specs.push_back("cpu");
    }
    return specs;
  }
  std::stringstream list(spec);
  std::string one;
  std::set<std::string> seen;
  while (std::getline(list, one, ',')) {
    if (one.empty()) continue;
    require(one == "cpu" || seen.insert(one).second, "--devices " + spec + ": " + one + " is listed twice");
    specs.push_back(one);
  }
  require(!specs.empty(), "--devices " + spec + ": expected all, cpu, cpu,cpu or a list like cuda:0,cuda:1");
  return specs;
}

PoolDevice openOne(const std::string& list, const std::string& spec) {
  PoolDevice d;
  try {
    d.backend = spec == "cpu" ? makeCpuBackend() : BackendRegistry::instance().select(spec).backend;
  } catch (const Error& e) {
    std::string why = e.what();
    if (const std::string own = "--device " + spec + ": "; why.rfind(own, 0) == 0) why = why.substr(own.size());
    throw Error("--devices " + list + ": " + spec + ": " + why);
  }
  d.label = spec == "cpu" ? "cpu" : d.backend->info().id;
  d.gpu = spec != "cpu";
  d.cache = std::make_shared<recon::OperatorCache>();
  return d;
}

}  // namespace

std::vector<PoolDevice> openDevices(const std::string& spec, std::string* notice) {
  const std::vector<std::string> specs = deviceSpecs(spec, notice);
  BackendRegistry::instance().loadPlugins();  // once, before the threads read the providers
  std::vector<std::future<PoolDevice>> up;   // every context at once (0.2-0.35 s each on an H100)
  for (const auto& s : specs) up.push_back(std::async(std::launch::async, [&spec, s] { return openOne(spec, s); }));
  std::vector<PoolDevice> devices;
  for (auto& f : up) devices.push_back(f.get());
  const int cpus = static_cast<int>(std::count(specs.begin(), specs.end(), std::string("cpu")));
  if (cpus > 1) {
    const int threads = std::max(1, omp_get_max_threads() / cpus);
    int k = 0;
    for (auto& d : devices)
      if (!d.gpu) d.ompThreads = threads, d.label = "cpu#" + std::to_string(k++);
  }
  return devices;
}

DevicePool::DevicePool(std::vector<PoolDevice> devices) : devices_(std::move(devices)) {
  require(!devices_.empty(), "the server has no device");
  for (auto& d : devices_) threads_.emplace_back([this, &d] { loop(d); });
}

DevicePool::~DevicePool() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& t : threads_) t.join();
}

void DevicePool::submit(Task task) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
  }
  ready_.notify_one();
}

void DevicePool::loop(PoolDevice& d) {
  if (d.ompThreads > 0) omp_set_num_threads(d.ompThreads);
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task(d);
  }
}

}  // namespace larmor::stream
