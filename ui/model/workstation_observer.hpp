#pragma once
// What the widgets hear from the WorkstationModel. Each call comes after the model changed, on the
// thread that changed it (the GUI thread); the default does nothing, so an observer overrides what it
// shows.
namespace larmor::model {

struct RunRecord;

class WorkstationObserver {
 public:
  virtual ~WorkstationObserver() = default;
  /// New data: the runs, the shown run, the comparison and the export state were cleared with it.
  virtual void datasetChanged() {}
  /// Another frame of the same series is current (the runs stay).
  virtual void frameChanged() {}
  virtual void sessionChanged() {}
  /// The device (backend) changed, or selecting it failed (WorkstationModel::deviceError()).
  virtual void deviceChanged() {}
  virtual void runAdded(const RunRecord&) {}
  /// Another run is shown (or none).
  virtual void shownRunChanged() {}
  virtual void sliceChanged(int) {}
  /// The references offered or the one chosen changed.
  virtual void comparisonChanged() {}
  virtual void comparisonMetricsChanged() {}
  virtual void exportRecorded() {}
};

}  // namespace larmor::model
