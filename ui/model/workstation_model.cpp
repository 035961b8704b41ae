// The workstation model's decisions (workstation_model.hpp).
#include "workstation_model.hpp"

#include "method_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "larmor/backend/registry.hpp"
#ifdef LARMOR_HAVE_IO
#include "larmor/io/dicom.hpp"
#endif
#include "larmor/quality/display.hpp"
#include "larmor/recon/dynamic.hpp"
#include "larmor/recon/settings.hpp"

namespace larmor::model {

WorkstationModel::WorkstationModel() = default;
WorkstationModel::~WorkstationModel() = default;

void WorkstationModel::addObserver(WorkstationObserver* observer) {
  if (observer && std::find(observers_.begin(), observers_.end(), observer) == observers_.end())
    observers_.push_back(observer);
}

void WorkstationModel::removeObserver(WorkstationObserver* observer) {
  observers_.erase(std::remove(observers_.begin(), observers_.end(), observer), observers_.end());
}

template <class F>
void WorkstationModel::notify(F&& f) {
  const auto observers = observers_;  // an observer may remove itself
  for (WorkstationObserver* o : observers) f(*o);
}

// --- data --------------------------------------------------------------------------------------------

void WorkstationModel::loadStarted(std::uint64_t task, DataSource source) { pendingLoads_[task] = std::move(source); }

bool WorkstationModel::loadFinished(std::uint64_t task, std::shared_ptr<const Dataset> dataset) {
  const auto it = pendingLoads_.find(task);
  const bool newest = it != pendingLoads_.end() && std::next(it) == pendingLoads_.end();
  if (!newest || !dataset) {
    if (it != pendingLoads_.end()) pendingLoads_.erase(pendingLoads_.begin(), std::next(it));
    return false;
  }
  DataSource source = std::move(it->second);
  pendingLoads_.clear();
  setDataset(std::move(dataset), std::move(source));
  return true;
}

bool WorkstationModel::loadFinished(std::uint64_t task, std::shared_ptr<const io::Series> series) {
  if (!series || series->frames.empty()) return loadFinished(task, std::shared_ptr<const Dataset>());
  const auto it = pendingLoads_.find(task);
  const bool newest = it != pendingLoads_.end() && std::next(it) == pendingLoads_.end();
  if (!newest) {
    if (it != pendingLoads_.end()) pendingLoads_.erase(pendingLoads_.begin(), std::next(it));
    return false;
  }
  DataSource source = std::move(it->second);
  pendingLoads_.clear();
  std::shared_ptr<const Dataset> first(series, &series->frames.front());
  setDataset(std::move(first), std::move(source), series->frames.size() > 1 ? series : nullptr);
  return true;
}

bool WorkstationModel::setFrame(std::size_t f) {
  if (!data_.series || f >= data_.series->frames.size() || f == data_.frame) return false;
  const auto series = data_.series;
  data_ = describeDataset(std::shared_ptr<const Dataset>(series, &series->frames[f]), data_.source);
  data_.series = series;
  data_.frame = f;
  frameTruths_.emplace(f, data_.truth);  // describeDataset computed it
  runs_.selectFrame(f);
  // A series run shows the new frame's image at once (the window keeps it shown: runForFrame finds it).
  if (shownRun() && shownRun()->isSeries()) {
    notify([](WorkstationObserver& o) { o.shownRunChanged(); });
    updateComparison();
  }
  notify([](WorkstationObserver& o) { o.frameChanged(); });
  return true;
}

int WorkstationModel::runForFrame(std::size_t f, const SessionSettings& session) const {
  int best = 0;
  for (const auto& r : runs_.runs()) {
    if (!sameSession(r.settings, session)) continue;
    const auto it = runFrames_.find(r.number);
    if ((r.isSeries() && f < r.frames.size()) || (it != runFrames_.end() && it->second == f)) best = std::max(best, r.number);
  }
  return best;
}

bool WorkstationModel::runsWholeSeries() const {
  return data_.frameCount() > 1 && session_.settings.method == recon::Method::Cs;
}

std::shared_ptr<const CArray> WorkstationModel::frameTruth(std::size_t f) const {
  if (!data_.series) return f == 0 ? data_.truth : nullptr;
  if (f >= data_.series->frames.size()) return nullptr;
  const auto it = frameTruths_.find(f);
  if (it != frameTruths_.end()) return it->second;
  std::shared_ptr<const CArray> t;
  const Dataset& d = data_.series->frames[f];
  if (d.reference) {
    try {
      t = std::make_shared<const CArray>(quality::comparisonTruth(d));
    } catch (const std::exception&) {  // describeDataset says why for the frame shown
    }
  }
  frameTruths_[f] = t;
  return t;
}

TimeCurve WorkstationModel::timeCurve(const PlaneRoi& roi) const {
  TimeCurve c;
  const RunRecord* shown = shownRun();
  const std::size_t n = data_.frameCount();
  bool anyTruth = false;
  std::vector<double> truth;
  for (std::size_t f = 0; f < n; ++f) {
    const CArray* image = nullptr;
    if (shown && shown->isSeries() && f < shown->frames.size()) {
      image = &shown->frames[f]->image;
    } else if (shown) {
      const RunRecord* r = runs_.find(runForFrame(f, shown->settings));
      if (r) image = r->isSeries() ? &r->frames[f]->image : &r->result->image;
    }
    c.values.push_back(image ? roiMean(*image, roi) : std::nan(""));
    const std::shared_ptr<const CArray> t = frameTruth(f);
    anyTruth |= static_cast<bool>(t);
    truth.push_back(t ? roiMean(*t, roi) : std::nan(""));
  }
  if (anyTruth) c.truth = std::move(truth);
  return c;
}

void WorkstationModel::setDataset(std::shared_ptr<const Dataset> dataset, DataSource source,
                                  std::shared_ptr<const io::Series> series) {
  // The previous data's runs stay comparable (e.g. an R4 GRAPPA against the fully sampled
  // reconstruction of another file), named with their data; the newest first, a few kept.
  if (data_.dataset)
    for (auto it = runs_.runs().rbegin(); it != runs_.runs().rend(); ++it)
      keepForComparison({it->number, data_.source.name() + " · " + it->label, it->image()});
  data_ = describeDataset(std::move(dataset), std::move(source));
  data_.series = std::move(series);
  frameTruths_.clear();
  if (data_.series) frameTruths_[data_.frame] = data_.truth;
  runFrames_.clear();
  // Everything that belonged to the previous data goes: its runs (and what is shown and compared)
  // and where its exports went. The session settings and the device stay.
  runs_.clear();
  pendingRuns_.clear();
  shown_ = 0;
  slice_ = -1;
  comparison_ = {};
  testChoice_ = kNoReference;
  export_ = {};
  notify([](WorkstationObserver& o) { o.datasetChanged(); });
}

// --- session and device ------------------------------------------------------------------------------

void WorkstationModel::setSession(const SessionSettings& s) {
  const bool changed = !sameSession(s, session_);
  session_ = s;
  if (changed) notify([](WorkstationObserver& o) { o.sessionChanged(); });
  selectDevice(s.device);
}

bool WorkstationModel::selectDevice(const std::string& device) {
  if (backend_ && device == device_) return true;
  try {
    const Selection sel = BackendRegistry::instance().select(device);
    backend_ = sel.backend;
    device_ = device;
    deviceNotice_ = sel.notice;
    deviceError_.clear();
  } catch (const std::exception& e) {
    backend_.reset();
    device_.clear();
    deviceNotice_.clear();
    deviceError_ = e.what();
  }
  notify([](WorkstationObserver& o) { o.deviceChanged(); });
  return static_cast<bool>(backend_);
}

// --- runs --------------------------------------------------------------------------------------------

RunPlan WorkstationModel::planRun(RunKind kind) {
  RunPlan plan;
  plan.session = session_;
  const recon::Method method = session_.settings.method;
  if ((kind == RunKind::Sweep || kind == RunKind::LiveLambda) && method != recon::Method::Cg &&
      method != recon::Method::Cs) {
    plan.error = kind == RunKind::Sweep
                     ? "The λ sweep needs an iterative method (CG or compressed sensing); choose one under Settings ▸ Method."
                     : "The live λ needs an iterative method (CG or compressed sensing).";
    return plan;
  }
  if (!data_.dataset) {
    plan.error = "No data: open a file or make a phantom first.";
    return plan;
  }
  if (const std::string why = methodProblem(session_.settings.method, *data_.dataset); !why.empty()) {
    plan.error = why;
    return plan;
  }
  if (!selectDevice(session_.device)) {
    plan.error = deviceError_;
    return plan;
  }
  plan.dataset = data_.dataset;
  plan.settings = session_.settings;
  plan.settings.keepCoilImages = false;  // the viewer shows the combined image; skip the coil download
  plan.backend = backend_;
  plan.description = describeSettings(session_.settings, &data_.dataset->header);
  if (runsWholeSeries()) {
    // Every frame at once: the joint reconstruction (or each frame alone with frames_independent); the
    // engine has no warm start for the joint path.
    plan.series = data_.series;
    const auto& dyn = session_.settings.dynamic;
    const bool joint = recon::jointOverFrames(data_.series->frames, session_.settings);
    const char* prior = dyn.prior == recon::TemporalPrior::TemporalTv ? "ttv"
                        : dyn.prior == recon::TemporalPrior::LowRank  ? "llr"
                                                                      : "sttv";
    char lt[32];
    std::snprintf(lt, sizeof lt, "%.3g", dyn.temporalLambda);
    plan.description += " · " + std::to_string(data_.frameCount()) + " frames " +
                        (joint ? std::string("jointly, ") + prior + " λt " + lt : std::string("frame by frame"));
    return plan;
  }
  if (data_.frameCount() > 1) plan.description += " · " + data_.frameName();
  if (kind == RunKind::LiveLambda)
    if (const RunRecord* shown = shownRun()) plan.warmStart = shown->image();
  return plan;
}

void WorkstationModel::runStarted(std::uint64_t task, const RunPlan& plan) {
  pendingRuns_[task] = {plan.session, plan.description, data_.frame, static_cast<bool>(plan.series)};
}

const RunRecord* WorkstationModel::runFinished(std::uint64_t task, std::shared_ptr<const recon::ReconResult> result) {
  const auto it = pendingRuns_.find(task);
  if (it == pendingRuns_.end() || !result) {
    runEnded(task);
    return nullptr;
  }
  PendingRun pending = std::move(it->second);
  pendingRuns_.erase(pendingRuns_.begin(), std::next(it));
  const RunRecord& run = runs_.add(std::move(result), std::move(pending.description), std::move(pending.session));
  runFrames_[run.number] = pending.frame;
  return added(run);
}

const RunRecord* WorkstationModel::runFinished(std::uint64_t task,
                                               std::vector<std::shared_ptr<const recon::ReconResult>> frames) {
  const auto it = pendingRuns_.find(task);
  const bool fits = it != pendingRuns_.end() && it->second.series && frames.size() == data_.frameCount() &&
                    std::all_of(frames.begin(), frames.end(), [](const auto& r) { return static_cast<bool>(r); });
  if (!fits) {
    runEnded(task);
    return nullptr;
  }
  PendingRun pending = std::move(it->second);
  pendingRuns_.erase(pendingRuns_.begin(), std::next(it));
  return added(runs_.addSeries(std::move(frames), data_.frame, std::move(pending.description), std::move(pending.session)));
}

const RunRecord* WorkstationModel::added(const RunRecord& run) {
  const bool sameShape = shownRun() && shownRun()->result->image.shape() == run.result->image.shape();
  shown_ = run.number;
  testChoice_ = kNoReference;  // a new run is A again
  if (!sameShape) slice_ = -1;
  notify([&](WorkstationObserver& o) { o.runAdded(run); });
  notify([](WorkstationObserver& o) { o.shownRunChanged(); });
  updateComparison();
  return runs_.find(shown_);
}

const RunRecord* WorkstationModel::showLiveScan(const LiveScan& scan, bool fresh, bool withData) {
  if (!fresh && !runs_.find(liveRun_)) return nullptr;  // other data since: the scan is no longer on screen
  auto results = scan.results();
  const bool grew = !fresh && results.size() != data_.frameCount();
  if (!fresh && !grew && !withData) {  // one more slice of a known frame: the images alone
    const RunRecord* run = runs_.update(liveRun_, std::move(results), data_.frame);
    if (run && shown_ == liveRun_) {
      notify([](WorkstationObserver& o) { o.shownRunChanged(); });
      updateComparison();
    }
    return run;
  }
  if (!fresh) data_.dataset.reset(), data_.series.reset();  // the scan's data then grow in place (live_scan.hpp)
  const std::shared_ptr<const io::Series> series = scan.series();
  if (series->frames.empty() || results.size() != series->frames.size()) return nullptr;
  const auto frameOf = [&](std::size_t f) { return std::shared_ptr<const Dataset>(series, &series->frames[f]); };
  const auto seriesOf = [&] { return series->frames.size() > 1 ? series : nullptr; };
  if (fresh) {
    setDataset(frameOf(0), DataSource::file(scan.source()), seriesOf());
    const RunRecord& run = results.size() > 1 ? runs_.addSeries(std::move(results), 0, scan.description(), session_)
                                              : runs_.add(results.front(), scan.description(), session_);
    liveRun_ = run.number;
    runFrames_[run.number] = 0;
    return added(run);
  }
  data_.frame = std::min(data_.frame, series->frames.size() - 1);
  data_.dataset = frameOf(data_.frame);
  data_.series = seriesOf();
  const RunRecord* run = runs_.update(liveRun_, std::move(results), data_.frame);
  if (!run) return nullptr;
  if (grew) notify([](WorkstationObserver& o) { o.frameChanged(); });
  if (shown_ == liveRun_) {
    notify([](WorkstationObserver& o) { o.shownRunChanged(); });
    updateComparison();
  }
  return run;
}

void WorkstationModel::runEnded(std::uint64_t task) {
  pendingRuns_.erase(pendingRuns_.begin(), pendingRuns_.upper_bound(task));
}

std::shared_ptr<const recon::ReconResult> WorkstationModel::shownResult() const {
  const RunRecord* r = shownRun();
  return r ? r->result : nullptr;
}

bool WorkstationModel::showRun(int number) {
  const RunRecord* r = runs_.find(number);
  if (!r) return false;
  if (number == shown_) return true;
  const RunRecord* before = shownRun();
  if (!before || before->result->image.shape() != r->result->image.shape()) slice_ = -1;
  shown_ = number;
  testChoice_ = kNoReference;
  notify([](WorkstationObserver& o) { o.shownRunChanged(); });
  updateComparison();
  return true;
}

void WorkstationModel::setSlice(int slice) {
  if (slice == slice_) return;
  slice_ = slice;
  notify([slice](WorkstationObserver& o) { o.sliceChanged(slice); });
}

// --- comparison --------------------------------------------------------------------------------------

void WorkstationModel::updateComparison() {
  // A phantom's truth is the phantom; a file's reference is the image the file carries (often the
  // fully sampled reconstruction), not a "phantom truth".
  const std::string truthLabel =
      data_.source.isFile() ? "reference image in " + data_.source.name() : std::string("phantom truth");
  // A: the image the user chose (any run of the session, of any data, or a file), else
  // the shown run. B: the truth and every other image of the session of A's size.
  comparison_.tests.clear();
  for (auto it = runs_.runs().rbegin(); it != runs_.runs().rend(); ++it)
    if (it->result) comparison_.tests.push_back({it->number, it->label, it->image()});
  for (const CompareCandidate& e : earlier_)
    if (e.image) comparison_.tests.push_back(e);
  const auto chosen = std::find_if(comparison_.tests.begin(), comparison_.tests.end(),
                                   [&](const CompareCandidate& c) { return c.run == testChoice_; });
  if (testChoice_ == kNoReference || testChoice_ == shown_ || chosen == comparison_.tests.end()) {
    testChoice_ = kNoReference;
    comparison_.candidates = compareCandidates(shownRun(), runs_, data_.truth, truthLabel);
    if (shownRun())
      for (const CompareCandidate& e : earlier_)
        if (e.image && canCompare(shownRun()->result->image, *e.image)) comparison_.candidates.push_back(e);
    comparison_.test = shownRun() ? shown_ : 0;
    comparison_.testLabel = shownRun() ? shownRun()->label : std::string();
    comparison_.testImage = shownRun() ? shownRun()->image() : nullptr;
  } else {
    const CompareCandidate a = *chosen;
    comparison_.candidates.clear();
    if (data_.truth && canCompare(*a.image, *data_.truth)) comparison_.candidates.push_back({kTruth, truthLabel, data_.truth});
    for (const CompareCandidate& c : comparison_.tests)
      if (c.run != a.run && canCompare(*a.image, *c.image)) comparison_.candidates.push_back(c);
    comparison_.test = a.run;
    comparison_.testLabel = a.label;
    comparison_.testImage = a.image;
  }
  comparison_.reference = keepReference(comparison_.candidates, comparison_.reference);
  comparison_.metrics.reset();
  notify([](WorkstationObserver& o) { o.comparisonChanged(); });
}

void WorkstationModel::keepForComparison(CompareCandidate c) {
  earlier_.insert(earlier_.begin(), std::move(c));
  if (earlier_.size() > kEarlierKept) earlier_.resize(kEarlierKept);
}

int WorkstationModel::addReferenceImage(std::string label, std::shared_ptr<const CArray> image) {
  const int id = --referenceIds_;  // -2, -3, ...: below kNoReference, never a run's number
  keepForComparison({id, std::move(label), std::move(image)});
  updateComparison();
  chooseReference(id);
  return id;
}

bool WorkstationModel::replaceReferenceImage(int id, std::shared_ptr<const CArray> image) {
  const auto it = std::find_if(earlier_.begin(), earlier_.end(), [id](const CompareCandidate& c) { return c.run == id; });
  if (it == earlier_.end() || !image) return false;
  it->image = std::move(image);
  const int reference = comparison_.reference;
  updateComparison();
  if (reference == id) chooseReference(id);  // still B where it still fits A
  return true;
}

bool WorkstationModel::chooseTest(int id) {
  const auto& t = comparison_.tests;
  if (id != kNoReference && std::none_of(t.begin(), t.end(), [id](const CompareCandidate& c) { return c.run == id; }))
    return false;
  testChoice_ = id;
  updateComparison();
  return true;
}

bool WorkstationModel::chooseReference(int run) {
  const auto& c = comparison_.candidates;
  if (std::none_of(c.begin(), c.end(), [run](const CompareCandidate& x) { return x.run == run; })) return false;
  if (run == comparison_.reference) return true;
  comparison_.reference = run;
  comparison_.metrics.reset();
  notify([](WorkstationObserver& o) { o.comparisonChanged(); });
  return true;
}

void WorkstationModel::setComparisonMetrics(std::optional<quality::Metrics> metrics) {
  comparison_.metrics = metrics;
  notify([](WorkstationObserver& o) { o.comparisonMetricsChanged(); });
}

// --- export ------------------------------------------------------------------------------------------

std::string WorkstationModel::exportProblem() const {
  return shownRun() && data_.dataset ? std::string() : std::string("no reconstruction to export yet");
}

std::string WorkstationModel::suggestedOutputBase(const std::string& outputFolder) const {
  return defaultOutputBase(data_.source, shownRun(), export_.lastFolder, outputFolder);
}

std::string WorkstationModel::studyKey() const { return data_.source.isFile() ? data_.source.path : "phantom"; }

StudyFields WorkstationModel::study() const {
  const auto it = studies_.find(studyKey());
  if (it != studies_.end()) return it->second;
  return data_.dataset ? studyFieldsFrom(data_.dataset->header) : StudyFields{};
}

void WorkstationModel::setStudy(const StudyFields& fields) {
  StudyFields f = study();
  f.patientName = fields.patientName, f.patientId = fields.patientId;
  f.accessionNumber = fields.accessionNumber, f.studyDescription = fields.studyDescription;
  studies_[studyKey()] = f;
}

int WorkstationModel::reserveSeries(int count, std::string& studyUid) {
  StudyFields f = study();
#ifdef LARMOR_HAVE_IO
  if (f.studyUid.empty()) f.studyUid = io::newDicomUid();  // without DICOM, NIfTI has no study
#endif
  const int first = f.nextSeriesNumber;
  f.nextSeriesNumber += std::max(1, count);
  studies_[studyKey()] = f;
  studyUid = f.studyUid;
  return first;
}

WorkstationModel::SeriesExport WorkstationModel::seriesExport(bool allFrames) const {
  SeriesExport e;
  const RunRecord* shown = shownRun();
  if (!shown || !data_.dataset) return e;
  const std::size_t n = data_.frameCount();
  std::vector<std::size_t> missing;
  if (allFrames && n > 1) {
    for (std::size_t f = 0; f < n; ++f) {
      const RunRecord* r = shown->isSeries() ? shown : runs_.find(runForFrame(f, shown->settings));
      if (!r) missing.push_back(f);
      else e.results.push_back(r->isSeries() ? r->frames.at(f) : r->result);
    }
  }
  e.wholeSeries = n > 1 && allFrames && missing.empty();
  if (!e.wholeSeries) e.results = {shown->result};
  if (!missing.empty()) {
    e.missing = "frame" + std::string(missing.size() > 1 ? "s " : " ");
    for (std::size_t i = 0; i < missing.size(); ++i) e.missing += (i ? ", " : "") + std::to_string(missing[i] + 1);
    e.missing += " of " + std::to_string(n) + " not reconstructed with these settings yet";
  }
  e.description = seriesDescription(data_.dataset->header.protocolName,
                                    describeSettings(shown->settings.settings, &data_.dataset->header),
                                    n > 1 && !e.wholeSeries ? frameLabel(data_.frame, n) : std::string());
  return e;
}

void WorkstationModel::recordExport(ExportOutcome outcome) {
  if (outcome.ok && !outcome.path.empty()) {
    const std::filesystem::path p = std::filesystem::absolute(outcome.path);
    export_.lastFolder = p.parent_path().string();
  }
  export_.last = std::move(outcome);
  notify([](WorkstationObserver& o) { o.exportRecorded(); });
}

}  // namespace larmor::model
