#pragma once
// GRAPPA (Schneider 2008): autocalibration from ACS lines (basic findWs and improved findWsImproved),
// k-space filling, coil combination; SVD coil compression. Settings defaults: the thesis's Table 5.1.
#include <nlohmann/json.hpp>

#include "larmor/backend/backend.hpp"
#include "larmor/recon/dataset.hpp"
#include "larmor/util/progress.hpp"
#include "larmor/util/timer.hpp"

namespace larmor::recon {

struct ReconSettings;
struct ImageSet;

enum class GrappaCalibration { Basic, Improved };

struct GrappaSettings {
  GrappaCalibration calibration = GrappaCalibration::Improved;
  int kernelPe = 4;       ///< K_PE source lines (improved) — see the thesis's Table 5.1
  int kernelRo = 5;       ///< K_RO source columns (improved)
  int blocks = 4;         ///< Nb (basic)
  int segment = 128;      ///< Δs columns per weight set (basic)
  double chi = 1e-4;      ///< regularization λ = χ·trace(AA^H)/rows
  double eta = 1.0;       ///< normalization η
  double kappa = 0.0;     ///< power clipping fraction κ in [0, 1)
  int outCoils = 0;       ///< SVD coil compression to N virtual coils (0 = off)
};

nlohmann::json toJson(const GrappaSettings& s);

ImageSet reconstructGrappa(Backend& backend, const Dataset& d, const ReconSettings& s, Timings& timings,
                           const Progress& progress);

}  // namespace larmor::recon
