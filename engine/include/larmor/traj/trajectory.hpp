#pragma once
// Non-Cartesian trajectories: the common container, checks and recognisers used by the generators
// (radial.hpp, spiral.hpp), the density compensation (dcf.hpp) and the reconstructions.
//
// Unit convention (one, everywhere inside the engine): k in cycles per FOV (BART's unit), arrays
// [3, readout, profiles] with dimension 0 = (kx, ky, kz) fastest. A matrix of N pixels resolves
// |k| <= N/2; an image pixel n sits at r = (n - floor(N/2)) / N FOV units (docs/conventions.md).
// Conversions happen at the edges: ISMRMRD's normalised trajectories (|k| <= 1/2) are multiplied by
// the matrix on reading; BART's .cfl trajectories already use this unit.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/data/dataset.hpp"
#include "larmor/ops/nufft.hpp"

namespace larmor::traj {

struct Trajectory {
  RArray k;                          ///< [3, readout, profiles], cycles/FOV
  TrajectoryKind kind = TrajectoryKind::Other;
  int dims = 2;                      ///< 2 (kz = 0) or 3
  std::optional<RadialInfo> radial;  ///< filled for linear and golden-angle 2D radial (TRON)
  index_t readout() const { return k.shape()[1]; }
  index_t profiles() const { return k.shape()[2]; }
  index_t samples() const { return k.size() / 3; }
};

/// Checks a trajectory for an image of `image` pixels (image[2] ignored when dims == 2): not empty,
/// three coordinates per sample, finite, and every |k_d| <= 1.01 * N_d / 2 (the band the matrix
/// resolves; a little slack for rounding of scanner trajectories). Throws Error naming `what`, the
/// sample and the problem; out-of-range samples say "wrong trajectory scale?" because the usual cause
/// is a trajectory in another unit (radians per pixel, normalised |k| <= 1/2, 1/m).
void validate(const RArray& k, int dims, const index_t image[3], const std::string& what = "trajectory");

/// Largest |k| (Euclidean, all three coordinates).
double maxRadius(const RArray& k);

/// The line through k = 0 of one profile of n samples (k: x, y, z of each): its direction u, a unit vector
/// towards the sample farthest from k = 0, and each sample's signed position t_i = k_i . u along it. False when
/// every sample is at k = 0. `offLine` (when given) gets the largest distance of a sample from that line.
bool profileLine(const float* k, index_t n, double u[3], std::vector<double>& t, double* offLine = nullptr);

/// Recognises 2D radial sampling: every profile a straight line through k = 0 with the same start
/// (signed distance from the centre) and the same sample spacing, kz = 0. Returns TRON's description
/// (angles of the direction of increasing readout index), or nothing. Tolerance: 1e-3 cycles/FOV
/// relative to max(1, |k|max), so float round-off of generated or stored trajectories passes.
std::optional<RadialInfo> detectRadial(const RArray& k);

/// Whether every profile is a straight line through k = 0 in 3D (kooshball / 3D radial) or 2D.
bool isRadialLines(const RArray& k);

/// A stack of 2D trajectories (stack of spirals, stack of stars): every profile at one kz, the kz planes
/// equally spaced (at least 2), each plane holding the same in-plane profiles in the same order.
struct StackInfo {
  RArray plane;                          ///< [3, readout, profiles per plane], the in-plane profiles, kz = 0
  double kzSpacing = 1;                  ///< cycles/FOV between planes
  std::vector<index_t> profileInPlane;   ///< per profile of the stack: its index within its plane
};
/// Recognises a stack (tolerance 1e-4 cycles/FOV relative to max(1, |k|max)), or nothing.
std::optional<StackInfo> detectStack(const RArray& k);

/// 64-bit FNV-1a hash of the coordinates' bytes and shape (DCF cache key).
std::uint64_t hash(const RArray& k);

/// The plan geometry for an image of `image` pixels: the trajectory viewed as [3, M], dims 2 or 3.
NufftGeometry geometry(const RArray& k, int dims, const index_t image[3],
                       std::optional<RadialInfo> radial = std::nullopt);

}  // namespace larmor::traj
