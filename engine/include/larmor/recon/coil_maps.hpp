#pragma once
// Coil sensitivity maps for one slice on a reconstruction's image grid, from the source the settings name
// (--coil-maps, the settings table's iterative.coil_maps):
//   espirit  ESPIRiT (ops/espirit.hpp) from the calibration region (recon/calibration.hpp) of
//            iterative.calibration_size, crop iterative.espirit_crop; computed on the grid of the
//            calibration's FOV (Cartesian readout oversampling included) and cropped to the recon FOV;
//   walsh    low-resolution coil images over their root sum of squares, S_c = L_c / sqrt(sum |L|^2 + eps^2)
//            (L_c: the calibration box under a separable Hann taper, zero-padded and inverse FFT'd; the box of
//            non-Cartesian data is the one fitted to its samples with |k_i| < iterative.calibration_radius);
//   dataset  the dataset's own maps (simulated data);
//   FILE.cfl a BART .cfl of maps [x, y, z, coils(, slices)] on the output matrix.
// Used by CG-SENSE (recon/iterative.cpp) and by `larmor-cli maps`.
#include <nlohmann/json.hpp>

#include "larmor/backend/backend.hpp"
#include "larmor/data/dataset.hpp"
#include "larmor/ops/sense.hpp"
#include "larmor/recon/calibration.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/util/progress.hpp"

namespace larmor::recon {

/// Maps [out0, out1, out2, coils] of slice `slice`. makePlan: the plan of the non-Cartesian Walsh estimate
/// (null: a NUFFT plan of the settings). What was done goes into *info ("coil_maps", calibration region,
/// kernels kept) when given. Throws one-line Errors.
CArray coilMapsForSlice(Backend& backend, const Dataset& d, index_t slice, const index_t out[3],
                        const ReconSettings& s, nlohmann::json* info = nullptr,
                        const ops::PlanFactory* makePlan = nullptr, const Progress& progress = {});

/// The same maps on the backend ([out0, out1, out2, coils] in one buffer), for SENSE: ESPIRiT's are left
/// where they were computed and cropped there (no 2 x 134 MB round trip for 128³ x 8 coils); the other
/// sources are computed as coilMapsForSlice does and uploaded. gridding (optional): ESPIRiT's gridded
/// calibration of non-Cartesian data planned there at the first call and reused by the next slice's.
std::unique_ptr<Buffer> coilMapsForSliceOnBackend(Backend& backend, const Dataset& d, index_t slice,
                                                  const index_t out[3], const ReconSettings& s,
                                                  nlohmann::json* info = nullptr,
                                                  const ops::PlanFactory* makePlan = nullptr,
                                                  const Progress& progress = {},
                                                  std::shared_ptr<const CalibrationGridding>* gridding = nullptr);

/// ESPIRiT maps of several slices on the backend, as coilMapsForSliceOnBackend makes each, with the Grams'
/// eigen-decompositions batched (ops::espiritBatch; the slices of a multi-slice CG/CS call, iterative_slices.cpp);
/// a slice's maps do not depend on the other slices of the list. infos (optional) gets each slice's record
/// ("espirit_group": the list's length, "espirit_eigen_batch": how many eigen-solves ran together); gridding as
/// coilMapsForSliceOnBackend's; progress is reported per slice's calibration.
std::vector<std::unique_ptr<Buffer>> espiritMapsForSlices(Backend& backend, const Dataset& d,
                                                          const std::vector<index_t>& slices, const index_t out[3],
                                                          const ReconSettings& s,
                                                          std::vector<nlohmann::json>* infos = nullptr,
                                                          std::shared_ptr<const CalibrationGridding>* gridding = nullptr,
                                                          const Progress& progress = {});

/// The maps of every slice, [out0, out1, out2, coils, slices] (`larmor-cli maps`).
CArray coilMaps(Backend& backend, const Dataset& d, const index_t out[3], const ReconSettings& s,
                nlohmann::json* info = nullptr);

}  // namespace larmor::recon
