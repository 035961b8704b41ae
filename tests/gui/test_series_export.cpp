// GUI tests: series-aware, PACS-ready exports (ui/main_window_export.cpp, ui/model/export_state.hpp). A file of
// four repetitions exports as one DICOM series of four instances (distinct InstanceNumber, one SeriesInstanceUID,
// the temporal tags) and as a 4D NIfTI; the patient, accession and study fields are written and kept for the
// study, whose exports share one StudyInstanceUID with a new SeriesNumber each; Export and Send to PACS name
// the series by one rule; "this frame only" writes one instance; the status bar names the path written.
// The files are read back with pydicom and nibabel (check_series_tags.py). Each behaviour under Xvfb.
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSlider>
#include <QStandardPaths>
#include <QStatusBar>
#include <QtTest/QtTest>

#include "frame_bar.hpp"
#include "gui_test_support.hpp"
#include "larmor/recon/settings_table.hpp"
#include "main_window.hpp"
#include "pacs_dialog.hpp"
#include "theme.hpp"

using namespace larmor;
using namespace larmor::ui;
using namespace larmor::ui::test;

class SeriesExportTest : public WindowTest {
  Q_OBJECT

 private:
  bool ready_ = false;

  /// pydicom's and nibabel's reading of `paths` (check_series_tags.py); empty with a QSKIP/QFAIL when missing.
  static QJsonObject readBack(const QStringList& paths) {
    QProcess p;
    p.start(QStringLiteral("/usr/bin/python3"), QStringList{QStringLiteral(LARMOR_GUI_TEST_SOURCE_DIR "/check_series_tags.py")} + paths);
    if (!p.waitForFinished(60000) || p.exitCode() != 0) {
      qWarning("check_series_tags.py: exit %d: %s", p.exitCode(), p.readAllStandardError().constData());
      return {};
    }
    return QJsonDocument::fromJson(p.readAllStandardOutput()).object();
  }
  /// A 4-repetition ISMRMRD file, FFT, each frame reconstructed once (the frame bar's slider).
  /// ready_: it got that far (a QSKIP or a failed check returns early from here only).
  void openFourFramesAndReconstructThem(bool allFrames) {
    ready_ = false;
    const QString dir = scratchDir("series-export");
    if (!tool("ismrmrd_generate_cartesian_shepp_logan", {"-m", "32", "-c", "2", "-r", "4", "-n", "0", "-o", "rep4.h5"}, dir))
      QSKIP("ismrmrd_generate_cartesian_shepp_logan is not installed");
    open(dir + "/rep4.h5");
    QCOMPARE(w_->model().frameCount(), std::size_t(4));
    SessionState s = w_->session();
    s.settings.method = recon::Method::Fft;
    recon::settings::applyMethodDefaults(s.settings);
    w_->applySession(s);
    QVERIFY2(run(), qPrintable(w_->lastError()));
    ready_ = !allFrames;
    if (!allFrames) return;
    auto* slider = w_->findChild<FrameBar*>()->findChild<QSlider*>("frameSlider");
    for (int f = 1; f < 4; ++f) {
      const int before = finished_;
      slider->setValue(f);
      QVERIFY2(waitUntil([&] { return finished_ > before; }, 60000), "a frame was not reconstructed");
    }
    slider->setValue(1);  // frame 2/4 on screen
    QTest::qWait(100);
    ready_ = true;
  }

 private slots:
  void init() { openWindow({1200, 800}); }
  void cleanup() { closeWindow(); }

