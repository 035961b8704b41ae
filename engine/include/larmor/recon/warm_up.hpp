#pragma once
// Warming a backend before the first reconstruction of a process (issues 20 and 21: cold start).
//
// The first reconstruction on a fresh CUDA backend pays for what later ones find ready: the library handles
// (cuBLAS, cuSOLVER), cuFFT's first plan, each kernel's module load (CUDA loads kernels lazily, on first
// launch), the caching allocator's first blocks. Measured on the H100: a
// CG-SENSE slice of 128² x 8 coils takes 212 ms cold and 22 ms warm, 120-190 ms of it ESPIRiT's first
// cuSOLVER call. warmUp() runs a tiny reconstruction of the same method and trajectory family (a simulated
// 32² or 16³ problem, two coils, two iterations) on the backend, so that a caller can do it while it does
// something else (the batch runner while it reads its journal and loads the first item; the workstation
// in the background at start-up). The result is thrown away; only the backend's state is kept.
#include <memory>
#include <string>

#include "larmor/recon/settings.hpp"

namespace larmor {
class Backend;
}

namespace larmor::recon {

/// The shape of the work to warm up for.
struct WarmUpHint {
  bool nonCartesian = false;  ///< the data come with a trajectory (radial, spiral, ...)
  bool threeD = false;        ///< 3D data (a z size > 1)
};

/// Runs a tiny reconstruction with `settings` (method, coil maps, regularisation; sizes and iterations made
/// small) on `backend`. Returns the milliseconds it took. Never throws: a warm-up that fails (a method that
/// needs something the tiny problem lacks) leaves the first real reconstruction cold, nothing else.
double warmUp(const std::shared_ptr<Backend>& backend, const ReconSettings& settings, const WarmUpHint& hint,
              std::string* whyNot = nullptr);

}  // namespace larmor::recon
