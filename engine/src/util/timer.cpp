#include "larmor/util/timer.hpp"

#include "larmor/backend/backend.hpp"

namespace larmor {

ScopedStage::ScopedStage(Timings& timings, std::string stage, Backend* backend)
    : timings_(timings), stage_(std::move(stage)), backend_(backend) {
  device_ = backend_ ? backend_->info().id : "cpu";
  if (backend_) backend_->synchronize();
  start_ = std::chrono::steady_clock::now();
}

ScopedStage::~ScopedStage() {
  try {
    if (backend_) backend_->synchronize();
  } catch (...) {
    // A failed GPU call is reported by the op that failed; the timer must not throw from a destructor.
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  timings_.add(stage_, ms, device_);
}

}  // namespace larmor