  // Every frame, one series, the temporal tags, the patient fields; a second export is a new series of the
  // same study; NIfTI is 4D; the status bar names the paths.
  void seriesExportWritesEveryFrame() {
    openFourFramesAndReconstructThem(true);
    if (!ready_) return;  // skipped or failed
    const QString dir = scratchDir("series-export-out");
    DicomExportOptions o;
    o.patientName = "DOE^JANE", o.patientId = "P-42", o.accessionNumber = "ACC7", o.studyDescription = "Phantom study";
    QVERIFY2(w_->exportDicomSeries(dir + "/a", o), qPrintable(w_->lastError()));
    QVERIFY2(w_->lastNotice().contains("4 DICOM images of 4 frames"), qPrintable(w_->lastNotice()));
    QVERIFY2(w_->statusBar()->currentMessage().contains(dir + "/a"), qPrintable(w_->statusBar()->currentMessage()));
    QVERIFY2(w_->exportDicomSeries(dir + "/b"), qPrintable(w_->lastError()));  // the study's fields are kept
    QVERIFY2(w_->exportNiftiFile(dir + "/all.nii"), qPrintable(w_->lastError()));
    QVERIFY2(w_->statusBar()->currentMessage().contains(dir + "/all.nii"), qPrintable(w_->statusBar()->currentMessage()));
    const QJsonObject r = readBack({dir + "/a", dir + "/b", dir + "/all.nii"});
    if (r.isEmpty()) QFAIL("/usr/bin/python3 with pydicom and nibabel could not read the exports (installer/install-deps.sh)");
    const QJsonArray a = r[dir + "/a"].toArray(), b = r[dir + "/b"].toArray();
    QCOMPARE(a.size(), 4);
    QCOMPARE(b.size(), 4);
    for (int i = 0; i < 4; ++i) {
      const QJsonObject t = a[i].toObject();
      QCOMPARE(t["instance"].toInt(), i + 1);
      QCOMPARE(t["series_uid"].toString(), a[0].toObject()["series_uid"].toString());
      QCOMPARE(t["temporal_position"].toInt(), i + 1);
      QCOMPARE(t["temporal_positions"].toInt(), 4);
      QCOMPARE(t["patient_name"].toString(), QStringLiteral("DOE^JANE"));
      QCOMPARE(t["patient_id"].toString(), QStringLiteral("P-42"));
      QCOMPARE(t["accession"].toString(), QStringLiteral("ACC7"));
      QCOMPARE(t["study_description"].toString(), QStringLiteral("Phantom study"));
      QCOMPARE(t["series_description"].toString(), QStringLiteral("FFT"));  // every frame: no frame in it
    }
    const QJsonObject a0 = a[0].toObject(), b0 = b[0].toObject();
    QCOMPARE(b0["patient_name"].toString(), QStringLiteral("DOE^JANE"));
    QCOMPARE(b0["study_uid"].toString(), a0["study_uid"].toString());
    QVERIFY(b0["series_uid"].toString() != a0["series_uid"].toString());
    QVERIFY2(b0["series_number"].toInt() != a0["series_number"].toInt(), "two series of one study with one number");
    const QJsonArray shape = r[dir + "/all.nii"].toObject()["shape"].toArray();
    QCOMPARE(shape.size(), 4);
    QCOMPARE(shape[3].toInt(), 4);
  }

  // Send to PACS writes what Export writes: every frame, the same series description, a series number of its own.
  void sendWritesTheSeriesAsExportDoes() {
    openFourFramesAndReconstructThem(true);
    if (!ready_) return;  // skipped or failed
    const QString dir = scratchDir("series-send");
    QVERIFY2(w_->exportDicomSeries(dir + "/a"), qPrintable(w_->lastError()));
    PacsDialog* dlg = w_->sendToPacs();
    QVERIFY2(dlg, "the PACS dialog did not open");
    QCOMPARE(dlg->files().size(), 4);
    const QString sent = QFileInfo(dlg->files().front()).absolutePath();
    const QJsonObject r = readBack({dir + "/a", sent});
    if (r.isEmpty()) QFAIL("/usr/bin/python3 with pydicom could not read the exports (installer/install-deps.sh)");
    const QJsonObject a0 = r[dir + "/a"].toArray()[0].toObject(), s0 = r[sent].toArray()[0].toObject();
    QCOMPARE(s0["series_description"].toString(), a0["series_description"].toString());
    QCOMPARE(s0["study_uid"].toString(), a0["study_uid"].toString());
    QVERIFY(s0["series_number"].toInt() != a0["series_number"].toInt());
    dlg->close();
  }

  // This frame only: one instance named by its frame; all frames asked for while some have no run: refused, named.
  void currentFrameOnlyAndMissingFrames() {
    openFourFramesAndReconstructThem(false);
    if (!ready_) return;  // skipped or failed
    const QString dir = scratchDir("series-one");
    DicomExportOptions all;
    all.frames = DicomExportOptions::Frames::All;
    QVERIFY(!w_->exportDicomSeries(dir + "/all", all));
    QVERIFY2(w_->lastError().contains("frames 2, 3, 4 of 4 not reconstructed"), qPrintable(w_->lastError()));
    DicomExportOptions one;
    one.frames = DicomExportOptions::Frames::Current;
    QVERIFY2(w_->exportDicomSeries(dir + "/one", one), qPrintable(w_->lastError()));
    const QJsonObject r = readBack({dir + "/one"});
    if (r.isEmpty()) QFAIL("/usr/bin/python3 with pydicom could not read the export (installer/install-deps.sh)");
    const QJsonArray files = r[dir + "/one"].toArray();
    QCOMPARE(files.size(), 1);
    QCOMPARE(files[0].toObject()["series_description"].toString(), QStringLiteral("FFT frame 1/4"));
  }
};

int main(int argc, char** argv) { return guiTestMain<SeriesExportTest>("larmor-gui-export-tests", argc, argv); }

#include "test_series_export.moc"
