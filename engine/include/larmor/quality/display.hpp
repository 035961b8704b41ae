#pragma once
// What a viewer needs from an image besides the quality metrics: components of complex data, display
// windows from percentiles, the value under the cursor, one plane of a volume, the comparison truth.
// The GUI draws; the numbers it draws come from here (no numerics in ui/).
#include <string>

#include "larmor/array/array.hpp"
#include "larmor/backend/backend.hpp"
#include "larmor/data/dataset.hpp"
#include "larmor/quality/metrics.hpp"

namespace larmor::quality {

enum class Component { Magnitude, Phase, Real, Imaginary };
std::string toString(Component c);            ///< "magnitude", "phase", "real", "imaginary"
Component componentFromString(const std::string& s);  ///< throws Error naming the choices

/// The component of every voxel, same shape. Phase is atan2(im, re) in (-pi, pi]. `scale` multiplies
/// the magnitude, real and imaginary parts (the least-squares factor of a comparison), not the phase.
RArray component(const CArray& image, Component c, double scale = 1.0);

struct DisplayWindow {
  float lo = 0, hi = 1;
};
/// [lo, hi] at the given percentiles (0..100) of the finite values; hi > lo always (a constant image
/// gets a unit-wide window around its value). Percentiles, not min/max: a few hot voxels (noise,
/// Gibbs ringing) would otherwise squash the contrast.
DisplayWindow percentileWindow(const RArray& image, double lowPercent = 0.5, double highPercent = 99.5);
/// Finite minimum and maximum (hi > lo as above).
DisplayWindow valueRange(const RArray& image);

/// The complex value of voxel (x, y, z) of plane-stack `frame` (dimension 4 of [x, y, z, 1, frames]),
/// with its magnitude and phase (radians). Throws Error outside the image.
struct ProbeValue {
  cfloat value;
  float magnitude = 0, phase = 0;
};
ProbeValue probe(const CArray& image, index_t x, index_t y, index_t z, index_t frame = 0);

/// One 2D plane of a volume [x, y, z] (further dims must be 1): normalAxis 2 gives the x-y plane at
/// z = index (axial), 1 the x-z plane at y = index (coronal), 0 the y-z plane at x = index (sagittal).
/// The result is [a, b, 1] with a the faster of the two remaining axes.
CArray plane(const CArray& volume, int normalAxis, index_t index);

/// What a combined reconstruction of `d` should equal (docs/conventions.md, quality metrics): the
/// reference weighted by the root sum of squares of the true coil maps when they are known and there
/// are several coils (a sum-of-squares image of s_c * rho is |rho| sqrt(sum |s_c|^2)), else the reference
/// itself. Throws Error when `d` has no reference. recon::run's metrics compare against it.
CArray comparisonTruth(const Dataset& d);
/// The same made on `backend` (the true maps' root sum of squares by Backend::sumOfSquares there, instead of a
/// pass over them at the host's memory speed), for compareOn: the reference's phase is kept, the magnitudes
/// (all that the metrics read) are comparisonTruth's to float rounding.
CDeviceArray comparisonTruthOn(Backend& backend, const Dataset& d);
/// compareOn(backend, image, comparisonTruthOn(backend, d)): a reconstruction's metrics against its dataset's
/// truth, both on `backend` (recon::run and the workstation's live λ).
Metrics compareWithTruthOn(Backend& backend, const CArray& image, const Dataset& d);

}  // namespace larmor::quality
