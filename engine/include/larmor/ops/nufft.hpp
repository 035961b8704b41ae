#pragma once
// Non-uniform Fourier transforms between an image grid and k-space samples, FINUFFT-shaped:
// make a plan (trajectory, image shape, options) -> forward/adjoint many times -> destroy.
// Two kinds of plan share the interface: the NUFFT (Kaiser-Bessel gridding on an oversampled grid,
// deapodization) and the exact non-uniform DFT (Stone et al.'s F d and F^H d).
//
// Definitions (raw sums, no normalisation; pipelines apply the physics scale, docs/conventions.md):
//   image pixel n at r_n = (n - c) / N per dimension (c = floor(N/2)), k_j in cycles per FOV;
//   forward  d_j = sum_n rho_n exp(-2 pi i k_j . r_n)
//   adjoint  rho_n = sum_j d_j exp(+2 pi i k_j . r_n)
// Layouts (dimension 0 fastest): image [N0, N1, N2, batch], samples [M, batch], M = samples per coil.
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/backend/backend.hpp"

namespace larmor {

/// Radial structure for TRON's output-parallel gridding (linear or golden-angle radial, 2D).
struct RadialInfo {
  index_t readout = 0;           ///< samples per spoke
  index_t spokes = 0;
  std::vector<float> anglesRad;  ///< angle of each spoke (direction of increasing readout index)
  float kStart = 0;              ///< k (cycles/FOV) of sample 0 along the spoke direction (negative for full spokes)
  float kStep = 1;               ///< spacing of readout samples (cycles/FOV)
};

struct NufftGeometry {
  int dims = 2;                      ///< 2 or 3
  index_t image[3] = {0, 0, 1};      ///< image matrix N (image[2] = 1 in 2D)
  RArray trajectory;                 ///< [3, M] (or [3, readout, profiles]), cycles/FOV; z ignored in 2D
  std::optional<RadialInfo> radial;  ///< present for radial trajectories (TRON)
  index_t samples() const { return trajectory.size() / 3; }
};

enum class KernelEvaluation { Table, Direct };
/// Which adjoint spreader the GPU uses: Gregerson's sector-based output-driven gridding (any trajectory)
/// or TRON's output-parallel radial gridding (radial only). The CPU has one (binned) spreader.
enum class Spreader { Auto, Sector, Tron };

struct NufftOptions {
  int width = 4;              ///< Kaiser-Bessel kernel width W (oversampled grid points)
  double oversampling = 2.0;  ///< grid oversampling sigma
  KernelEvaluation kernel = KernelEvaluation::Table;
  Spreader spreader = Spreader::Auto;
  /// Beatty, Nishimura, Pauly 2005 (IEEE TMI 24:799), eq. 5: the shape that keeps aliasing lowest.
  double beta() const {
    const double w = width, s = oversampling;
    return M_PI * std::sqrt(std::max(0.0, (w * w) / (s * s) * (s - 0.5) * (s - 0.5) - 0.8));
  }
};

/// Trigonometry of the exact DFT: sincospif (accurate), __sincosf (Stone's GPU.FastTrig), or one
/// sincos per sample and voxel row with complex rotations along the row (phase recurrence).
enum class TrigMode { Accurate, Fast, Recurrence };
struct DftOptions {
  TrigMode trig = TrigMode::Accurate;
};

class NufftPlan {
 public:
  virtual ~NufftPlan() = default;
  virtual index_t samples() const = 0;
  virtual Shape imageShape() const = 0;  ///< [N0, N1, N2]
  /// samples [M, batch] -> image [N0, N1, N2, batch] (deapodized for a NUFFT).
  virtual void adjoint(const Buffer& samples, Buffer& image, index_t batch) = 0;
  /// image [N0, N1, N2, batch] -> samples [M, batch].
  virtual void forward(const Buffer& image, Buffer& samples, index_t batch) = 0;
  /// interp(spread(w)) for one set of sample weights (Pipe-Menon density compensation); complex
  /// buffers of M elements. Exact DFT plans may implement it as forward(adjoint(w)).
  virtual void spreadInterpolate(const Buffer& weights, Buffer& out) = 0;
};

}  // namespace larmor
