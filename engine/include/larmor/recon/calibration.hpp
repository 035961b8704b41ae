#pragma once
// The calibration region: the fully sampled centre of k-space as a Cartesian array [c0, c1, c2, coils],
// the input of ESPIRiT (ops/espirit.hpp) and of any autocalibrating method (GRAPPA's kernel fit can take
// the same box). One slice at a time.
//
// Cartesian data ([readout, pe1, pe2, coils, slices], zeros where not sampled; docs/conventions.md): the
// largest centred box, at most `size` per dimension (or the dimension's length), whose phase-encoding
// lines are all acquired (the `sampled` or `calibration` mask). Like BART's calib_geom the box grows by
// one along each dimension in turn, from 1, and a dimension stops at the first growth that would take in a
// line not acquired; the readout is always fully sampled. Centred means the centre index floor(N/2) of the
// data lies at floor(c/2) of the box (docs/conventions.md), so the box's FFT is the image's low-pass.
// Handles 1D (pe1) and 2D (pe1 x pe2) undersampling, 2D and 3D, and BART's planes [1, Ny, Nz] (readout of
// length 1: the box is 1 there).
//
// Non-Cartesian data: the centre is solved for on a Cartesian box of `size` points per dimension (2 or 3)
// at unit spacing (cycles/FOV): the samples y with |k_i| < size along every axis are fitted, in the least-squares
// sense with a small Tikhonov term, by the image x of a 2 size grid (FOV 1, so the box is inside its band with
// room to spare): (A^H A + lambda I) x = A^H y by conjugate gradients, A the NUFFT of that grid, lambda 1e-2 of
// A^H A's largest eigenvalue (a few power steps); x's centred FFT cropped to the central `size` points is the
// calibration box. This is BART's `nufft -i` (an inverse NUFFT) restricted to the centre. A density-compensated
// adjoint (gridding) is not used: its k-space is the samples convolved with the sampling's point spread, not a
// Cartesian sampling of one object, and ESPIRiT reads that inconsistency as signal everywhere in the FOV (maps
// never cropped, the SENSE model wrong: measured on BART's default radial trajectory, docs/iterative.md).
// For radial spokes the box is also clipped to where the spokes sample at the Nyquist rate (angular spacing
// <= 1 cycle/FOV at the box corner: |k| <= P / pi for P full spokes, P / (2 pi) for half spokes), but never
// below twice the kernel (`minimum`), where the Tikhonov term holds the fit between the spokes.
#include <memory>
#include <string>
#include <vector>

#include "larmor/util/progress.hpp"
#include "larmor/array/array.hpp"
#include "larmor/backend/backend.hpp"
#include "larmor/data/dataset.hpp"
#include "larmor/ops/nufft.hpp"
#include "larmor/recon/noncartesian.hpp"

namespace larmor::recon {

/// A centred k-space box: its extent along [readout, pe1, pe2] (1 along unused dimensions).
struct CalibrationBox {
  index_t extent[3] = {1, 1, 1};
  index_t size() const { return extent[0] * extent[1] * extent[2]; }
  std::string str() const;  ///< "24x24x1"
};

struct CalibrationRegion {
  CArray data;  ///< [c0, c1, c2, coils], the k-space centre at floor(c_i / 2)
  CalibrationBox box;
  /// The FOV (in recon FOVs) of the samples' spacing: Cartesian readout oversampling along dimension 0
  /// (encoded / recon), 1 elsewhere and for gridded data. Maps from the box live on a grid of that FOV.
  double fov[3] = {1, 1, 1};
  bool gridded = false;  ///< non-Cartesian: gridded onto the box
};


/// Cartesian: the largest fully sampled centred box of slice `slice`, at most `size` per dimension.
CalibrationBox findCalibrationBox(const Dataset& d, index_t slice, index_t size);

/// Cartesian: the samples of `box` (centred) of slice `slice`, [c0, c1, c2, coils].
CArray extractCalibration(const Dataset& d, index_t slice, const CalibrationBox& box);

/// Non-Cartesian data: the fit of the calibration box (above) planned once for a dataset's trajectory on a
/// backend: the samples inside the 2c grid's band, the NUFFT plan, lambda; region() then solves for any slice's
/// box (upload, adjoint, CG, FFT, crop). `minimum`: the smallest box half-width (the kernel size). The slices of a multi-slice dataset
/// share one (the plan took ~2.5 of the ~3 ms of a 128^2 radial slice's calibration on an H200).
class CalibrationGridding {
 public:
  CalibrationGridding(Backend& backend, const Dataset& d, index_t size, const NufftSettings& nufft = {},
                      const Progress& progress = {}, index_t minimum = 1);
  ~CalibrationGridding();
  CalibrationGridding(const CalibrationGridding&) = delete;
  CalibrationGridding& operator=(const CalibrationGridding&) = delete;
  /// The calibration region of slice `slice` of `d` (the dataset it was planned for).
  CalibrationRegion region(const Dataset& d, index_t slice) const;

 private:
  Backend& be_;
  index_t samplesPerSlice_ = 0, coils_ = 1, c_ = 1, grid_[3] = {1, 1, 1};
  int dims_ = 2;
  std::vector<index_t> keep_;  ///< the samples inside the band
  double lambda_ = 0;          ///< the Tikhonov weight
  std::unique_ptr<NufftPlan> plan_;
};

/// The calibration region of slice `slice`, Cartesian or gridded (above). `minimum`: the smallest extent
/// allowed along every dimension where the data extend (the kernel size); smaller throws one Error naming
/// the region found. nufft: the plan and density compensation settings of the gridding.
/// progress: the gridded case's fit.
/// gridding (optional): the gridded case's plan, made there when null and used from there for the next slice.
CalibrationRegion calibrationRegion(Backend& backend, const Dataset& d, index_t slice, index_t size, index_t minimum,
                                    const NufftSettings& nufft = {}, const Progress& progress = {},
                                    std::shared_ptr<const CalibrationGridding>* gridding = nullptr);

}  // namespace larmor::recon
