// GUI tests of Query PACS (ui/query_dialog.hpp) against a real PACS: Debian's Orthanc, started for this test run
// on localhost by tests/e2e/orthanc/start-orthanc.sh (it lets the calling AE title LARMOR query and retrieve).
//  - queryRetrieveCompareFromMenu: a 3-slice reconstruction is sent with Send to PACS under patient QR-GUI;
//    File ▸ Query PACS… finds that one series with 3 images, "Retrieve and compare" fetches it (the same pixel
//    data as sent, by SOP Instance UID) and makes it the Compare tab's reference B, where the reconstruction
//    against it gives < 1 % error (the export's 16-bit quantisation);
//  - queryErrorsDoNotFreeze: a typed node that is not AET@host:port is refused at once; a server that never
//    answers makes Search fail after the 1 s timeout while the event loop keeps running (no gap over 600 ms);
//  - queryCancel: Cancel right after Retrieve: "Cancelled", no folder, no reference opened;
//  - retrievedSeriesPairedByGeometry: a series numbered against its positions is paired with the reconstruction by
//    geometry (io::matchDicomSeries, as larmor-cli compare does): < 1 % error; without positions, by order, said.
// Skips (QSKIP) only when Orthanc is not installed or cannot start here.
#include <QAction>
#include <QApplication>
#include <QDialog>
#include <QDir>
#include <QElapsedTimer>
#include <QMenuBar>
#include <QProcess>
#include <QSettings>
#include <QStatusBar>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTimer>
#include <QtTest/QtTest>
#include <csignal>
#include <map>

#include "gui_test_support.hpp"
#include "larmor/io/dicom.hpp"
#include "larmor/io/dicom_send.hpp"
#include "larmor/io/export.hpp"
#include "larmor/recon/recon.hpp"
#include "main_window.hpp"
#include "pacs_dialog.hpp"
#include "query_dialog.hpp"
#include "support/silent_server.hpp"
#include "theme.hpp"

using namespace larmor;
using namespace larmor::ui;
using namespace larmor::ui::test;

namespace {

/// SOP Instance UID -> stored pixel words of every .dcm file in `files`.
std::map<std::string, std::vector<std::uint16_t>> pixelsByUid(const QStringList& files) {
  std::map<std::string, std::vector<std::uint16_t>> m;
  for (const QString& f : files) {
    const io::DicomInstance d = io::readDicomFile(f.toStdString());
    m[d.get(0x0008, 0x0018)] = d.pixels;
  }
  return m;
}

QStringList dcmFiles(const QString& dir) {
  QStringList out;
  for (const QString& f : QDir(dir).entryList({"*.dcm"}, QDir::Files, QDir::Name)) out << QDir(dir).filePath(f);
  return out;
}

}  // namespace

class QueryGuiTest : public QObject {
  Q_OBJECT

 private:
  TestOrthanc orthanc_;

  QString node(const QString& aet = "ORTHANC") const { return orthanc_.node(aet); }

  /// tests/gui/reorder_dicom.py `mode` on the series in `dir` (pydicom); false when it failed.
  static bool reorder(const QString& dir, const QString& mode) {
    QProcess py;
    py.start("/usr/bin/python3", {QStringLiteral(LARMOR_GUI_TEST_SOURCE_DIR "/reorder_dicom.py"), dir, mode});
    if (!py.waitForFinished(60000) || py.exitCode() != 0) {
      qWarning("reorder_dicom.py %s: %s", qPrintable(mode), py.readAllStandardError().constData());
      return false;
    }
    return true;
  }

  static bool waitDone(QueryDialog* dlg, bool& done, int ms) { return waitUntil([&] { return done; }, ms) && !dlg->busy(); }

  /// Shows the window (1200 x 800) and reconstructs a small phantom in it (reconstruct).
  static void showAndReconstruct(MainWindow& w) {
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    reconstruct(w);
  }

  /// A 3-slice FFT reconstruction of a phantom in `w`.
  static void reconstruct(MainWindow& w) {
    int loaded = 0, finished = 0, failed = 0;
    QObject::connect(&w, &MainWindow::datasetLoaded, &w, [&] { ++loaded; });
    QObject::connect(&w, &MainWindow::reconFinished, &w, [&] { ++finished; });
    QObject::connect(&w, &MainWindow::reconFailed, &w, [&] { ++failed; });
    auto s = smallPhantom(TrajectoryKind::Cartesian, 32, 2);
    s.slices = 3;
    w.newPhantom(s);
    QVERIFY(waitUntil([&] { return loaded > 0; }, 60000));
    SessionState session = w.session();
    session.settings.method = recon::Method::Fft;
    session.device = "cpu";
    w.applySession(session);
    w.runReconstruction();
    QVERIFY(waitUntil([&] { return finished > 0 || failed > 0; }, 60000));
    QCOMPARE(finished, 1);
  }

 private slots:
  void initTestCase() {
    orthanc_.start(QStringLiteral(LARMOR_TEST_ORTHANC_SCRIPT), scratchDir("query-orthanc"));
    if (QTest::currentTestFailed()) return;
    QSettings().remove("pacs/nodes");
  }

