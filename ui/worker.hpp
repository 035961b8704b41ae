#pragma once
// Runs the long work (loading, simulating, reconstructing) off the GUI thread, one task at a time: the
// engine's backends keep plan caches that are not meant for two callers at once. Every task carries its
// own CancelToken; the engine throws Cancelled at its next Progress::report (at least once per CG
// iteration, per coil or per stage) or, inside one long call (the exact DFT, the CPU NUFFT, batched
// products), at its next block (util/cancel_scope.hpp: a task runs in a CancelScope). Still longer: 3D
// ESPIRiT's eigen-decomposition and Gram product, 3D GRAPPA's single calibration and fill products.
//
// restart() is what a setting change during a run does: the running task is cancelled and the new one
// starts as soon as the old one has stopped (the λ slider sends many in a row; only the last one runs).
// enqueue() appends (a λ sweep). Results arrive on the GUI thread through the signals, tagged with
// the id restart()/enqueue() returned, so late results of superseded tasks are recognisable.
#include <QObject>
#include <QString>
#include <QVariant>
#include <deque>
#include <functional>
#include <memory>

#include "larmor/data/dataset.hpp"
#include "larmor/io/series.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/util/progress.hpp"

template <typename T>
class QFutureWatcher;
class QThreadPool;

namespace larmor::ui {

/// Prepare: live λ setup (live_lambda.hpp); WarmUp: the GPU warmed at start-up (recon/warm_up.hpp).
enum class TaskKind { Load, Recon, Sweep, Prepare, WarmUp };

struct TaskOutput {
  std::shared_ptr<const Dataset> dataset;            ///< Load (a file's first frame; series holds them all)
  std::shared_ptr<const io::Series> series;          ///< Load of a file: its frames (io/series.hpp)
  std::shared_ptr<const recon::ReconResult> result;  ///< Recon
  /// Recon of a whole series (recon::runFrames): one result per frame, in order (`result` is then empty).
  std::vector<std::shared_ptr<const recon::ReconResult>> frames;
  nlohmann::json extra;                              ///< Sweep: the points
};

struct Task {
  TaskKind kind = TaskKind::Recon;
  QString label;                                     ///< "cg, λ = 1e-3" (status bar, log)
  QVariant tag;                                      ///< what the caller needs back (the sweep's λ)
  std::function<TaskOutput(const Progress&)> work;  ///< runs on the worker thread
};

/// What a finished task produced (internal; one per task).
struct TaskOutcome {
  TaskOutput output;
  QString error;
  bool cancelled = false;
};

class Worker : public QObject {
  Q_OBJECT
 public:
  explicit Worker(QObject* parent = nullptr);
  ~Worker() override;  ///< cancels and waits for the running task

  quint64 restart(Task task);
  quint64 enqueue(Task task);
  /// Cancels the running task and drops the queued ones.
  void cancel();
  bool busy() const { return running_ != 0; }
  quint64 runningId() const { return running_; }
  TaskKind runningKind() const { return runningTask_.kind; }
  int queued() const { return static_cast<int>(queue_.size()); }

 signals:
  void started(quint64 id, larmor::ui::TaskKind kind, const QString& label);
  void progress(quint64 id, double fraction, const QString& stage);
  void succeeded(quint64 id, larmor::ui::TaskKind kind, const QVariant& tag, const larmor::ui::TaskOutput& output);
  void failed(quint64 id, larmor::ui::TaskKind kind, const QString& message);
  void cancelled(quint64 id, larmor::ui::TaskKind kind);
  void idle();

 private:
  void startNext();
  void onFinished();

  struct Queued {
    quint64 id;
    Task task;
  };
  std::deque<Queued> queue_;
  quint64 nextId_ = 1;
  quint64 running_ = 0;
  Task runningTask_;
  std::shared_ptr<CancelToken> token_;
  QThreadPool* pool_ = nullptr;
  QFutureWatcher<TaskOutcome>* watcher_ = nullptr;
};

}  // namespace larmor::ui
