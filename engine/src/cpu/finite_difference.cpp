// First-order forward differences and their adjoint on the CPU: the D of the smoothness and anatomical
// priors W of Haldar et al. (MRM 59:810, 2008) that Stone et al. (2008, eq. 1) put into ||W rho||^2.
//
//   (D x)[i]   = x[i + e] - x[i]      where i_axis < N_axis - 1,  0 on the last plane (Neumann boundary)
//   (D^H y)[i] = y[i - e] [i_axis > 0] - y[i] [i_axis < N_axis - 1]
// The second line follows from <D x, y> = sum_i conj(x[i+e] - x[i]) y[i] by collecting the terms of each
// x[j]; tests/unit/test_regularizer.cpp checks <D x, y> = <x, D^H y> on random data.
//
// Twin: cuda/finite_difference.cu. Part of CpuPriorOps (larmor/backend/prior_ops.hpp).
#include <string>

#include "cpu_backend.hpp"
#include "larmor/kernels/kernel_math.hpp"

namespace larmor::cpu {

void CpuPriorOps::finiteDifference(Buffer& out, const Buffer& in, const index_t dims[3], index_t batch, int axis,
                                   bool adjoint) {
  require(axis >= 0 && axis <= 2, "finite differences: axis must be 0, 1 or 2, got " + std::to_string(axis));
  require(dims[0] >= 1 && dims[1] >= 1 && dims[2] >= 1 && batch >= 0,
          "finite differences: image dimensions must be >= 1");
  const index_t n0 = dims[0], n1 = dims[1], n2 = dims[2];
  const index_t total = n0 * n1 * n2 * batch;
  require(static_cast<std::size_t>(total) * sizeof(cfloat) <= out.bytes() &&
              static_cast<std::size_t>(total) * sizeof(cfloat) <= in.bytes(),
          "finite differences: " + std::to_string(total) + " elements exceed a buffer");
  // Every output element reads a neighbour of its input element: in place would read updated values.
  require(out.ptr() != in.ptr() || total == 0, "finite differences cannot run in place");
  if (total == 0) return;
  cfloat* po = static_cast<cfloat*>(out.ptr());
  const cfloat* pi = static_cast<const cfloat*>(in.ptr());
  const index_t stride = kernels::axisStride(dims, axis);
  const index_t len = dims[axis];
  const index_t rows = n1 * n2 * batch;  // x-rows of n0 elements

#pragma omp parallel for schedule(static)
  for (index_t r = 0; r < rows; ++r) {
    const index_t y = r % n1, z = (r / n1) % n2;
    const index_t base = r * n0;
    for (index_t x = 0; x < n0; ++x) {
      const index_t c = axis == 0 ? x : axis == 1 ? y : z;  // coordinate along the axis
      const index_t i = base + x;
      if (!adjoint) {
        po[i] = c < len - 1 ? pi[i + stride] - pi[i] : cfloat(0.f, 0.f);
      } else {
        cfloat v(0.f, 0.f);
        if (c > 0) v += pi[i - stride];
        if (c < len - 1) v -= pi[i];
        po[i] = v;
      }
    }
  }
}

void CpuPriorOps::differenceNormal(Buffer& y, const Buffer& x, const Buffer* const w[3], const index_t dims[3],
                                   float alpha, bool accumulate) {
  require(dims[0] >= 1 && dims[1] >= 1 && dims[2] >= 1, "difference normal: image dimensions must be >= 1");
  const index_t n0 = dims[0], n1 = dims[1], n2 = dims[2], total = n0 * n1 * n2, plane = n0 * n1;
  const std::size_t bytes = static_cast<std::size_t>(total) * sizeof(cfloat);
  require(bytes <= y.bytes() && bytes <= x.bytes(), "difference normal: " + std::to_string(total) +
                                                        " elements exceed a buffer");
  require(y.ptr() != x.ptr() || total == 0, "difference normal cannot run in place");
  const cfloat* px = static_cast<const cfloat*>(x.ptr());
  cfloat* py = static_cast<cfloat*>(y.ptr());
  const cfloat* pw[3];
  for (int a = 0; a < 3; ++a) {
    pw[a] = w && w[a] ? static_cast<const cfloat*>(w[a]->ptr()) : nullptr;
    require(!pw[a] || bytes <= w[a]->bytes(), "difference normal: the weights of axis " + std::to_string(a) +
                                                  " have fewer than " + std::to_string(total) + " elements");
  }
  // The formula and its order of sums: larmor/backend/prior_ops.hpp (float steps, no contraction: the CUDA twin's
  // bits).
#pragma omp parallel for schedule(static)
  for (index_t r = 0; r < n1 * n2; ++r) {
    const index_t c1 = r % n1, c2 = r / n1;
    for (index_t c0 = 0; c0 < n0; ++c0) {
      const index_t i = c0 + n0 * r;
      const cfloat xi = px[i];
      float sx = 0.f, sy = 0.f;
      auto add = [&](const cfloat* wa, index_t at, index_t neighbour) {
        const float v = wa ? wa[at].real() : 1.f;
        const float dx = xi.real() - px[neighbour].real(), dy = xi.imag() - px[neighbour].imag();
        const float tx = v * dx, ty = v * dy;
        sx = sx + tx;
        sy = sy + ty;
      };
      if (c0 > 0) add(pw[0], i - 1, i - 1);
      if (c0 + 1 < n0) add(pw[0], i, i + 1);
      if (c1 > 0) add(pw[1], i - n0, i - n0);
      if (c1 + 1 < n1) add(pw[1], i, i + n0);
      if (c2 > 0) add(pw[2], i - plane, i - plane);
      if (c2 + 1 < n2) add(pw[2], i, i + plane);
      const float vx = alpha * sx, vy = alpha * sy;
      py[i] = accumulate ? cfloat(py[i].real() + vx, py[i].imag() + vy) : cfloat(vx, vy);
    }
  }
}

}  // namespace larmor::cpu
