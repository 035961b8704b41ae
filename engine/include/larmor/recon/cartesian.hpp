#pragma once
// Cartesian reconstruction on any backend: zero-filled inverse FFT of every coil, removal of readout
// oversampling (crop to the recon FOV), optional resampling to the recon matrix, coil combination.
// One upload of the k-space, one download of the images (TRON's lesson: no host round trips between stages).
#include "larmor/backend/backend.hpp"
#include "larmor/data/dataset.hpp"
#include "larmor/recon/partial_fourier.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/util/progress.hpp"
#include "larmor/util/timer.hpp"

namespace larmor::recon {

struct ImageSet {
  CArray coilImages;  ///< [x, y, z, coils, slices]
  CArray combined;    ///< [x, y, z, 1, slices]
  nlohmann::json convergence;  ///< iterative methods: residual and objective per iteration (recon/iterative.hpp)
  nlohmann::json partialFourier;  ///< partial-Fourier data: PartialFourierReport::toJson() + "line" (else null)
};

/// The output matrix: settings.matrix where given, else the header's recon matrix.
void outputMatrix(const Dataset& d, const ReconSettings& s, index_t out[3]);

/// Where a Cartesian reconstruction's images come from and go to, computed once for every Cartesian
/// pipeline (FFT, GRAPPA): the transform rank (3 when pe2 is encoded, else 2), the pixels of the recon FOV
/// at the encoded resolution (the readout oversampling is cropped to these) and the output matrix.
struct CartesianGeometry {
  int rank = 2;
  index_t fov[3] = {1, 1, 1};
  index_t out[3] = {1, 1, 1};
};
CartesianGeometry cartesianGeometry(const Dataset& d, const ReconSettings& s);

/// Resampling to the recon matrix by zero-padding (or truncating) k-space: `images` (shape `from`) is
/// transformed forward in place, `out` (shape `to`) receives the inverse of the resized spectrum, scaled by
/// sqrt(N_to / N_from) so the unitary FFTs keep the intensity. Both on the backend.
void resampleToMatrix(Backend& backend, Buffer& images, const Shape& from, Buffer& out, const Shape& to, int rank);

ImageSet reconstructCartesian(Backend& backend, const Dataset& d, const ReconSettings& s, Timings& timings,
                              const Progress& progress);

/// The FFT recon's device steps on k-space already in the backend's memory: `volumes` encoded volumes
/// (coils x slices, [encoded, volumes] in `kspace`) get the partial-Fourier edge filled where `pf.region` has
/// one (pf then reports what was done), the inverse FFT in place, and the crop to the FOV into `images`
/// ([g.fov, volumes]). reconstructCartesian runs it once on the whole k-space (`timings` given: each step its
/// stage, progress 0.1-0.5) or on each streamed chunk of slices (no timings: the streamed stage holds them);
/// the benchmark's device-resident figure runs it on k-space uploaded beforehand.
void kspaceToImages(Backend& backend, Buffer& kspace, Buffer& images, const Header& h, const CartesianGeometry& g,
                    index_t volumes, PartialFourierMethod method, PartialFourierReport& pf,
                    Timings* timings = nullptr, const Progress& progress = {});

/// Coil images (device, [x,y,z,1,coils*slices] as [voxels, coils, slices]) -> combined image on device.
void combineCoils(Backend& backend, const CDeviceArray& coilImages, CDeviceArray& combined, index_t voxels,
                  index_t coils, index_t slices, Combine how);

/// The output stage the Cartesian and non-Cartesian pipelines share: coil images `images` ([x,y,z,1,batch]
/// on the device, batch = coils * slices) resampled to the matrix `out` by zero-padding (or truncating)
/// k-space when their shape differs (unitary FFTs of rank `rank`; sqrt(N_out / N) keeps the intensity),
/// combined (s.combine), downloaded (coil images too with s.keepCoilImages). Progress 0.7-0.9.
ImageSet finishCoilImages(Backend& backend, CDeviceArray images, const index_t out[3], int rank, index_t coils,
                          index_t slices, const ReconSettings& s, Timings& timings, const Progress& progress);

}  // namespace larmor::recon
