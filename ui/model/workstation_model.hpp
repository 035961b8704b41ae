#pragma once
// The workstation's state without Qt: the data, the session settings, the device, the runs, which run
// and slice are shown, the comparison and the exports, and the decisions about them (what a run needs,
// what new data clear, what can be compared). The window forwards the user's actions here, runs the
// plans the model gives on its worker and hands back the results; the widgets follow the model through
// WorkstationObserver. Tested without a display (tests/unit/test_workstation_model.cpp).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comparison.hpp"
#include "dataset_state.hpp"
#include "export_state.hpp"
#include "live_scan.hpp"
#include "larmor/backend/backend.hpp"
#include "run_history.hpp"
#include "session_settings.hpp"
#include "time_curve.hpp"
#include "workstation_observer.hpp"

namespace larmor::model {

enum class RunKind {
  Recon,       ///< the session's settings
  LiveLambda,  ///< the same, warm-started from the shown image (CG or compressed sensing)
  Sweep,       ///< the λ sweep (CG or compressed sensing)
};

/// What to run: everything a reconstruction task needs, or why nothing can run.
struct RunPlan {
  std::string error;  ///< non-empty: nothing to run, and why (for the user)
  std::shared_ptr<const Dataset> dataset;
  SessionSettings session;   ///< as the user set it (kept with the run)
  recon::ReconSettings settings;  ///< what the engine gets (no coil images: the viewer shows the combined one)
  std::shared_ptr<Backend> backend;
  std::shared_ptr<const CArray> warmStart;
  /// Non-null: every frame of this series at once (recon::runFrames: jointly with the temporal prior under
  /// cs), one series run; `dataset` is then the current frame. No warm start on this path.
  std::shared_ptr<const io::Series> series;
  std::string description;  ///< "cg, fd λ 0.01"
  bool ok() const { return error.empty(); }
};

class WorkstationModel {
 public:
  WorkstationModel();
  ~WorkstationModel();
  WorkstationModel(const WorkstationModel&) = delete;
  WorkstationModel& operator=(const WorkstationModel&) = delete;

  /// Observers are not owned; remove one before it is destroyed.
  void addObserver(WorkstationObserver* observer);
  void removeObserver(WorkstationObserver* observer);

  // --- data ----------------------------------------------------------------------------------------
  /// A load (or simulation) with this task id started; the newest one started is the one that counts.
  void loadStarted(std::uint64_t task, DataSource source);
  /// Takes the data when `task` is the newest load; false (nothing changes) for a superseded one.
  bool loadFinished(std::uint64_t task, std::shared_ptr<const Dataset> dataset);
  /// The same for a file read as a series (io::loadSeries): its first frame becomes current.
  bool loadFinished(std::uint64_t task, std::shared_ptr<const io::Series> series);
  /// Makes `dataset` current: computes its truth, clears the runs, the shown run, the comparison and
  /// the export state, and tells the observers (datasetChanged).
  void setDataset(std::shared_ptr<const Dataset> dataset, DataSource source,
                  std::shared_ptr<const io::Series> series = nullptr);
  // --- frames (a series, never merged) -------------------------------------------------------------------
  std::size_t frameCount() const { return data_.frameCount(); }
  std::size_t frame() const { return data_.frame; }
  /// Makes frame `f` of the series current (frameChanged). Unlike new data, the runs stay: each run
  /// remembers its frame, so going back to a frame shows its run again (runForFrame). False when `f` is
  /// not a frame or already current.
  bool setFrame(std::size_t f);
  /// The newest run of frame `f` made with `session` (a run of that frame, or a series run), or 0.
  int runForFrame(std::size_t f, const SessionSettings& session) const;
  /// Whether a run with the session's settings reconstructs every frame of the series at once (a series
  /// of two or more frames under --method cs: jointly, or one by one with dynamic.frames_independent) rather
  /// than the current frame alone (the other methods: each frame when it is first shown).
  bool runsWholeSeries() const;
  /// What frame `f` should equal (its reference as quality::comparisonTruth makes it), or null; computed
  /// once per frame of the data.
  std::shared_ptr<const CArray> frameTruth(std::size_t f) const;
  /// The time-intensity curve in `roi` (time_curve.hpp) of the shown run: its frames when it is a series
  /// run, else each frame's run with the shown run's settings (NaN where a frame has none); the truth's
  /// beside it when the frames have one.
  TimeCurve timeCurve(const PlaneRoi& roi) const;
  bool hasData() const { return static_cast<bool>(data_.dataset); }
  std::shared_ptr<const Dataset> dataset() const { return data_.dataset; }
  const LoadedDataset& data() const { return data_; }
  const DataSource& source() const { return data_.source; }
  /// The phantom's settings when the data are simulated (the "New phantom" dialog starts from them).
  std::optional<phantom::SimulateSettings> phantom() const { return data_.source.phantom; }
  std::array<double, 3> voxelSpacing(const CArray& image) const { return data_.voxelSpacing(image.shape()); }

  // --- session and device --------------------------------------------------------------------------
  const SessionSettings& session() const { return session_; }
  /// Stores the settings (sessionChanged when they differ) and selects their device.
  void setSession(const SessionSettings& s);
  /// Selects the backend for `device` ("auto", "cpu", "cuda:0"), keeping the current one (and its plan
  /// caches) when the device is the same. False with deviceError() set when it cannot.
  bool selectDevice(const std::string& device);
  std::shared_ptr<Backend> backend() const { return backend_; }
  const std::string& device() const { return device_; }
  const std::string& deviceNotice() const { return deviceNotice_; }
  const std::string& deviceError() const { return deviceError_; }

