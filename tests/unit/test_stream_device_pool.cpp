// The streaming server's devices and scheduler (larmor/stream/device_pool.hpp): a --devices list opens one warm
// backend per entry (CPU workers share the cores' threads), a GPU listed twice is refused, and the pool runs its
// tasks on several devices at once, each device taking the oldest task when it is idle.
#include <gtest/gtest.h>

#include <omp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "larmor/stream/device_pool.hpp"
#include "larmor/util/error.hpp"

namespace larmor::stream {
namespace {

TEST(StreamDevicePool, CpuWorkersShareTheThreads) {
  const auto devices = openDevices("cpu,cpu", nullptr);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].label, "cpu#0");
  EXPECT_EQ(devices[1].label, "cpu#1");
  EXPECT_NE(devices[0].backend, devices[1].backend);  // each its own plans
  EXPECT_NE(devices[0].cache, devices[1].cache);
  EXPECT_EQ(devices[0].ompThreads, std::max(1, omp_get_max_threads() / 2));
  const auto one = openDevices("cpu", nullptr);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].label, "cpu");
  EXPECT_EQ(one[0].ompThreads, 0);  // the process's threads
}

TEST(StreamDevicePool, ListsAreChecked) {
  try {
    openDevices("cuda:0,cuda:0", nullptr);
    FAIL() << "a GPU listed twice was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--devices cuda:0,cuda:0: cuda:0 is listed twice"), std::string::npos) << e.what();
  }
  EXPECT_THROW(openDevices(",", nullptr), Error);
  std::string notice;
  const auto all = openDevices("all", &notice);
  ASSERT_FALSE(all.empty());
  if (!all[0].gpu) EXPECT_NE(notice.find("no GPU"), std::string::npos) << notice;  // the CPU, and why
}

// Two tasks that each wait for the other finish only when two devices run them at the same time.
TEST(StreamDevicePool, TasksRunOnSeveralDevicesAtOnce) {
  std::mutex m;
  std::condition_variable cv;
  int arrived = 0;
  std::set<std::string> labels;
  std::atomic<int> done{0};
  {
    DevicePool pool(openDevices("cpu,cpu", nullptr));
    for (int k = 0; k < 2; ++k)
      pool.submit([&](PoolDevice& d) {
        std::unique_lock<std::mutex> lock(m);
        labels.insert(d.label);
        ++arrived;
        cv.notify_all();
        EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return arrived == 2; })) << "ran one at a time";
        ++done;
      });
  }  // the destructor runs what is queued and joins
  EXPECT_EQ(done, 2);
  EXPECT_EQ(labels, (std::set<std::string>{"cpu#0", "cpu#1"}));
}

TEST(StreamDevicePool, OneDeviceTakesTasksInArrivalOrder) {
  std::vector<int> order;
  {
    DevicePool pool(openDevices("cpu", nullptr));
    for (int k = 0; k < 50; ++k) pool.submit([&order, k](PoolDevice&) { order.push_back(k); });
  }
  ASSERT_EQ(order.size(), 50u);
  for (int k = 0; k < 50; ++k) EXPECT_EQ(order[static_cast<std::size_t>(k)], k);
}

// Every task of several submitting threads runs exactly once.
TEST(StreamDevicePool, NoTaskLostUnderConcurrentSubmission) {
  std::atomic<int> runs{0};
  {
    DevicePool pool(openDevices("cpu,cpu,cpu", nullptr));
    std::vector<std::thread> clients;
    for (int c = 0; c < 4; ++c)
      clients.emplace_back([&] {
        for (int k = 0; k < 250; ++k) pool.submit([&runs](PoolDevice&) { ++runs; });
      });
    for (auto& t : clients) t.join();
  }
  EXPECT_EQ(runs, 1000);
}

}  // namespace
}  // namespace larmor::stream
