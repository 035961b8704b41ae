#pragma once
// Stage timers: wall-clock time per pipeline stage, marked with the device that ran it. On a GPU the
// stage ends with a synchronize so the time covers the queued work.
#include <chrono>
#include <string>
#include <vector>

namespace larmor {

class Backend;

struct StageTiming {
  std::string stage;
  double milliseconds = 0;
  std::string device;  ///< "cpu", "cuda:0"
};

class Timings {
 public:
  void add(std::string stage, double ms, std::string device) {
    stages_.push_back({std::move(stage), ms, std::move(device)});
  }
  const std::vector<StageTiming>& stages() const { return stages_; }
  double totalMilliseconds() const {
    double t = 0;
    for (auto& s : stages_) t += s.milliseconds;
    return t;
  }

 private:
  std::vector<StageTiming> stages_;
};

/// Times the scope as one stage; synchronizes `backend` (if given) before reading the clock.
class ScopedStage {
 public:
  ScopedStage(Timings& timings, std::string stage, Backend* backend = nullptr);
  ~ScopedStage();
  ScopedStage(const ScopedStage&) = delete;
  ScopedStage& operator=(const ScopedStage&) = delete;

 private:
  Timings& timings_;
  std::string stage_;
  Backend* backend_;
  std::string device_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace larmor
