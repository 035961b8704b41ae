// The workstation model (ui/model) without Qt or a display: loading data (and ignoring a superseded
// load), what a run needs, runs with their labels and settings, what is shown, which runs can be
// compared, what new data clear, the export state and the observers' calls.
#include <gtest/gtest.h>

#include <filesystem>

#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/recon.hpp"
#include "workstation_model.hpp"
#include "display_orientation.hpp"
#include "method_fit.hpp"

using namespace larmor;
using namespace larmor::model;

namespace {

struct Recorder : WorkstationObserver {
  int datasets = 0, sessions = 0, devices = 0, added = 0, shown = 0, slices = 0, comparisons = 0, metrics = 0,
      exports = 0;
  int lastAdded = 0, lastSlice = -2;
  void datasetChanged() override { ++datasets; }
  void sessionChanged() override { ++sessions; }
  void deviceChanged() override { ++devices; }
  void runAdded(const RunRecord& r) override {
    ++added;
    lastAdded = r.number;
  }
  void shownRunChanged() override { ++shown; }
  void sliceChanged(int s) override {
    ++slices;
    lastSlice = s;
  }
  void comparisonChanged() override { ++comparisons; }
  void comparisonMetricsChanged() override { ++metrics; }
  void exportRecorded() override { ++exports; }
};

phantom::SimulateSettings smallPhantom(index_t n = 32, int coils = 2) {
  phantom::SimulateSettings s;
  s.matrix[0] = s.matrix[1] = n;
  s.matrix[2] = 1;
  s.coils = coils;
  return s;
}

std::shared_ptr<const Dataset> simulated(const phantom::SimulateSettings& s) {
  return std::make_shared<const Dataset>(phantom::simulate(s));
}

/// A result with an image of `shape` (no engine run: the model only keeps and compares results).
std::shared_ptr<const recon::ReconResult> fakeResult(Shape shape, float value = 1) {
  auto r = std::make_shared<recon::ReconResult>();
  r->image = CArray(std::move(shape), cfloat(value, 0));
  r->device = "cpu";
  return r;
}

/// Plans, "runs" (fake result of `shape`) and finishes one reconstruction as task `task`.
const RunRecord* addRun(WorkstationModel& m, std::uint64_t task, Shape shape = Shape{32, 32, 1, 1, 1}) {
  const RunPlan plan = m.planRun(RunKind::Recon);
  EXPECT_TRUE(plan.ok()) << plan.error;
  m.runStarted(task, plan);
  return m.runFinished(task, fakeResult(std::move(shape)));
}

class WorkstationModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m.addObserver(&seen);
    SessionSettings s;
    s.device = "cpu";
    m.setSession(s);
  }
  void TearDown() override { m.removeObserver(&seen); }
  void loadPhantom(std::uint64_t task = 1) {
    m.loadStarted(task, DataSource::simulated(smallPhantom()));
    ASSERT_TRUE(m.loadFinished(task, simulated(smallPhantom())));
  }
  WorkstationModel m;
  Recorder seen;
};

}  // namespace

