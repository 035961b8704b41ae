#pragma once
// The GRAPPA tests' simulated Cartesian acquisitions (tests/unit/test_grappa.cpp, tests/gpu/test_gpu_grappa.cpp):
// an n x n (x nz) phantom, `coils` coils, acceleration `accel` with 24 ACS lines, optional noise and slices.
#include "larmor/phantom/simulate.hpp"

namespace larmor::test {

inline phantom::SimulateSettings grappaSim(index_t n, int coils, int accel, float noise = 0, index_t slices = 1,
                                           index_t nz = 1) {
  phantom::SimulateSettings s;
  s.matrix[0] = n, s.matrix[1] = n, s.matrix[2] = nz;
  s.slices = slices;
  s.coils = coils;
  s.accel = accel;
  s.acs = 24;
  s.noiseSigma = noise;
  return s;
}

/// 3D, n x n x nz, accelerated ry x rz with an acs x acs calibration centre box (2D GRAPPA); two coil rings
/// along z whatever the acceleration, so that the fully sampled reference (1 x 1) has the same coils.
inline phantom::SimulateSettings grappaSim2D(index_t n, index_t nz, int coils, int ry, int rz, int acs,
                                             float noise = 0) {
  phantom::SimulateSettings s = grappaSim(n, coils, ry, noise, 1, nz);
  s.accelPe2 = rz;
  s.acs = acs;
  s.coilRings = 2;
  return s;
}

}  // namespace larmor::test
