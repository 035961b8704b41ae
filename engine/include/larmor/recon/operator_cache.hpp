#pragma once
// What a caller that reconstructs many datasets one after another on the same backends keeps between the calls
// (a batch worker: a cohort's slices usually share one trajectory): per backend, the last non-Cartesian --method
// cg / cs call's trajectory operators (the F^H d plan, the Toeplitz Q, the calibration box's gridding), taken by
// the next call whose trajectory, image geometry and settings are the same. The trajectory is compared in full
// (not by a hash) and the settings by their whole canonical JSON, so a reused operator is the one that call would
// have built: its images are the same bits. One entry per backend (Q of a 3D problem holds the 8N grid on the
// device). Thread-safe; to be destroyed before the backends it names.
#include <memory>

namespace larmor {
class Backend;
}

namespace larmor::recon {

class OperatorCache {
 public:
  OperatorCache();
  ~OperatorCache();
  OperatorCache(const OperatorCache&) = delete;
  OperatorCache& operator=(const OperatorCache&) = delete;
  struct Impl;  ///< iterative_slices.cpp
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace larmor::recon
