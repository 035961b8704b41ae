#pragma once
// The workstation window: dataset dock (left), settings dock (right), tabs in the middle (image,
// compare, timings, log), a status bar with the stage, the progress and the device that runs it.
// It is wiring: the state and the decisions are the WorkstationModel's (ui/model); the window forwards
// the user's actions to it, runs what the model plans on the worker, hands the results back and, as
// the model's observer, updates the widgets. The actions are public so the scripted run (--run
// --screenshot --quit) and the GUI tests drive the window exactly as a user's clicks do.
#include <QElapsedTimer>
#include <QMainWindow>
#include <QPointF>
#include <QVector>

#include "exporter.hpp"
#include "session.hpp"
#include "side_by_side_view.hpp"
#include "live_lambda.hpp"
#include "worker.hpp"

#include <atomic>
#include <map>
#include <optional>
#include "workstation_model.hpp"

class QAction;
class QComboBox;
class QLabel;
class QMenu;
class QPlainTextEdit;
class QProgressBar;
class QTabWidget;
class QToolButton;

namespace larmor::ui {

struct MatchedReference;
class CompareView;
class DatasetPanel;
class FrameBar;
class ImageViewer;
class LiveView;
class PacsDialog;
class SettingsPanel;
class TimeCurveView;
class TimingsView;

class MainWindow : public QMainWindow, private model::WorkstationObserver {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // --- actions ------------------------------------------------------------------------------------
  /// Opens a data file. The session's trajectory is dropped unless it was given for this file: it belongs to
  /// the file already loaded, or `trajectoryForIt` says it came with this one (the command line's --traj).
  void openFile(const QString& path, bool trajectoryForIt = false);
  void newPhantom(const phantom::SimulateSettings& s);
  /// Runs the current settings; while a reconstruction runs, restarts it with them.
  void runReconstruction();
  void cancelRun();
  void runLambdaSweep(const QVector<double>& lambdas);
  /// Shows a kept run again (View ▸ Runs); false when no kept run has that number.
  bool showRun(int number);
  void applySession(const SessionState& s);
  SessionState session() const;
  /// "image", "compare", "timings", "log" (and "dataset" raises the dataset dock).
  void showTab(const QString& name);
  /// The rectangle the time-intensity curve is of (as drawn on the image; the presenter's demo).
  void setTimeCurveRoi(const model::PlaneRoi& roi);
  /// The larmor-cli command for the current data and settings.
  QString cliCommandText() const;
  /// Each returns false and shows the error (banner + log) when it fails.
  bool saveScreenshot(const QString& path);
  bool exportViewPng(const QString& path);
  bool exportCflFile(const QString& path);
  bool exportDicomSeries(const QString& directory, const DicomExportOptions& options = {});
  bool exportNiftiFile(const QString& path, const DicomExportOptions& options = {});
  /// Export ▸ Send to PACS without its options dialog: writes the series as exportDicomSeries would (every
  /// frame by default) into a temporary folder and opens the PACS dialog on it (null when it cannot).
  PacsDialog* sendToPacs(const DicomExportOptions& options = {});
  /// An image file (BART .cfl) as the compare tab's reference B; false (and the error shown) when unreadable.
  bool loadReferenceFile(const QString& path);
  /// File ▸ Listen… without its dialog: the streaming server inside the workstation on `address`:`port` (0: any
  /// free port), reconstructing with the settings panel's settings, or those of the settings JSON
  /// `settingsFile`; each image is shown as it arrives (docs/streaming.md). The server starts on a thread of
  /// its own (LiveView::started, or the error shown); false (and the error shown) when the settings file
  /// cannot be read.
  bool startListening(int port, const QString& address = QStringLiteral("127.0.0.1"), const QString& settingsFile = {});
  /// File ▸ Stop listening: the server stops; the scan on screen stays.
  void stopListening();
  LiveView* liveView() const { return liveView_; }