TEST_F(WorkstationModelTest, LoadingAPhantomKeepsItsSourceAndTruth) {
  loadPhantom();
  EXPECT_EQ(seen.datasets, 1);
  ASSERT_TRUE(m.hasData());
  EXPECT_EQ(m.dataset()->header.coils, 2);
  EXPECT_FALSE(m.source().isFile());
  EXPECT_EQ(m.source().name(), "phantom");
  ASSERT_TRUE(m.phantom().has_value());
  EXPECT_EQ(m.phantom()->coils, 2);
  ASSERT_TRUE(m.data().truth);  // the phantom carries its reference
  EXPECT_NE(m.data().description().find("2 coils"), std::string::npos) << m.data().description();
  const auto sp = m.voxelSpacing(CArray(Shape{32, 32, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(sp[0], m.dataset()->header.reconFovMm[0] / 32.0);
}

TEST_F(WorkstationModelTest, ASupersededLoadIsIgnored) {
  m.loadStarted(1, DataSource::file("/data/first.h5"));
  m.loadStarted(2, DataSource::simulated(smallPhantom(16, 1)));
  EXPECT_FALSE(m.loadFinished(1, simulated(smallPhantom())));  // a later load was asked for
  EXPECT_FALSE(m.hasData());
  EXPECT_EQ(seen.datasets, 0);
  EXPECT_TRUE(m.loadFinished(2, simulated(smallPhantom(16, 1))));
  EXPECT_FALSE(m.source().isFile());
  EXPECT_EQ(m.dataset()->header.coils, 1);
  EXPECT_FALSE(m.loadFinished(2, simulated(smallPhantom())));  // only once
}

TEST_F(WorkstationModelTest, APlanSaysWhatIsMissing) {
  EXPECT_NE(m.planRun(RunKind::Recon).error.find("No data"), std::string::npos);
  loadPhantom();
  const RunPlan plan = m.planRun(RunKind::Recon);
  ASSERT_TRUE(plan.ok()) << plan.error;
  EXPECT_EQ(plan.dataset, m.dataset());
  EXPECT_TRUE(plan.backend);
  EXPECT_FALSE(plan.settings.keepCoilImages);  // the viewer shows the combined image
  EXPECT_TRUE(plan.session.settings.keepCoilImages);  // the session itself is as the user set it
  EXPECT_EQ(plan.description, "FFT");
  EXPECT_NE(m.planRun(RunKind::Sweep).error.find("CG"), std::string::npos);  // fft has no λ
}

TEST_F(WorkstationModelTest, RunsAreNumberedLabelledAndShown) {
  loadPhantom();
  const RunRecord* first = addRun(m, 5);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->number, 1);
  EXPECT_EQ(first->label, "run 1: FFT");
  EXPECT_EQ(m.shownRun()->number, 1);
  EXPECT_EQ(seen.added, 1);
  EXPECT_EQ(seen.shown, 1);
  // The settings that produced a run stay with it when the session changes.
  SessionSettings s = m.session();
  s.settings.method = recon::Method::Cg;
  s.settings.iterative.regularizer = ops::RegularizerKind::FiniteDifference;
  s.settings.iterative.lambda = 0.01;
  m.setSession(s);
  const RunRecord* second = addRun(m, 6);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->label, "run 2: CG, fd λ 0.01");
  EXPECT_EQ(m.runs().find(1)->settings.settings.method, recon::Method::Fft);
  EXPECT_EQ(m.shownResult(), second->result);
  EXPECT_TRUE(m.showRun(1));
  EXPECT_EQ(m.shownRun()->number, 1);
  EXPECT_FALSE(m.showRun(42));
  // A result the model did not plan, or of a task already over, is not a run.
  EXPECT_EQ(m.runFinished(99, fakeResult(Shape{32, 32, 1, 1, 1})), nullptr);
  m.runStarted(7, m.planRun(RunKind::Recon));
  m.runEnded(7);  // cancelled
  EXPECT_EQ(m.runFinished(7, fakeResult(Shape{32, 32, 1, 1, 1})), nullptr);
  EXPECT_EQ(m.runs().size(), 2u);
}

TEST_F(WorkstationModelTest, OnlyTheNewestRunsAreKept) {
  loadPhantom();
  for (std::uint64_t t = 1; t <= RunHistory::kKept + 3; ++t) ASSERT_TRUE(addRun(m, t));
  EXPECT_EQ(m.runs().size(), RunHistory::kKept);
  EXPECT_EQ(m.runs().newest()->number, static_cast<int>(RunHistory::kKept + 3));
  EXPECT_EQ(m.runs().find(1), nullptr);
}

TEST_F(WorkstationModelTest, ALiveLambdaStartsFromTheShownImage) {
  loadPhantom();
  SessionSettings s = m.session();
  s.settings.method = recon::Method::Cg;
  m.setSession(s);
  EXPECT_FALSE(m.planRun(RunKind::LiveLambda).warmStart);  // nothing shown yet
  ASSERT_TRUE(addRun(m, 1));
  const RunPlan live = m.planRun(RunKind::LiveLambda);
  ASSERT_TRUE(live.warmStart);
  EXPECT_EQ(live.warmStart.get(), &m.shownResult()->image);
  EXPECT_FALSE(m.planRun(RunKind::Recon).warmStart);
}

TEST_F(WorkstationModelTest, TheTruthAndRunsOfTheSameSizeCanBeCompared) {
  loadPhantom();
  ASSERT_TRUE(addRun(m, 1));
  ASSERT_EQ(m.comparison().candidates.size(), 1u);  // the truth only: run 1 is A itself
  EXPECT_EQ(m.comparison().reference, kTruth);
  ASSERT_TRUE(addRun(m, 2));
  const auto& c = m.comparison();
  EXPECT_EQ(c.test, 2);
  ASSERT_EQ(c.candidates.size(), 2u);
  EXPECT_EQ(c.candidates[0].label, "phantom truth");
  EXPECT_EQ(c.candidates[1].run, 1);
  EXPECT_EQ(c.reference, kTruth);
  const int before = seen.comparisons;
  EXPECT_TRUE(m.chooseReference(1));
  EXPECT_EQ(m.comparison().chosen()->label, "run 1: FFT");
  EXPECT_EQ(seen.comparisons, before + 1);
  EXPECT_FALSE(m.chooseReference(7));
  quality::Metrics q;
  q.percentError = 3;
  m.setComparisonMetrics(q);
  EXPECT_EQ(seen.metrics, 1);
  EXPECT_DOUBLE_EQ(m.comparison().metrics->percentError, 3);
  // Run 3 on another matrix: neither the truth nor the 32² runs fit it.
  ASSERT_TRUE(addRun(m, 3, Shape{48, 48, 1, 1, 1}));
  EXPECT_TRUE(m.comparison().candidates.empty());
  EXPECT_EQ(m.comparison().reference, kNoReference);
  EXPECT_FALSE(m.comparison().metrics);
  // Back on run 2: run 1 is offered again, and the truth comes first again.
  EXPECT_TRUE(m.showRun(2));
  EXPECT_EQ(m.comparison().candidates.size(), 2u);
  EXPECT_EQ(m.comparison().reference, kTruth);
}

TEST_F(WorkstationModelTest, KeepReferenceKeepsAChoiceStillOffered) {
  const std::vector<CompareCandidate> c = {{kTruth, "truth", nullptr}, {3, "run 3", nullptr}};
  EXPECT_EQ(keepReference(c, 3), 3);
  EXPECT_EQ(keepReference(c, 2), kTruth);
  EXPECT_EQ(keepReference({}, 3), kNoReference);
  EXPECT_TRUE(canCompare(CArray(Shape{4, 4, 2}), CArray(Shape{4, 4, 1, 1, 2})));
  EXPECT_FALSE(canCompare(CArray(Shape{4, 4, 2}), CArray(Shape{8, 2, 2})));
}

TEST_F(WorkstationModelTest, NewDataClearWhatBelongedToTheOldData) {
  loadPhantom();
  ASSERT_TRUE(addRun(m, 1));
  ASSERT_TRUE(addRun(m, 2));
  m.setSlice(7);
  const auto dir = std::filesystem::temp_directory_path() / "larmor-model-test";
  m.recordExport({"cfl", (dir / "image.cfl").string(), true, ""});
  EXPECT_EQ(m.exports().lastFolder, dir.string());
  const SessionSettings session = m.session();

  m.loadStarted(3, DataSource::file("/data/scan.h5"));
  ASSERT_TRUE(m.loadFinished(3, simulated(smallPhantom(16, 1))));
  EXPECT_EQ(seen.datasets, 2);
  EXPECT_TRUE(m.runs().empty());
  EXPECT_EQ(m.shownRun(), nullptr);
  EXPECT_EQ(m.shownResult(), nullptr);
  EXPECT_EQ(m.slice(), -1);
  EXPECT_TRUE(m.comparison().candidates.empty());
  EXPECT_EQ(m.comparison().reference, kNoReference);
  EXPECT_TRUE(m.exports().lastFolder.empty());
  EXPECT_FALSE(m.exports().last);
  EXPECT_FALSE(m.phantom());
  EXPECT_EQ(m.source().name(), "scan.h5");
  EXPECT_TRUE(sameSession(m.session(), session));  // the settings stay
  // The numbering goes on: "run 1" names one run in the whole session's log.
  EXPECT_EQ(addRun(m, 4, Shape{16, 16, 1, 1, 1})->number, 3);
}

TEST_F(WorkstationModelTest, ExportsProposeANameAndRememberTheirFolder) {
  EXPECT_FALSE(m.exportProblem().empty());
  loadPhantom();
  EXPECT_EQ(m.suggestedOutputBase("/work/here"), "/work/here/phantom");
  EXPECT_FALSE(m.exportProblem().empty());
  ASSERT_TRUE(addRun(m, 1));
  EXPECT_TRUE(m.exportProblem().empty());
  EXPECT_EQ(m.suggestedOutputBase("/work/here"), "/work/here/phantom-fft");
  m.loadStarted(2, DataSource::file("/data/scan.h5"));
  ASSERT_TRUE(m.loadFinished(2, simulated(smallPhantom())));
  ASSERT_TRUE(addRun(m, 3));
  // Larmor's output folder, not the raw data's folder.
  EXPECT_EQ(m.suggestedOutputBase("/work/here"), "/work/here/scan-fft");
  m.recordExport({"dicom", "/nonexistent/out/series", false, "cannot create"});
  EXPECT_EQ(seen.exports, 1);
  EXPECT_FALSE(m.exports().last->ok);
  EXPECT_EQ(m.suggestedOutputBase("/work/here"), "/work/here/scan-fft");  // a failed export moves nothing
  m.recordExport({"nifti", "/exports/today/scan.nii", true, ""});
  EXPECT_EQ(m.suggestedOutputBase("/work/here"), "/exports/today/scan-fft");
}

// One series-description rule (Export and Send); a study's patient fields and UID are kept across other data,
// and each of its series gets a number of its own.
TEST_F(WorkstationModelTest, StudiesKeepTheirFieldsAndNumberTheirSeries) {
  EXPECT_EQ(seriesDescription(" t1_se_tra ", "GRAPPA R4", ""), "t1_se_tra GRAPPA R4");
  EXPECT_EQ(seriesDescription("", "FFT", frameLabel(2, 4)), "FFT frame 3/4");
  EXPECT_EQ(seriesDescription(std::string(80, 'p'), "FFT", "").size(), 64u);
  m.loadStarted(1, DataSource::file("/data/a.h5"));
  ASSERT_TRUE(m.loadFinished(1, simulated(smallPhantom())));
  ASSERT_TRUE(addRun(m, 1));
  EXPECT_EQ(m.seriesExport(true).description, m.dataset()->header.protocolName + " FFT");  // one frame: none named
  EXPECT_EQ(m.seriesExport(true).results.size(), 1u);
  StudyFields f = m.study();
  f.patientName = "DOE^JANE", f.accessionNumber = "A1";
  m.setStudy(f);
  std::string uid1, uid2, uidB;
  EXPECT_EQ(m.reserveSeries(1, uid1), 1);
  EXPECT_EQ(m.reserveSeries(2, uid2), 2);
  EXPECT_EQ(uid1, uid2);
  m.loadStarted(2, DataSource::file("/data/b.h5"));
  ASSERT_TRUE(m.loadFinished(2, simulated(smallPhantom())));
  EXPECT_EQ(m.study().patientName, "");
  EXPECT_EQ(m.reserveSeries(1, uidB), 1);
  EXPECT_NE(uidB, uid1);
  m.loadStarted(3, DataSource::file("/data/a.h5"));  // the first study again
  ASSERT_TRUE(m.loadFinished(3, simulated(smallPhantom())));
  EXPECT_EQ(m.study().patientName, "DOE^JANE");
  EXPECT_EQ(m.study().accessionNumber, "A1");
  EXPECT_EQ(m.reserveSeries(1, uid2), 4);
  EXPECT_EQ(uid2, uid1);
}

TEST_F(WorkstationModelTest, SessionDeviceAndSliceTellTheObservers) {
  const int sessions = seen.sessions, devices = seen.devices;
  SessionSettings s = m.session();
  m.setSession(s);
  EXPECT_EQ(seen.sessions, sessions);  // nothing changed
  EXPECT_EQ(seen.devices, devices);     // the same device keeps its backend
  s.settings.iterative.lambda = 0.5;
  m.setSession(s);
  EXPECT_EQ(seen.sessions, sessions + 1);
  EXPECT_TRUE(m.backend());
  EXPECT_EQ(m.device(), "cpu");
  EXPECT_FALSE(m.selectDevice("no-such-device"));
  EXPECT_FALSE(m.deviceError().empty());
  EXPECT_FALSE(m.backend());
  EXPECT_EQ(seen.devices, devices + 1);
  loadPhantom();
  EXPECT_TRUE(m.planRun(RunKind::Recon).ok());  // selects the session's device again...
  EXPECT_TRUE(m.backend());                     // ...which works
  m.setSlice(3);
  m.setSlice(3);
  EXPECT_EQ(seen.slices, 1);
  EXPECT_EQ(seen.lastSlice, 3);
}

TEST(WorkstationModelLabels, DescribeSettings) {
  recon::ReconSettings s;
  s.method = recon::Method::Grappa;
  EXPECT_EQ(describeSettings(s), "GRAPPA");
  s.method = recon::Method::Cg;
  s.iterative.regularizer = ops::RegularizerKind::Anatomical;
  s.iterative.lambda = 1e-6;
  EXPECT_EQ(describeSettings(s), "CG, anatomical λ 1e-06");
  // Clinical labels: GRAPPA names its acceleration from the data.
  Header h;
  h.accelerationPe1 = 4;
  s.method = recon::Method::Grappa;
  EXPECT_EQ(describeSettings(s, &h), "GRAPPA R4");
  EXPECT_EQ(formatDuration(39650), "39.6 s");
  EXPECT_EQ(formatDuration(164.2), "164 ms");
  EXPECT_EQ(formatDuration(1410), "1.41 s");
  EXPECT_EQ(formatDuration(23.4), "23 ms");
  EXPECT_EQ(formatDuration(4.2), "4.20 ms");
  EXPECT_EQ(formatDuration(999.7), "1.00 s");
  EXPECT_EQ(formatDuration(125000), "2 min 05 s");
}

// Which methods can apply, said once for the GUI's list and the run plan.
TEST(WorkstationModelMethods, MethodsThatCannotApplySayWhy) {
  Header cart, radial;
  radial.trajectory = TrajectoryKind::Radial;
  for (auto m : {recon::Method::Gridding, recon::Method::Tron, recon::Method::Dft}) {
    EXPECT_NE(methodProblem(m, cart).find("non-Cartesian"), std::string::npos);
    EXPECT_EQ(methodProblem(m, radial), "");
  }
  for (auto m : {recon::Method::Fft, recon::Method::Grappa}) {
    EXPECT_NE(methodProblem(m, radial).find("Cartesian grid"), std::string::npos);
    EXPECT_EQ(methodProblem(m, cart), "");
  }
  for (auto m : {recon::Method::Cg, recon::Method::Cs}) {
    EXPECT_EQ(methodProblem(m, cart), "");
    EXPECT_EQ(methodProblem(m, radial), "");
  }
}

// One display convention for every format; letters from the geometry.
TEST(WorkstationModelOrientation, OneConventionForEveryFormat) {
  Header h;
  h.geometry.present = true;  // the simulator's identity geometry: x = L, y = P
  PlaneLayout p = planeLayout(displayOrientation(h, "simulated"), 2);
  EXPECT_EQ(p.name, "Axial");
  EXPECT_EQ(p.right, 0);
  EXPECT_EQ(p.rightSign, 1);
  EXPECT_EQ(p.upSign, -1);  // row 0 at the top
  EXPECT_EQ(std::string({p.left, p.rightLetter, p.top, p.bottom}), "RLAP");
  // ISMRMRD without geometry (ismrmrd_generate_cartesian_shepp_logan): y grows upwards.
  Header none;
  p = planeLayout(displayOrientation(none, "/data/testdata.h5"), 2);
  EXPECT_EQ(p.right, 0);
  EXPECT_EQ(p.upSign, 1);
  EXPECT_EQ(std::string({p.left, p.rightLetter, p.top, p.bottom}), "RLAP");
  // BART .cfl: dim 0 down the rows, dim 1 across.
  p = planeLayout(displayOrientation(none, "/data/k.cfl"), 2);
  EXPECT_EQ(p.right, 1);
  EXPECT_EQ(p.up, 0);
  EXPECT_EQ(p.upSign, -1);
  // A sagittal acquisition (read = -y/A... phase = -z, slice = x): anterior left, superior up.
  Header sag;
  sag.geometry.present = true;
  const float rd[3] = {0, 1, 0}, pd[3] = {0, 0, -1}, sd[3] = {1, 0, 0};
  std::copy(rd, rd + 3, sag.geometry.readDir);
  std::copy(pd, pd + 3, sag.geometry.phaseDir);
  std::copy(sd, sd + 3, sag.geometry.sliceDir);
  p = planeLayout(displayOrientation(sag, "scan.h5"), 2);
  EXPECT_EQ(p.name, "Sagittal");
  EXPECT_EQ(std::string({p.left, p.rightLetter, p.top, p.bottom}), "APSI");
  EXPECT_EQ(p.right, 0);
  EXPECT_EQ(p.upSign, -1);  // phase (-z = I) grows downwards
}

TEST(WorkstationModelRun, AReconstructionOfTheModelsPlanIsARun) {
  WorkstationModel m;
  SessionSettings s;
  s.device = "cpu";
  m.setSession(s);
  m.setDataset(simulated(smallPhantom()), DataSource::simulated(smallPhantom()));
  const RunPlan plan = m.planRun(RunKind::Recon);
  ASSERT_TRUE(plan.ok()) << plan.error;
  recon::ReconRequest req;
  req.dataset = plan.dataset.get();
  req.settings = plan.settings;
  req.backend = plan.backend;
  m.runStarted(1, plan);
  const RunRecord* run = m.runFinished(1, std::make_shared<const recon::ReconResult>(recon::run(req)));
  ASSERT_TRUE(run);
  EXPECT_NE(run->summary().find("% error"), std::string::npos) << run->summary();
  ASSERT_EQ(m.comparison().candidates.size(), 1u);  // the truth fits the reconstruction
}

TEST(FrameNames, DimsFoundOnceNameEachFrameAsBefore) {
  io::Series s;
  for (int p = 0; p < 3; ++p)
    for (int r = 0; r < 4; ++r) s.keys.push_back(io::FrameKey{0, p, r, 2});
  const FrameDims dims = varyingFrameDims(s);
  ASSERT_EQ(dims.varying.size(), 2u);  // phase and repetition vary; contrast and set do not
  EXPECT_EQ(frameDetail(s, 6, dims), "phase 2, repetition 3");
  for (std::size_t f = 0; f < s.keys.size(); ++f) EXPECT_EQ(frameDetail(s, f, dims), frameDetail(s, f));
  EXPECT_EQ(frameDetail(s, 99, dims), "");
  io::Series one;
  one.keys.push_back(io::FrameKey{});
  EXPECT_TRUE(varyingFrameDims(one).varying.empty());
  EXPECT_EQ(frameDetail(one, 0), "");
}