  void cleanupTestCase() { orthanc_.stop(); }

  void queryRetrieveCompareFromMenu() {
    if (!orthanc_.skip.isEmpty()) QSKIP(qPrintable(orthanc_.skip));
    MainWindow w;
    showAndReconstruct(w);
    if (QTest::currentTestFailed()) return;
    DicomExportOptions o;
    o.patientName = "DOE^QUERY", o.patientId = "QR-GUI";
    PacsDialog* send = w.sendToPacs(o);
    QVERIFY2(send, "Send to PACS did not open the dialog");
    QVERIFY2(send->addNode("test Orthanc", node(), 10), qPrintable(send->statusText()));
    bool sent = false, all = false;
    connect(send, &PacsDialog::sendFinished, this, [&](bool a, const QString&) { sent = true, all = a; });
    send->send();
    QVERIFY(waitUntil([&] { return sent; }, 30000));
    QVERIFY2(all, qPrintable(send->statusText()));
    const auto ours = pixelsByUid(send->files());
    QCOMPARE(ours.size(), std::size_t(3));
    send->close();

    QAction* action = w.menuBar()->findChild<QAction*>("queryPacs");
    QVERIFY2(action, "File has no Query PACS action");
    action->trigger();
    auto* dlg = w.findChild<QueryDialog*>();
    QVERIFY2(dlg, "Query PACS did not open the dialog");
    dlg->setNode(node(), 10);  // the stored node is offered too; typed here to be sure which
    dlg->setPatientId("QR-GUI");
    bool searched = false, ok = false;
    connect(dlg, &QueryDialog::searchFinished, this, [&](bool good, const QString&) { searched = true, ok = good; });
    dlg->search();
    QVERIFY(waitDone(dlg, searched, 20000));
    QVERIFY2(ok, qPrintable(dlg->statusText()));
    QCOMPARE(dlg->rows().size(), std::size_t(1));
    QCOMPARE(dlg->rows()[0].instances, 3);
    QCOMPARE(dlg->rows()[0].patientName, std::string("DOE^QUERY"));
    QCOMPARE(dlg->resultTable()->rowCount(), 1);
    QCOMPARE(dlg->resultTable()->item(0, 6)->text(), QString("3"));

    bool retrieved = false;
    connect(dlg, &QueryDialog::retrieveFinished, this, [&](bool good, const QString&) { retrieved = true, ok = good; });
    dlg->retrieveSelected();
    QVERIFY(waitDone(dlg, retrieved, 30000));
    QVERIFY2(ok, qPrintable(dlg->statusText()));
    QVERIFY2(dlg->statusText().contains("opened in the Compare tab as a reference"), qPrintable(dlg->statusText()));
    QCOMPARE(pixelsByUid(dcmFiles(dlg->retrievedFolder())), ours);  // the same instances, the same pixels

    const auto& c = w.model().comparison();
    QVERIFY2(c.reference < -1, "the retrieved series is not the chosen reference");
    QVERIFY(c.chosen() && QString::fromStdString(c.chosen()->label).endsWith(".dcm"));
    QVERIFY2(waitUntil([&] { return w.model().comparison().metrics.has_value(); }, 30000), "no metrics against it");
    const double err = w.model().comparison().metrics->percentError;
    QVERIFY2(err < 1.0, qPrintable(QString("the reconstruction against its own series from the PACS: %1 % error").arg(err)));
    dlg->close();
  }

  // A series retrieved from the PACS whose InstanceNumbers do not follow its positions (slice 3 numbered 1): the
  // reference is paired with the reconstruction by geometry as `larmor-cli compare` pairs it (io::matchDicomSeries),
  // so the reconstruction against it is < 1 % error, and the status bar says how it was paired; without
  // ImagePositionPatient the pairing is by order, and the status bar says that.
  void retrievedSeriesPairedByGeometry() {
    if (!orthanc_.skip.isEmpty()) QSKIP(qPrintable(orthanc_.skip));
    MainWindow w;
    showAndReconstruct(w);
    if (QTest::currentTestFailed()) return;
    const QString dir = scratchDir("query-renumbered") + "/series";
    DicomExportOptions o;
    o.patientName = "DOE^ORDER", o.patientId = "QR-ORDER", o.frames = DicomExportOptions::Frames::Current;
    QVERIFY2(w.exportDicomSeries(dir, o), qPrintable(w.lastError()));
    QVERIFY(reorder(dir, "rotate"));
    std::vector<std::string> files;
    for (const QString& f : dcmFiles(dir)) files.push_back(f.toStdString());
    QCOMPARE(files.size(), std::size_t(3));
    const io::SendReport sent = io::send(io::parseDicomNode(node().toStdString()), files);
    QVERIFY2(sent.allSent(), sent.summary().c_str());

    QAction* action = w.menuBar()->findChild<QAction*>("queryPacs");
    QVERIFY(action);
    action->trigger();
    auto* dlg = w.findChild<QueryDialog*>();
    QVERIFY(dlg);
    dlg->setNode(node(), 10);
    dlg->setPatientId("QR-ORDER");
    bool searched = false, retrieved = false, ok = false;
    connect(dlg, &QueryDialog::searchFinished, this, [&](bool good, const QString&) { searched = true, ok = good; });
    dlg->search();
    QVERIFY(waitDone(dlg, searched, 20000));
    QVERIFY2(ok && dlg->rows().size() == 1, qPrintable(dlg->statusText()));
    connect(dlg, &QueryDialog::retrieveFinished, this, [&](bool good, const QString&) { retrieved = true, ok = good; });
    dlg->retrieveSelected();
    QVERIFY(waitDone(dlg, retrieved, 30000));
    QVERIFY2(ok, qPrintable(dlg->statusText()));
    const QString how = w.statusBar()->currentMessage();
    QVERIFY2(how.contains("matched 3 image(s) of 3 in the reference by position and frame"), qPrintable(how));
    QVERIFY2(waitUntil([&] { return w.model().comparison().metrics.has_value(); }, 30000), "no metrics against it");
    const double err = w.model().comparison().metrics->percentError;
    QVERIFY2(err < 1.0, qPrintable(QString("against its own series numbered out of order: %1 % error").arg(err)));
    dlg->close();

    // Without positions (the series sent, renumbered once more): by order, said on screen (the loading the Query
    // dialog calls).
    QVERIFY(reorder(dir, "nopositions"));
    QVERIFY2(w.loadReferenceFile(dcmFiles(dir).value(0)), qPrintable(w.lastError()));
    const QString order = w.statusBar()->currentMessage();
    QVERIFY2(order.contains("by order (no positions)"), qPrintable(order));
  }