  // --- state (tests, the scripted run) -----------------------------------------------------------------
  /// The data, runs, shown run, comparison and exports.
  const model::WorkstationModel& model() const { return model_; }
  QString lastError() const { return lastError_; }
  /// The last confirmation shown on screen (an export: where, how many images).
  QString lastNotice() const { return lastNotice_; }
  /// The folder exports go to until the user picks another: Documents/Larmor (created on demand).
  static QString defaultOutputFolder();
  /// View ▸ Zoom: scales every font of the window (1 = the theme's size); presenter mode uses it.
  void setUiScale(double scale);
  double uiScale() const { return uiScale_; }
  /// View ▸ Presenter mode (F11 toggles it): full screen, zoom 1.5, the docks hidden; off brings back the
  /// window's size, zoom and docks as they were. Nothing is loaded or run.
  void setPresenterMode(bool on);
  /// After a zoom: Actual size brings back the size before it; a zoom never leaves the window beyond the screen.
  void fitZoomedWindow();
  bool presenterMode() const { return presenter_.on; }
  QString statusText() const;
  QString deviceText() const;
  Worker* worker() const { return worker_; }
  /// Live λ, the last intermediate image: ms from the slider's move to the worker publishing it (solve and
  /// download) and to the viewer having it (the queued hand-over to this thread); its render is the view's
  /// VtkCanvas::lastRenderMs.
  struct LiveTiming {
    double publishedMs = 0, shownMs = 0;
  };
  LiveTiming liveTiming() const { return liveTiming_; }
  SettingsPanel* settingsPanel() const { return settings_; }
  ImageViewer* imageViewer() const { return viewer_; }
  /// The time-intensity curve under the image (data with frames).
  TimeCurveView* timeCurveView() const { return curve_; }
  CompareView* compareView() const { return compare_; }
  TimingsView* timingsView() const { return timings_; }
  SideBySideView* sideBySideView() const { return sideBySide_; }
  /// Puts runs next to each other in the "Side by side" tab and brings it to the front.
  void showSideBySide(const QVector<SideBySideView::Panel>& panels);
  /// Shows these runs (their numbers) in the "Side by side" tab, as if picked in its Runs menu, and brings it
  /// to the front; empty: the newest runs of the data.
  void showSideBySideRuns(const std::vector<int>& numbers);
  /// A large caption above the tabs (presenter mode); empty hides it.
  void setDemoCaption(const QString& text);
  DatasetPanel* datasetPanel() const { return datasetPanel_; }
  QTabWidget* tabs() const { return tabs_; }
  /// Interactive sessions restore settings from a sidecar next to the data and remember the session
  /// for the next start; scripted runs (--quit, or settings given as flags) do neither: their flags decide.
  void setInteractive(bool on) { interactive_ = on; }
  /// Reconstruct ▸ Run the fitting method on open: a file that opens gets the method its data call for
  /// (model/method_choice.hpp) and is reconstructed at once; off, the method is still chosen but not run.
  /// Kept in QSettings with the other GUI settings.
  void setRunOnOpen(bool on);
  bool runOnOpen() const { return runOnOpen_; }
  /// The command line named the method: files keep it (no choice on open, nothing run unless --run).
  void setMethodGiven(bool given) { methodGiven_ = given; }
  /// Whether the last file opened started its reconstruction by itself.
  bool ranOnOpen() const { return ranOnOpen_; }
  /// The method banner: why the method was chosen, the aliasing to expect ("" when hidden).
  QString methodNotice() const;
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
  /// View ▸ Scripted demo: the application starts the scripted demo (ui/demo.*).
  void demoRequested();
  /// Live λ: an intermediate image of the solve for the slider's λ is on screen (iterations done, total).
  void liveImageShown(int done, int total);

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;
  void closeEvent(QCloseEvent* e) override;

