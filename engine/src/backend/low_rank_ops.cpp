// makeLowRankOps: the locally low-rank prior's kernels for a backend without a Backend getter. A backend whose
// buffers are host memory (info().gpu false) gets the CPU twin; a GPU backend gets what a plugin registered
// when it was loaded (cuda/low_rank.cu registers the CUDA twin from a static initialiser of the plugin, which
// the engine dlopens and never closes: engine/src/backend/registry.cpp). Each factory answers nullptr for a
// backend it did not make, so the first that answers is the one.
#include "larmor/backend/low_rank_ops.hpp"

#include <mutex>
#include <vector>

#include "../cpu/low_rank.hpp"
#include "larmor/backend/backend.hpp"

namespace larmor {
namespace {

struct Factories {
  std::mutex mutex;
  std::vector<LowRankOpsFactory> list;
};

Factories& factories() {
  static Factories f;
  return f;
}

}  // namespace

void registerLowRankOpsFactory(LowRankOpsFactory factory) {
  require(factory != nullptr, "low-rank ops: a null factory cannot be registered");
  auto& f = factories();
  std::lock_guard lock(f.mutex);
  f.list.push_back(factory);
}

std::unique_ptr<LowRankOps> makeLowRankOps(Backend& backend) {
  const DeviceInfo info = backend.info();
  if (!info.gpu) return cpu::makeCpuLowRankOps();
  std::vector<LowRankOpsFactory> list;
  {
    auto& f = factories();
    std::lock_guard lock(f.mutex);
    list = f.list;
  }
  for (LowRankOpsFactory make : list)
    if (auto ops = make(backend)) return ops;
  throw Error("low-rank ops: no implementation for device " + info.id + " (" + info.name +
              "): its plugin registered none");
}

}  // namespace larmor
