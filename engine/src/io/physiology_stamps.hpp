#pragma once
// Trigger times from physiology (PMU) time stamps, one rule for every reader (ISMRMRD
// physiology_time_stamp[0], Siemens mdh ulPMUTimeStamp, which siemens_to_ismrmrd copies unchanged):
// a stamp counts 2.5 ms ticks since the last trigger (the MDH convention; the MRD specification names no
// unit); a frame's trigger time is the mean stamp of its imaging readouts. Unknown (NaN) when no readout is
// stamped, or when any stamp exceeds 10 s (4000 ticks, longer than any cardiac cycle plus trigger delay):
// then it is the free-running PMU clock of an ungated scan (the bundled twix files: ~1e7 ticks).
#include <cstdint>
#include <limits>

namespace larmor::io {

struct PhysiologyStamps {
  static constexpr double kTickMs = 2.5;
  static constexpr std::uint64_t kMaxTriggerTicks = 4000;
  double sum = 0;
  std::int64_t count = 0;
  bool stamped = false, freeRunning = false;

  void add(std::uint64_t ticks) {
    sum += static_cast<double>(ticks);
    ++count;
    stamped = stamped || ticks != 0;
    freeRunning = freeRunning || ticks > kMaxTriggerTicks;
  }
  /// The frame's trigger time in ms, NaN when unknown (above).
  double triggerTimeMs() const {
    return stamped && !freeRunning && count > 0 ? kTickMs * sum / static_cast<double>(count)
                                                : std::numeric_limits<double>::quiet_NaN();
  }
};

}  // namespace larmor::io