 private:
  // construction (main_window.cpp)
  // The constructor's parts: the tabs (image, compare, timings, log, side by side), the error banner, the
  // central widget (demo caption, banner, frame bar, tabs) and the dataset and settings docks.
  void makeTabs();
  void makeBanner();
  void makeCentral();
  void makeDocks();
  void buildActions();
  void buildMenus();
  void buildToolBar();
  void buildStatusBar();
  void connectWidgets();
  void refreshRecentMenu();
  void refreshRunsMenu();
  void refreshDevices();
  // the model's observer (main_window_model.cpp)
  void datasetChanged() override;
  void frameChanged() override;
  /// The frame bar over the data's frames (their names made when shown).
  void setFrameBar();
  /// The frame bar asked for frame `f` (the slider, or a cine step).
  void onFrameRequested(int f);
  void sessionChanged() override;
  void deviceChanged() override;
  void runAdded(const model::RunRecord& run) override;
  void shownRunChanged() override;
  void sliceChanged(int slice) override;
  void comparisonChanged() override;
  /// The time-intensity curve of the ROI over the frames, again (new runs, another frame, a new ROI).
  void refreshTimeCurve();
  /// The settings panel's state into the model (the panel edits, the model keeps).
  void syncSession();
  // tasks (main_window_run.cpp)
  void onSettingsChanged();
  void onLambdaDragged(double lambda);
  void onTemporalLambdaDragged(double lambda);
  /// A live run's delivery of its chunks to the screen (a new generation: older runs' chunks are dropped).
  std::function<void(int done, int total, std::function<void()> show)> liveDelivery();
  void onTaskStarted(quint64 id, TaskKind kind, const QString& label);
  void onTaskProgress(quint64 id, double fraction, const QString& stage);
  void onTaskSucceeded(quint64 id, TaskKind kind, const QVariant& tag, const TaskOutput& out);
  void onTaskFailed(quint64 id, TaskKind kind, const QString& message);
  void onTaskCancelled(quint64 id, TaskKind kind);
  bool submitRecon(model::RunKind kind);
  void prepareLiveLambda();
  void showChosenLambda(const recon::ReconResult& r);  ///< a CS run's cross-validated λ onto the λ slider
  void warmUpDevice();  ///< start-up: recon::warmUp on a GPU backend, in the worker
public:
  /// "  — about 12.0 s left" for a task running `elapsedMs` that has done `fraction`; empty under 5 s.
  static QString remainingText(qint64 elapsedMs, double fraction);
  /// The fractions the last DICOM/NIfTI export reported (per file; tests).
  const QVector<double>& exportFractions() const { return exportFractions_; }
private:
  void showError(const QString& message);
  void clearError();
  // the live view (main_window_live.cpp)
  void makeLiveView();
  void listenDialog();
  /// The live scan grew by one image (`fresh`: a new connection's first): shown at once, the window kept.
  void onLiveScan(bool fresh);
  void refreshLiveScans();
  LiveView* liveView_ = nullptr;
  QLabel* listening_ = nullptr;  ///< "Listening on 127.0.0.1:9002" in the status bar
  QComboBox* liveScans_ = nullptr;  ///< the live scans, one per connection, when there are several; picks the one shown
  QAction* listenAction_ = nullptr;
  QAction* stopListeningAction_ = nullptr;
  // the method for new data (main_window_method.cpp)
  void makeMethodBanner();
  /// New data: the method chosen when a file opened (or when the session's method cannot apply), said why.
  void adoptMethodFor(const Dataset& d);
  void showMethodNotice(const QString& text, bool offerRadial);
  void reopenAsRadial(const QString& trajectory);
  void log(const QString& message);
  void rememberSession(const SessionState& s);
  void forgetTrajectoryUnlessFor(const QString& dataPath);
  // export menu handlers (main_window_export.cpp)
  void exportViewPngDialog();
  void exportCflDialog();
  void exportDicomDialog();
  void exportNiftiDialog();
  void sendToPacsDialog();
  void copyCliCommand();
  void openDialog();
  void newPhantomDialog();
  void saveSessionSidecar();
  /// Runs `write`; records the export in the model; on an Error shows it and returns false.
  template <class F>
  bool exportWith(const char* kind, const QString& path, F&& write);
  QString suggestedOutput(const QString& suffix) const;
  /// What a DICOM/NIfTI export or a send writes and how: the frames (options.frames), the series
  /// description rule, the study's patient fields, the window on screen; for DICOM the study UID and a new
  /// series number. Throws Error naming `path` when there is nothing to write.
  ExportImages prepareExport(const QString& path, DicomExportOptions& options, bool dicom);
  /// The options of a DICOM export or a send (series description, frames, patient and study, anonymize,
  /// component; `directory` non-null: its row too). The study fields are kept for the study. False: cancelled.
  bool askDicomOptions(const QString& title, DicomExportOptions& options, QString* directory);
  /// "4 frames" / "frame 2/4" / "" (one frame): what an export wrote, for its confirmation.
  QString framesWritten(const ExportImages& images) const;

