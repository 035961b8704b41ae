#pragma once
// Receive-coil sensitivities written as a short Fourier series, so that multi-coil k-space stays
// analytic (Guerquin-Kern et al., "Realistic analytical phantoms for parallel MRI", IEEE TMI 31:626,
// 2012):
//   s_c(r) = Σ_m a_{c,m} exp(2πi m·r / P),   P = 2 FOV units, |m_x|, |m_y| ≤ M, |m_z| ≤ Mz,
// hence the k-space of s_c·ρ is Σ_m a_{c,m} F(k - m/P), with F the phantom's transform. The period
// P = 2 is twice the FOV, so the series need not be periodic across the FOV itself.
// Single coil (coils = 1) means s ≡ 1: one term, m = 0, a = 1.
#include <array>
#include <cstdint>
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/phantom/phantom.hpp"

namespace larmor::phantom {

struct CoilModel {
  int coils = 1;
  int dims = 2;     ///< 2: s(x, y); 3: s(x, y, z)
  int order = 0;    ///< M: |m_x|, |m_y| ≤ M
  int orderZ = 0;   ///< Mz: |m_z| ≤ Mz (0 in 2D)
  double period = 2;  ///< P in FOV units
  std::vector<std::array<int, 3>> terms;  ///< the frequencies m
  std::vector<cdouble> coefficients;      ///< a_{c,m} at [term + terms.size() * coil]

  cdouble coefficient(int coil, std::size_t term) const { return coefficients[term + terms.size() * coil]; }
};

/// Coil c sits at angle 2πc/C on a circle of radius 0.7 FOV around the object (in the plane z = 0).
/// Its target map has a magnitude 1/(1 + d²/0.25) falling off with the distance d to the coil and a
/// phase 2πc/C + (π/2) r·e⊥ that varies linearly across the object in a direction of its own; the target
/// is tapered to zero towards the edge of the period and projected onto the Fourier basis (trapezoidal
/// rule on the period, spectrally accurate for the smooth periodic taper). The coefficients are then
/// scaled so that the maximum over the FOV of sqrt(Σ_c |s_c|²) is 1 (on a 128² or 48³ grid).
/// dims: 2 or 3; order M ≥ 0 (in-plane); along z (3D) the order is min(M, 1).
/// rings > 1 (3D): the coils are dealt round-robin to `rings` rings at z evenly spread over [-0.3, 0.3] FOV,
/// each coil's phase also varies by (π/2) z (sign alternating between rings), and the z order is M (so that
/// the sensitivities differ along z as pe2 acceleration needs).
CoilModel makeCoilModel(int coils, int dims, int order = 2, int rings = 1);
/// The 2D model of the plane z = z0 of a 3D model: b_{c,(mx,my)} = Σ_mz a_{c,m} exp(2πi mz z0 / P).
CoilModel sliceCoilModel(const CoilModel& model3D, double z0);

cdouble coilSensitivity(const CoilModel& model, int coil, double x, double y, double z = 0);
/// Sensitivities on the raster of Phantom::rasterize (pixel n at (n - floor(N/2))/N): imageShape
/// [nx, ny] or [nx, ny, nz] → [nx, ny, nz, coils].
CArray coilMaps(const CoilModel& model, const Shape& imageShape);

/// Multi-coil k-space of s_c·ρ at `count` points k (xyz interleaved: k[3i], k[3i+1], k[3i+2], cycles
/// per FOV): out[i + count * c]. F is evaluated once per point and term (terms × shapes transforms),
/// then each coil costs one multiply-add per term. The model's dims must match the phantom's unless
/// it is the single-coil model.
void multiCoilKspace(const Phantom& phantom, const CoilModel& model, const double* k, index_t count,
                     cdouble* out);
std::vector<cdouble> multiCoilKspace(const Phantom& phantom, const CoilModel& model,
                                     const std::vector<std::array<double, 3>>& k);

/// Adds complex white Gaussian noise, standard deviation sigma in the real and in the imaginary part.
/// Deterministic for a seed: the data are cut into blocks of 65536 samples, each with its own
/// std::mt19937_64 seeded from (seed, block), so the result does not depend on the thread count.
void addNoise(CArray& data, float sigma, std::uint64_t seed);
/// The same for n samples at data, with one generator seeded from `seed`.
void addNoise(cfloat* data, index_t n, float sigma, std::uint64_t seed);
/// A well-mixed 64-bit seed derived from a seed and a stream number (SplitMix64 finaliser).
std::uint64_t deriveSeed(std::uint64_t seed, std::uint64_t stream);

}  // namespace larmor::phantom
