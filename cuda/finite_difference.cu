// First-order forward differences and their adjoint on the GPU (twin: engine/src/cpu/finite_difference.cpp,
// the CPU reference with the formulas; part of CudaPriorOps): the D of the smoothness and anatomical priors W (Haldar et
// al. 2008; Stone et al. 2008, eq. 1). One thread per output element in a grid-stride loop; it reads its
// element and one neighbour along the axis, so the op is memory-bound (two reads, one write) and the
// neighbour's read is coalesced for axes 1 and 2 and hits the same cache line for axis 0.
#include <cstdint>
#include <limits>
#include <string>

#include "check.hpp"
#include "cuda_backend.hpp"
#include "device_math.hpp"
#include "larmor/kernels/kernel_math.hpp"

namespace larmor::cuda {
namespace {

/// The coordinate along the axis of element i: (i / stride) mod len.
template <class U>
struct AxisIndex {
  DividerFor<U> stride, len;
  LARMOR_HD LARMOR_INLINE U coordinate(U i) const {
    const U q = static_cast<U>(stride.div(i));
    return q - static_cast<U>(len.div(q)) * static_cast<U>(len.divisor);
  }
};

template <class U, bool kAdjoint>
__global__ void finiteDifferenceKernel(float2* __restrict__ out, const float2* __restrict__ in, U total,
                                       AxisIndex<U> ax) {
  const U step = static_cast<U>(gridDim.x) * blockDim.x;
  const U strideU = static_cast<U>(ax.stride.divisor), last = static_cast<U>(ax.len.divisor) - 1;
  for (U i = static_cast<U>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const U c = ax.coordinate(i);
    float2 v{0.f, 0.f};
    if constexpr (!kAdjoint) {
      if (c < last) {
        const float2 a = in[i + strideU], b = in[i];
        v = float2{a.x - b.x, a.y - b.y};
      }
    } else {
      if (c > 0) v = in[i - strideU];
      if (c < last) {
        const float2 b = in[i];
        v.x -= b.x;
        v.y -= b.y;
      }
    }
    out[i] = v;
  }
}

template <class U>
void launch(const Launch& l, float2* out, const float2* in, index_t total, index_t stride, index_t len,
            bool adjoint) {
  AxisIndex<U> ax{DividerFor<U>(static_cast<U>(stride)), DividerFor<U>(static_cast<U>(len))};
  const unsigned grid = gridFor(total, l);
  if (adjoint)
    finiteDifferenceKernel<U, true><<<grid, kThreads, 0, l.stream>>>(out, in, static_cast<U>(total), ax);
  else
    finiteDifferenceKernel<U, false><<<grid, kThreads, 0, l.stream>>>(out, in, static_cast<U>(total), ax);
  LARMOR_CUDA_CHECK_LAUNCH();
}

/// PriorOps::differenceNormal: one thread per voxel, its six neighbours' reads coalesced (axis 0: the same cache
/// lines; axes 1 and 2: the rows and planes the neighbouring blocks read), every product and sum rounded as the
/// CPU's (no contraction) so that both backends give the same bits.
template <class U>
__global__ void differenceNormalKernel(float2* __restrict__ y, const float2* __restrict__ x, const float2* __restrict__ w0,
                                       const float2* __restrict__ w1, const float2* __restrict__ w2, U total,
                                       DividerFor<U> n0, DividerFor<U> n1, U plane, float alpha, bool accumulate) {
  const U step = static_cast<U>(gridDim.x) * blockDim.x;
  const U len0 = static_cast<U>(n0.divisor), len1 = static_cast<U>(n1.divisor), len2 = total / plane;
  for (U i = static_cast<U>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += step) {
    const U row = static_cast<U>(n0.div(i)), c0 = i - row * len0, c2 = static_cast<U>(n1.div(row)),
            c1 = row - c2 * len1;
    const float2 xi = x[i];
    float sx = 0.f, sy = 0.f;
    auto add = [&](const float2* w, U at, U neighbour) {
      const float wa = w ? w[at].x : 1.f;
      const float2 xn = x[neighbour];
      sx = __fadd_rn(sx, __fmul_rn(wa, __fsub_rn(xi.x, xn.x)));
      sy = __fadd_rn(sy, __fmul_rn(wa, __fsub_rn(xi.y, xn.y)));
    };
    if (c0 > 0) add(w0, i - 1, i - 1);
    if (c0 + 1 < len0) add(w0, i, i + 1);
    if (c1 > 0) add(w1, i - len0, i - len0);
    if (c1 + 1 < len1) add(w1, i, i + len0);
    if (c2 > 0) add(w2, i - plane, i - plane);
    if (c2 + 1 < len2) add(w2, i, i + plane);
    float2 v{__fmul_rn(alpha, sx), __fmul_rn(alpha, sy)};
    if (accumulate) {
      const float2 old = y[i];
      v = float2{__fadd_rn(old.x, v.x), __fadd_rn(old.y, v.y)};
    }
    y[i] = v;
  }
}

}  // namespace

void CudaPriorOps::differenceNormal(Buffer& y, const Buffer& x, const Buffer* const w[3], const index_t dims[3],
                                    float alpha, bool accumulate) {
  require(dims[0] >= 1 && dims[1] >= 1 && dims[2] >= 1, "difference normal: image dimensions must be >= 1");
  const index_t total = dims[0] * dims[1] * dims[2];
  float2* py = be_.elements(y, total, "differenceNormal");
  const float2* px = be_.elements(x, total, "differenceNormal");
  require(static_cast<const void*>(py) != static_cast<const void*>(px) || total == 0,
          "difference normal cannot run in place");
  const float2* pw[3];
  for (int a = 0; a < 3; ++a) pw[a] = w && w[a] ? be_.elements(*w[a], total, "differenceNormal") : nullptr;
  if (total == 0) return;
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  const Launch& l = be_.launch_;
  const unsigned grid = gridFor(total, l);
  auto run = [&](auto u) {
    using U = decltype(u);
    differenceNormalKernel<U><<<grid, kThreads, 0, l.stream>>>(
        py, px, pw[0], pw[1], pw[2], static_cast<U>(total), DividerFor<U>(static_cast<U>(dims[0])),
        DividerFor<U>(static_cast<U>(dims[1])), static_cast<U>(dims[0] * dims[1]), alpha, accumulate);
    LARMOR_CUDA_CHECK_LAUNCH();
  };
  // 32-bit indices while every neighbour's index fits (the grid stride steps past the end without wrapping).
  if (total + dims[0] * dims[1] <= static_cast<index_t>(std::numeric_limits<std::int32_t>::max()))
    run(std::uint32_t{});
  else
    run(std::uint64_t{});
}

void CudaPriorOps::finiteDifference(Buffer& out, const Buffer& in, const index_t dims[3], index_t batch, int axis,
                                   bool adjoint) {
  require(axis >= 0 && axis <= 2, "finite differences: axis must be 0, 1 or 2, got " + std::to_string(axis));
  require(dims[0] >= 1 && dims[1] >= 1 && dims[2] >= 1 && batch >= 0,
          "finite differences: image dimensions must be >= 1");
  const index_t total = dims[0] * dims[1] * dims[2] * batch;
  float2* po = be_.elements(out, total, "finiteDifference");
  const float2* pi = be_.elements(in, total, "finiteDifference");
  require(static_cast<const void*>(po) != static_cast<const void*>(pi) || total == 0,
          "finite differences cannot run in place");
  if (total == 0) return;
  const index_t stride = kernels::axisStride(dims, axis);
  std::lock_guard lock(be_.mutex_);
  be_.activate();
  // 32-bit indices (multiply-shift division) while they fit, with room for the grid stride to step past
  // the end without wrapping: the common case, several times cheaper.
  if (total <= static_cast<index_t>(std::numeric_limits<std::int32_t>::max()))
    launch<std::uint32_t>(be_.launch_, po, pi, total, stride, dims[axis], adjoint);
  else
    launch<std::uint64_t>(be_.launch_, po, pi, total, stride, dims[axis], adjoint);
}

}  // namespace larmor::cuda