  void queryErrorsDoNotFreeze() {
    if (!orthanc_.skip.isEmpty()) QSKIP(qPrintable(orthanc_.skip));
    int opened = 0;
    QueryDialog dlg([&](const QString&) { return ++opened > 0; });
    dlg.show();
    dlg.setNode("not a node");
    dlg.search();
    QVERIFY(!dlg.busy());
    QVERIFY2(dlg.statusText().contains("AET@host:port"), qPrintable(dlg.statusText()));

    larmor::test::SilentServer silent;
    dlg.setNode(QString("ORTHANC@127.0.0.1:%1").arg(silent.port), 1);
    bool searched = false, ok = true;
    connect(&dlg, &QueryDialog::searchFinished, this, [&](bool good, const QString&) { searched = true, ok = good; });
    QElapsedTimer clock, since;
    clock.start();
    since.start();
    qint64 worst = 0;
    QTimer tick;
    connect(&tick, &QTimer::timeout, this, [&] { worst = std::max(worst, since.restart()); });
    tick.start(10);
    dlg.search();
    QVERIFY(dlg.busy());  // search() returned at once, the work runs elsewhere
    QVERIFY(waitDone(&dlg, searched, 15000));
    tick.stop();
    QVERIFY(!ok);
    QVERIFY2(dlg.statusText().contains("did not answer C-FIND within 1 s"), qPrintable(dlg.statusText()));
    QVERIFY2(clock.elapsed() < 5000, qPrintable(QString("the failed search took %1 ms").arg(clock.elapsed())));
    QVERIFY2(worst < 600, qPrintable(QString("the event loop stalled for %1 ms").arg(worst)));
    QCOMPARE(opened, 0);
  }

  void queryCancel() {
    if (!orthanc_.skip.isEmpty()) QSKIP(qPrintable(orthanc_.skip));
    const Dataset d = phantom::simulate(smallPhantom(TrajectoryKind::Cartesian, 32, 2));
    recon::ReconRequest req;
    req.dataset = &d;
    req.settings.method = recon::Method::Fft;
    req.device = "cpu";
    const QString dir = scratchDir("query-cancel");
    io::ExportOptions eo;
    eo.patientId = "QR-CANCEL";
    std::vector<std::string> files = io::writeImageOutput((dir + "/series/").toStdString(), recon::run(req), d, eo).files;
    QVERIFY(io::send(io::parseDicomNode(node().toStdString()), files).allSent());
    int opened = 0;
    QueryDialog dlg([&](const QString&) { return ++opened > 0; });
    dlg.setNode(node(), 10);
    dlg.setPatientId("QR-CANCEL");
    bool searched = false, retrieved = false, ok = true;
    connect(&dlg, &QueryDialog::searchFinished, this, [&](bool, const QString&) { searched = true; });
    connect(&dlg, &QueryDialog::retrieveFinished, this, [&](bool good, const QString&) { retrieved = true, ok = good; });
    dlg.search();
    QVERIFY(waitDone(&dlg, searched, 20000));
    QCOMPARE(dlg.rows().size(), std::size_t(1));
    dlg.retrieveSelected();
    dlg.cancel();  // before the association is up
    QVERIFY(waitDone(&dlg, retrieved, 20000));
    QVERIFY(!ok);
    QCOMPARE(dlg.statusText(), QString("Cancelled"));
    QVERIFY(dlg.retrievedFolder().isEmpty());
    QCOMPARE(opened, 0);
  }
};

int main(int argc, char** argv) { return guiTestMain<QueryGuiTest>("larmor-gui-query-tests", argc, argv); }

#include "test_gui_query.moc"
