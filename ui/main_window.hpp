#pragma once
// The workstation window: dataset dock (left), settings dock (right), tabs in the middle (image,
// compare, timings, log), a status bar with the stage, the progress and the device that runs it.
// The actions are public so the scripted run (--run --screenshot --quit) and the GUI tests drive the
// window exactly as a user's clicks do.
#include <QMainWindow>
#include <QPointF>
#include <QVector>
#include <memory>
#include <optional>

#include "larmor/backend/backend.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/recon.hpp"
#include "exporter.hpp"
#include "session.hpp"
#include "worker.hpp"

class QAction;
class QLabel;
class QMenu;
class QPlainTextEdit;
class QProgressBar;
class QTabWidget;
class QToolButton;

namespace larmor::ui {

class CompareView;
class DatasetPanel;
class ImageViewer;
class SettingsPanel;
class TimingsView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // --- actions ------------------------------------------------------------------------------------
  void openFile(const QString& path);
  void newPhantom(const phantom::SimulateSettings& s);
  /// Runs the current settings; while a reconstruction runs, restarts it with them.
  void runReconstruction();
  void cancelRun();
  void runLambdaSweep(const QVector<double>& lambdas);
  void applySession(const SessionState& s);
  SessionState session() const;
  /// "image", "compare", "timings", "log" (and "dataset" raises the dataset dock).
  void showTab(const QString& name);
  /// The larmor-cli command for the current data and settings.
  QString cliCommandText() const;
  /// Each returns false and shows the error (banner + log) when it fails.
  bool saveScreenshot(const QString& path);
  bool exportViewPng(const QString& path);
  bool exportCflFile(const QString& path);
  bool exportDicomSeries(const QString& directory, const DicomExportOptions& options = {});
  bool exportNiftiFile(const QString& path, const DicomExportOptions& options = {});

  // --- state (tests, the scripted run) -----------------------------------------------------------------
  std::shared_ptr<const Dataset> dataset() const { return dataset_; }
  std::shared_ptr<const recon::ReconResult> lastResult() const { return result_; }
  QString lastError() const { return lastError_; }
  QString statusText() const;
  QString deviceText() const;
  Worker* worker() const { return worker_; }
  SettingsPanel* settingsPanel() const { return settings_; }
  ImageViewer* imageViewer() const { return viewer_; }
  CompareView* compareView() const { return compare_; }
  TimingsView* timingsView() const { return timings_; }
  DatasetPanel* datasetPanel() const { return datasetPanel_; }
  QTabWidget* tabs() const { return tabs_; }
  /// Interactive sessions restore settings from a sidecar next to the data and remember the session
  /// for the next start; scripted runs (--quit, or settings given as flags) do neither: their flags decide.
  void setInteractive(bool on) { interactive_ = on; }
  /// Window size, dock layout as the user left them (interactive starts; scripted runs keep the
  /// default layout so their screenshots do not depend on the user's last session).
  void restoreSavedLayout();

 signals:
  void datasetLoaded();
  void loadFailed(const QString& message);
  void reconFinished();
  void reconFailed(const QString& message);
  void reconCancelled();
  void sweepFinished();

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;
  void closeEvent(QCloseEvent* e) override;

 private:
  // construction (main_window.cpp)
  void buildActions();
  void buildMenus();
  void buildToolBar();
  void buildStatusBar();
  void refreshRecentMenu();
  void refreshDevices();
  // behaviour (main_window_run.cpp)
  void selectBackend(const std::string& device);
  void onSettingsChanged();
  void onLambdaDragged(double lambda);
  void onTaskStarted(quint64 id, TaskKind kind, const QString& label);
  void onTaskProgress(quint64 id, double fraction, const QString& stage);
  void onTaskSucceeded(quint64 id, TaskKind kind, const QVariant& tag, const TaskOutput& out);
  void onTaskFailed(quint64 id, TaskKind kind, const QString& message);
  void onTaskCancelled(quint64 id, TaskKind kind);
  void setDataset(std::shared_ptr<const Dataset> d);
  void showResult(std::shared_ptr<const recon::ReconResult> r, const QString& label);
  void updateCompareCandidates();
  void showError(const QString& message);
  void clearError();
  void log(const QString& message);
  std::array<double, 3> voxelSpacing(const CArray& image) const;
  bool submitRecon(const SessionState& s, TaskKind kind, const QVariant& tag, bool warm);
  // export menu handlers (main_window_export.cpp)
  void exportViewPngDialog();
  void exportCflDialog();
  void exportDicomDialog();
  void exportNiftiDialog();
  void copyCliCommand();
  void openDialog();
  void newPhantomDialog();
  void saveSessionSidecar();

  struct RunRecord {
    int number;
    QString label;
    std::shared_ptr<const recon::ReconResult> result;
  };

  Worker* worker_ = nullptr;
  std::shared_ptr<const Dataset> dataset_;
  QString dataPath_;                                  ///< empty for a phantom
  std::optional<phantom::SimulateSettings> phantom_;  ///< the phantom's settings (CLI command)
  std::shared_ptr<const CArray> truth_;               ///< comparison truth of dataset_
  std::shared_ptr<const recon::ReconResult> result_;
  QString resultLabel_;
  QVector<RunRecord> runs_;
  int runCounter_ = 0;
  std::shared_ptr<Backend> backend_;
  std::string backendDevice_;
  QString backendNotice_;
  QString lastError_;
  QVector<QPointF> progressResiduals_;
  quint64 lastReconId_ = 0;
  bool interactive_ = true;
  void rememberSession(const SessionState& s);

  DatasetPanel* datasetPanel_ = nullptr;
  SettingsPanel* settings_ = nullptr;
  ImageViewer* viewer_ = nullptr;
  CompareView* compare_ = nullptr;
  TimingsView* timings_ = nullptr;
  QPlainTextEdit* log_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  QWidget* banner_ = nullptr;
  QLabel* bannerText_ = nullptr;
  QLabel* stage_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* device_ = nullptr;
  QLabel* summary_ = nullptr;
  QMenu* recentMenu_ = nullptr;
  QAction* openAction_ = nullptr;
  QAction* phantomAction_ = nullptr;
  QAction* runAction_ = nullptr;
  QAction* cancelAction_ = nullptr;
  QAction* exportPngAction_ = nullptr;
  QAction* exportCflAction_ = nullptr;
  QAction* exportDicomAction_ = nullptr;
  QAction* exportNiftiAction_ = nullptr;
  QAction* copyCliAction_ = nullptr;
  QAction* saveSessionAction_ = nullptr;
  QAction* sweepAction_ = nullptr;
  QAction* quitAction_ = nullptr;
};

}  // namespace larmor::ui
