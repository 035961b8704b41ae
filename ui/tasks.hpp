#pragma once
// The worker's tasks: load a file, simulate a phantom, reconstruct. Each is a closure over shared,
// immutable inputs (the Dataset outlives the run because the task holds it).
#include <QString>
#include <QVector>
#include <memory>
#include <string>

#include "larmor/backend/backend.hpp"
#include "larmor/io/dataset_io.hpp"
#include "larmor/io/series.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/settings.hpp"
#include "worker.hpp"

namespace larmor::ui {

struct ReconJob {
  std::shared_ptr<const Dataset> dataset;
  recon::ReconSettings settings;
  std::string device = "auto";
  /// The backend the session keeps (plan caches survive between runs); null = select `device`.
  std::shared_ptr<Backend> backend;
  /// The previous solution, for the λ slider: the engine's warm start (IterativeSettings::warmStart).
  std::shared_ptr<const CArray> warmStart;
  /// Non-null: every frame of this series through recon::runFrames (the joint reconstruction under cs);
  /// the output's `frames` holds one result per frame.
  std::shared_ptr<const io::Series> series;
};

Task makeReconTask(ReconJob job, TaskKind kind = TaskKind::Recon, const QString& label = {});
/// The λ sweep of an iterative method (cg or cs): one kept IterativeProblem solved at each λ in increasing
/// order, warm-started (as recon::lcurve), ‖Fρ−d‖ and the prior's norm (cg: ‖Wρ‖; cs: TV or the wavelet
/// ℓ1) per λ. The output's `extra` is [{"lambda", "residual_norm", "prior_norm", "iterations"[,
/// "percent_error"]}, ...], the error where the data have a truth of the image's size.
Task makeLambdaSweepTask(ReconJob job, const QVector<double>& lambdas);
Task makeLoadTask(const QString& path, const io::LoadOptions& options);
/// A tiny reconstruction of `settings`' method on `backend` (recon::warmUp), so that the first real run of
/// the session finds the libraries' kernels loaded (no cold start). Its output's extra holds
/// {"ms": time, "error": why it did nothing}.
Task makeWarmUpTask(std::shared_ptr<Backend> backend, const recon::ReconSettings& settings);
/// A phantom; with settings.frames > 1 the dynamic phantom's series (phantom::simulateSeries), its frames the
/// repetitions 0 .. frames - 1.
Task makeSimulateTask(const phantom::SimulateSettings& settings);

}  // namespace larmor::ui
