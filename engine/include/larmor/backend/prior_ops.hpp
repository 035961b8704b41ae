#pragma once
// PriorOps: the kernels of the finite-difference priors of the iterative reconstruction
// (ops/regularizer.hpp: smoothness and anatomical, Haldar et al., MRM 59:810, 2008; Stone et al. 2008,
// eq. 1). Each backend provides one (Backend::priorOps(); engine/src/cpu/prior.cpp and
// finite_difference.cpp, cuda/prior.cu and finite_difference.cu), so the Backend interface stays the same
// when a prior is added: a new regularizer adds its kernels here, or an interface of its own next to this
// one, never to Backend. Both implementations give the same bits (tests/gpu/test_gpu_iterative.cpp).
#include <cstdint>
#include <string>

#include "larmor/array/array.hpp"
#include "larmor/backend/buffer.hpp"

namespace larmor {

class PriorOps {
 public:
  virtual ~PriorOps() = default;

  /// Forward differences along `axis` (0, 1, 2) of images [dims[0], dims[1], dims[2], batch]:
  /// out[i] = in[i + e_axis] - in[i], 0 on the last plane (Neumann boundary); `adjoint` applies D^H.
  virtual void finiteDifference(Buffer& out, const Buffer& in, const index_t dims[3], index_t batch, int axis,
                                bool adjoint) = 0;

  /// One pass of the smoothness and anatomical priors' normal operator over one image [dims] (ops/regularizer.hpp):
  ///   y[i] = (accumulate ? y[i] : 0) + alpha s[i],  s[i] = sum over a = 0, 1, 2 of
  ///          w_a[i - e_a] (x[i] - x[i - e_a]) [i_a > 0]  +  w_a[i] (x[i] - x[i + e_a]) [i_a < N_a - 1],
  /// = (D^H diag(w) D x)[i] for the stacked forward differences D, summed in that order in float, each product and
  /// sum rounded (no contraction); w_a's real parts, null: ones (axes of extent 1 add nothing). x and y distinct.
  virtual void differenceNormal(Buffer& y, const Buffer& x, const Buffer* const w[3], const index_t dims[3],
                                float alpha, bool accumulate) = 0;

  /// Over the neighbour pairs (i, i + e_a) inside one image [dims] (every axis a of extent > 1) of the
  /// magnitude m = |image|, m computed in double and rounded to float: the difference |m(i + e_a) - m(i)|
  /// at rank k of their ascending order (as std::nth_element would place it; k < their count), their
  /// maximum, and whether every m is finite (when not, kth and maximum mean nothing).
  struct NeighbourDifferences {
    float kth = 0, maximum = 0;
    bool finite = true;
  };
  /// How many such pairs an image [dims] has: sum over the axes of extent > 1 of N - N / N_axis.
  static std::uint64_t neighbourPairs(const index_t dims[3]) {
    const index_t n = dims[0] * dims[1] * dims[2];
    std::uint64_t count = 0;
    for (int a = 0; a < 3; ++a)
      if (dims[a] > 1) count += static_cast<std::uint64_t>(n - n / dims[a]);
    return count;
  }
  virtual NeighbourDifferences neighbourDifferences(const Buffer& image, const index_t dims[3], std::uint64_t k) = 0;

  /// Edge weights of the anatomical prior along `axis` (real parts; imaginary 0): out[i] =
  /// float(1 / sqrt(1 + t^2)), t = (m(i + e) - m(i)) / delta in double, where i_axis < N_axis - 1; 1 on the
  /// last plane. m as above.
  virtual void edgeWeights(Buffer& out, const Buffer& image, const index_t dims[3], int axis, double delta) = 0;

  /// diag(D_a^H diag(w) D_a) of the forward differences along `axis`, added to out's real part:
  /// out[i] += w[i] [i_a < N_a - 1] + w[i - e_a] [i_a > 0] (w's real parts; w null: ones), in float.
  virtual void addDifferenceDiagonal(Buffer& out, const Buffer* w, const index_t dims[3], int axis) = 0;

 protected:
  /// The argument checks of the set-up ops, the same on every backend (and so the same messages).
  static void checkImage(const index_t dims[3], const char* op) {
    require(dims[0] >= 1 && dims[1] >= 1 && dims[2] >= 1, std::string(op) + ": image dimensions must be >= 1");
  }
  static void checkAxis(int axis, const char* op) {
    require(axis >= 0 && axis <= 2, std::string(op) + ": axis must be 0, 1 or 2, got " + std::to_string(axis));
  }
};

}  // namespace larmor
