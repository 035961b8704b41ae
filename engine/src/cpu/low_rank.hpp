#pragma once
// The locally low-rank prior's CPU twin (low_rank.cpp), made by makeLowRankOps (backend/low_rank_ops.cpp).
#include <memory>

#include "larmor/backend/low_rank_ops.hpp"

namespace larmor::cpu {

/// LowRankOps on host memory (any backend whose buffers are host memory).
std::unique_ptr<LowRankOps> makeCpuLowRankOps();

}  // namespace larmor::cpu
