#pragma once
// A series kept between solves: the workstation's live temporal lambda. recon::runFrames' joint path (dynamic.hpp)
// split in two: everything that does not depend on the temporal lambda (the frames checked and whitened, the backend,
// the memory plan, each slice's DynamicProblem with its coil maps, E^H d and step bound) is made once; solve() then
// runs FISTA at a new temporal lambda from the last series, in chunks of 2, 4, 8, ... iterations, and publishes
// each chunk's frames, so that the cine follows the slider after two iterations instead of after a whole run.
#include <functional>
#include <memory>
#include <vector>

#include "larmor/recon/recon.hpp"

namespace larmor::recon {

class LiveSeries {
 public:
  /// Every frame's image [x, y, 1, 1, slices] after `done` of `total` iterations.
  using Publish = std::function<void(const std::vector<CArray>& frames, int done, int total)>;

  /// `frames` jointly as runFrames would (jointOverFrames must hold); request.dataset is not read. Throws
  /// runFrames' one-line errors (a series that cannot fit is refused here).
  LiveSeries(const std::vector<Dataset>& frames, const ReconRequest& request, const Progress& progress = {});
  ~LiveSeries();
  LiveSeries(const LiveSeries&) = delete;
  LiveSeries& operator=(const LiveSeries&) = delete;

  /// The request's iterations at this temporal lambda: the first solve from each frame's least-squares start (as
  /// runFrames), later ones from the last series. With `publish`, in chunks of 2, 4, 8, ... iterations, each chunk's
  /// images published; without, in one FISTA run (the first solve then equals runFrames bit for bit). Results as
  /// runFrames'. Cancelled when progress asks (the kept series then holds the last finished chunk).
  std::vector<ReconResult> solve(double temporalLambda, const Publish& publish = {}, const Progress& progress = {});
  /// How long the kept part took to make (ms).
  double setupMilliseconds() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace larmor::recon