  model::WorkstationModel model_;
  std::shared_ptr<LiveLambdaEngine> live_;
  std::shared_ptr<LiveSeriesEngine> liveSeries_ = std::make_shared<LiveSeriesEngine>();
  std::shared_ptr<std::atomic<bool>> alive_ = std::make_shared<std::atomic<bool>>(true);
  quint64 liveGeneration_ = 0;
  QElapsedTimer liveClock_;  ///< started at each live-λ slider move
  LiveTiming liveTiming_;
  Worker* worker_ = nullptr;
  QString lastError_, lastNotice_;
  double uiScale_ = 1.0;
  QSize unzoomedSize_;  ///< the window's size at zoom 1 before a zoom (Actual size brings it back)
  struct Presenter {
    bool on = false;
    double scale = 1.0;
    bool maximized = false, datasetDock = true, settingsDock = true;
  } presenter_;  ///< presenter mode, and what it changed
  QAction* presenterAction_ = nullptr;
  QElapsedTimer taskClock_;
  QVector<double> exportFractions_;
  Progress exportProgress();
  double baseFontPt_ = 0;
  QVector<QPointF> progressResiduals_;  ///< of the running reconstruction, from its progress text
  bool interactive_ = true;
  bool runOnOpen_ = true, methodGiven_ = false;
  bool chooseForLoad_ = false;  ///< the load in flight is a file opened: choose its method
  bool runAfterLoad_ = false, ranOnOpen_ = false;
  QWidget* methodBanner_ = nullptr;
  QLabel* methodText_ = nullptr;
  QWidget* radialOffer_ = nullptr;
  QAction* runOnOpenAction_ = nullptr;

  DatasetPanel* datasetPanel_ = nullptr;
  FrameBar* frames_ = nullptr;
  SettingsPanel* settings_ = nullptr;
  ImageViewer* viewer_ = nullptr;
  TimeCurveView* curve_ = nullptr;
  std::optional<model::PlaneRoi> roi_;  ///< the rectangle the curve is of
  CompareView* compare_ = nullptr;
  TimingsView* timings_ = nullptr;
  SideBySideView* sideBySide_ = nullptr;
  std::vector<int> sideBySidePicked_;  ///< the runs picked for Side by side (none: the newest)
  /// A DICOM series loaded as the reference of a series of frames: its images follow the frame on screen, each
  /// frame paired (reference_match.hpp) once its reconstruction is shown, and kept (null: that frame's pairing failed).
  struct FramedReference {
    int id = 0;  ///< the model's reference id
    QString path;
    std::map<std::size_t, std::shared_ptr<const CArray>> frames;
    std::size_t shown = 0;  ///< the frame whose images the model holds
  };
  std::optional<FramedReference> framedReference_;
  /// The framed reference's images of the frame on screen into the model (paired now when they were not yet).
  void followReferenceFrame();
  /// A DICOM series paired with the shown reconstruction's frame on screen (every frame when all are reconstructed).
  MatchedReference pairWithShownFrame(const QString& path) const;
  bool sideBySideStale_ = true;        ///< runs changed since the tab was last filled
  void refreshSideBySide();            ///< fills the tab now when it is in front, else when it comes there
  void fillSideBySide();
  QLabel* demoCaption_ = nullptr;
  QPlainTextEdit* log_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  QWidget* banner_ = nullptr;
  QLabel* bannerText_ = nullptr;
  QLabel* stage_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* device_ = nullptr;
  QLabel* summary_ = nullptr;
  QMenu* recentMenu_ = nullptr;
  QMenu* runsMenu_ = nullptr;
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
  QAction* zoomInAction_ = nullptr;
  QAction* zoomOutAction_ = nullptr;
  QAction* zoomResetAction_ = nullptr;
};

}  // namespace larmor::ui