  // --- runs ----------------------------------------------------------------------------------------
  /// What to run for `kind` with the current data and session (selects the device).
  RunPlan planRun(RunKind kind);
  /// The worker started `plan` as task `task`; its result comes back through runFinished.
  void runStarted(std::uint64_t task, const RunPlan& plan);
  /// Adds the result of `task` as a run and shows it; null (nothing changes) for a task the model did
  /// not plan. Earlier tasks are over once a later one ends (the worker runs them in order).
  const RunRecord* runFinished(std::uint64_t task, std::shared_ptr<const recon::ReconResult> result);
  /// The same for a series plan (RunPlan::series): one result per frame, kept as one series run.
  const RunRecord* runFinished(std::uint64_t task, std::vector<std::shared_ptr<const recon::ReconResult>> frames);
  /// `task` failed or was cancelled.
  void runEnded(std::uint64_t task);
  /// The live view's scan (live_scan.hpp) as its images arrive. `fresh` (the scan's first image): its data
  /// become current as new data do (datasetChanged) and its images one run, shown. Later calls grow that run's
  /// images in place (shownRunChanged when the run is shown), the frame and slice on screen kept; the data are
  /// taken again (the arrived slices' k-space copied) only when the frames grew (frameChanged) or `withData`
  /// (the scan ended). Null when the scan's run is no longer kept.
  const RunRecord* showLiveScan(const LiveScan& scan, bool fresh, bool withData = false);
  const RunHistory& runs() const { return runs_; }
  const RunRecord* shownRun() const { return runs_.find(shown_); }
  std::shared_ptr<const recon::ReconResult> shownResult() const;
  /// Shows a kept run (false when there is none with that number).
  bool showRun(int number);
  /// The slice of the shown image the views are on (-1: the view's own choice).
  int slice() const { return slice_; }
  void setSlice(int slice);

  // --- comparison ----------------------------------------------------------------------------------
  const ComparisonState& comparison() const { return comparison_; }
  /// Chooses a reference among the candidates (false when it is not offered).
  bool chooseReference(int run);
  /// Chooses A among comparison().tests (a run of any data of the session, or a reference file); false
  /// when it is not offered. kNoReference: A is the shown run again (also after new data or a new run).
  bool chooseTest(int id);
  /// An image file as a reference (B) for any run of its size: kept with the earlier data's runs, chosen
  /// at once when it fits the shown run; returns its candidate id (negative).
  int addReferenceImage(std::string label, std::shared_ptr<const CArray> image);
  /// The image of reference file `id` (addReferenceImage's) replaced, e.g. by its images of another frame; its
  /// choice as A or B kept. False when no such reference is kept.
  bool replaceReferenceImage(int id, std::shared_ptr<const CArray> image);
  /// The metrics of the current pair (the compare view computes them off the GUI thread).
  void setComparisonMetrics(std::optional<quality::Metrics> metrics);

  // --- export --------------------------------------------------------------------------------------
  const ExportState& exports() const { return export_; }
  /// Why the shown result cannot be exported ("no reconstruction to export yet"), or "".
  std::string exportProblem() const;
  /// The name an export dialog proposes, without a suffix (defaultOutputBase).
  std::string suggestedOutputBase(const std::string& outputFolder) const;
  void recordExport(ExportOutcome outcome);
  /// The frames a DICOM/NIfTI export or a send writes of the shown run: every frame of the series (a series
  /// run's, or each frame's run with the shown run's settings) when `allFrames` and each has one, else the
  /// shown frame alone. `missing` names the frames without a run ("frames 2-4/4") when all were asked for.
  struct SeriesExport {
    std::vector<std::shared_ptr<const recon::ReconResult>> results;  ///< one per frame written, in frame order
    bool wholeSeries = false;  ///< every frame of a multi-frame series (results.size() == frameCount())
    std::string missing;
    std::string description;   ///< the series description rule's (seriesDescription)
  };
  SeriesExport seriesExport(bool allFrames) const;
  /// The current study's fields (StudyFields: the user's, else the header's).
  StudyFields study() const;
  void setStudy(const StudyFields& fields);
  /// The current study's UID (made once) and `count` series numbers from its next one; returns the first.
  int reserveSeries(int count, std::string& studyUid);

 private:
  template <class F>
  void notify(F&& f);
  void updateComparison();

  std::vector<WorkstationObserver*> observers_;
  LoadedDataset data_;
  std::map<std::uint64_t, DataSource> pendingLoads_;
  SessionSettings session_;
  std::shared_ptr<Backend> backend_;
  std::string device_, deviceNotice_, deviceError_;
  struct PendingRun {
    SessionSettings session;
    std::string description;
    std::size_t frame = 0;
    bool series = false;
  };
  const RunRecord* added(const RunRecord& run);  ///< shows a run just added and tells the observers
  mutable std::map<std::size_t, std::shared_ptr<const CArray>> frameTruths_;
  std::map<int, std::size_t> runFrames_;  ///< run number -> the frame it reconstructed
  std::map<std::uint64_t, PendingRun> pendingRuns_;
  RunHistory runs_;
  int shown_ = 0;
  int liveRun_ = 0;  ///< the live scan's run (showLiveScan), 0: none
  int slice_ = -1;
  ComparisonState comparison_;
  ExportState export_;
  std::map<std::string, StudyFields> studies_;  ///< by study key (the file, or "phantom"); kept across data
  std::string studyKey() const;

 private:
  void keepForComparison(CompareCandidate c);
  static constexpr std::size_t kEarlierKept = 8;
  std::vector<CompareCandidate> earlier_;  ///< runs of earlier data and reference files, newest first
  int referenceIds_ = kNoReference;
  int testChoice_ = kNoReference;  ///< A's id when the user chose one; kNoReference: the shown run
};

}  // namespace larmor::model
