// GUI tests of Send to PACS (ui/pacs_dialog.hpp) against a real PACS: Debian's Orthanc, started for this test
// run on localhost by tests/e2e/orthanc/start-orthanc.sh and checked only through its REST API (curl).
//  - pacsSendFromMenu: File ▸ Export ▸ Send to PACS… on a 3-slice reconstruction opens the dialog on the
//    exported series; a node is added, Verify (C-ECHO) succeeds, Send stores all 3 instances (a result row
//    each, the bar full) and Orthanc holds each one byte-identical (data set after the meta header, raw frame)
//    with the same geometry tags; the node is kept in the settings;
//  - pacsErrorsDoNotFreeze: a wrong AE title fails Verify with the reason; a server that never answers makes
//    Send fail after the node's 1 s timeout while the event loop keeps running (no gap over 600 ms);
//  - pacsCancel: Cancel right after Send stops before the first file: nothing claimed as sent.
// Skips (QSKIP) only when Orthanc is not installed or cannot start here.
#include <QApplication>
#include <QDialog>
#include <QLineEdit>
#include <QSlider>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMenuBar>
#include <QProcess>
#include <QProgressBar>
#include <QSettings>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTimer>
#include <QtTest/QtTest>
#include <arpa/inet.h>
#include <csignal>
#include <set>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "frame_bar.hpp"
#include "gui_test_support.hpp"
#include "larmor/io/dicom.hpp"
#include "larmor/io/export.hpp"
#include "larmor/recon/recon.hpp"
#include "main_window.hpp"
#include "pacs_dialog.hpp"
#include "support/silent_server.hpp"
#include "theme.hpp"

using namespace larmor;
using namespace larmor::ui;
using namespace larmor::ui::test;

namespace {

QByteArray curl(const QStringList& args) {
  QProcess p;
  p.start("curl", QStringList{"-sf", "--max-time", "30"} + args);
  if (!p.waitForFinished(40000) || p.exitCode() != 0) return {};
  return p.readAllStandardOutput();
}

/// The bytes after a Part 10 file's meta information (preamble, DICM, group 0002 with its group length).
QByteArray datasetBytes(const QByteArray& f) {
  if (f.size() < 144 || f.mid(128, 4) != "DICM") return {};
  quint32 len = 0;
  for (int i = 3; i >= 0; --i) len = (len << 8) | static_cast<unsigned char>(f[140 + i]);
  return f.mid(144 + static_cast<int>(len));
}

using larmor::test::SilentServer;  // support/silent_server.hpp

/// A 3-slice magnitude series written by the engine (phantom, FFT) into `dir`/series.
QStringList writeSeries(const QString& dir) {
  const Dataset d = phantom::simulate([] {
    auto s = smallPhantom(TrajectoryKind::Cartesian, 32, 2);
    s.slices = 3;
    return s;
  }());
  recon::ReconRequest req;
  req.dataset = &d;
  req.settings.method = recon::Method::Fft;
  req.device = "cpu";
  const recon::ReconResult r = recon::run(req);
  QStringList files;
  for (const auto& f : io::writeImageOutput((dir + "/series/").toStdString(), r, d).files)
    files << QString::fromStdString(f);
  return files;
}

}  // namespace

class PacsGuiTest : public QObject {
  Q_OBJECT

 private:
  TestOrthanc orthanc_;

  QString node(const QString& aet = "ORTHANC") const { return orthanc_.node(aet); }
  QString rest(const QString& path) const { return orthanc_.rest(path); }

  /// Orthanc holds `file` unchanged: found by its SOP Instance UID, same data set bytes, same raw frame,
  /// same geometry tags.
  void checkArrived(const QString& file) {
    const io::DicomInstance ours = io::readDicomFile(file.toStdString());
    const QString uid = QString::fromStdString(ours.get(0x0008, 0x0018));
    const QJsonArray found = QJsonDocument::fromJson(curl({"-X", "POST", "--data", uid, rest("/tools/lookup")})).array();
    QVERIFY2(found.size() == 1, qPrintable(file + ": Orthanc does not hold SOP instance " + uid));
    const QString id = found[0].toObject()["ID"].toString();
    QFile f(file);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray mine = f.readAll();
    QVERIFY2(datasetBytes(curl({rest("/instances/" + id + "/file")})) == datasetBytes(mine),
             qPrintable(file + ": the data set Orthanc stored differs from ours"));
    const QByteArray frame = curl({rest("/instances/" + id + "/frames/0/raw")});
    QCOMPARE(frame.size(), static_cast<qsizetype>(ours.pixels.size() * 2));
    QVERIFY2(std::memcmp(frame.constData(), ours.pixels.data(), static_cast<std::size_t>(frame.size())) == 0,
             qPrintable(file + ": Orthanc's raw frame differs from our pixels"));
    const QJsonObject tags = QJsonDocument::fromJson(curl({rest("/instances/" + id + "/tags?simplify")})).object();
    const struct {
      const char* name;
      std::uint16_t g, e;
    } geometry[] = {{"ImagePositionPatient", 0x0020, 0x0032}, {"ImageOrientationPatient", 0x0020, 0x0037},
                    {"PixelSpacing", 0x0028, 0x0030}, {"SliceThickness", 0x0018, 0x0050}};
    for (const auto& t : geometry)
      QCOMPARE(tags[t.name].toString(), QString::fromStdString(ours.get(t.g, t.e)));
  }

  template <class D>
  static bool waitSignal(D* dlg, bool& done, int ms) {
    return waitUntil([&] { return done; }, ms) && !dlg->busy();
  }

 private slots:
  void initTestCase() {
    orthanc_.start(QStringLiteral(LARMOR_TEST_ORTHANC_SCRIPT), scratchDir("pacs-orthanc"));
    if (QTest::currentTestFailed()) return;
    QSettings().remove("pacs/nodes");
  }

  void cleanupTestCase() { orthanc_.stop(); }

  // A file of four repetitions, each frame reconstructed, sent with the patient fields under our own calling AE
  // title: Orthanc holds one series of four instances with the tags set, received from that AE title.
  void pacsFourFramesArriveAsOneSeries() {
    if (!orthanc_.skip.isEmpty()) QSKIP(qPrintable(orthanc_.skip));
    const QString dir = scratchDir("pacs-frames");
    QProcess gen;
    gen.setWorkingDirectory(dir);
    gen.start("ismrmrd_generate_cartesian_shepp_logan", {"-m", "32", "-c", "2", "-r", "4", "-n", "0", "-o", "rep4.h5"});
    if (!gen.waitForStarted(10000)) QSKIP("ismrmrd_generate_cartesian_shepp_logan is not installed");
    QVERIFY(gen.waitForFinished(60000) && gen.exitCode() == 0);
    MainWindow w;
    w.setRunOnOpen(false);
    w.resize(1200, 800);
    w.show();
    int loaded = 0, finished = 0;
    connect(&w, &MainWindow::datasetLoaded, this, [&] { ++loaded; });
    connect(&w, &MainWindow::reconFinished, this, [&] { ++finished; });
    w.openFile(dir + "/rep4.h5");
    QVERIFY(waitUntil([&] { return loaded > 0; }, 60000));
    QCOMPARE(w.model().frameCount(), std::size_t(4));
    SessionState session = w.session();
    session.settings.method = recon::Method::Fft;
    session.device = "cpu";
    w.applySession(session);
    for (int f = 0; f < 4; ++f) {  // each frame reconstructed once, as stepping through them does
      if (f > 0) w.findChild<FrameBar*>()->findChild<QSlider*>("frameSlider")->setValue(f);
      else w.runReconstruction();
      QVERIFY2(waitUntil([&] { return finished > f; }, 60000), "a frame was not reconstructed");
    }
    DicomExportOptions o;
    o.patientName = "DOE^JOHN", o.patientId = "PACS-4", o.accessionNumber = "ACC-PACS";
    PacsDialog* dlg = w.sendToPacs(o);
    QVERIFY2(dlg, "Send to PACS did not open the dialog");
    QCOMPARE(dlg->files().size(), 4);
    auto* calling = dlg->findChild<QLineEdit*>("callingAeTitle");
    QVERIFY2(calling, "the PACS dialog has no calling AE title field");
    calling->setText("LARMOR_WS2");
    QVERIFY2(dlg->addNode("frames Orthanc", node(), 10, calling->text()), qPrintable(dlg->statusText()));
    bool sent = false, all = false;
    connect(dlg, &PacsDialog::sendFinished, this, [&](bool a, const QString&) { sent = true, all = a; });
    dlg->send();
    QVERIFY(waitSignal(dlg, sent, 30000));
    QVERIFY2(all, qPrintable(dlg->statusText()));
    const io::DicomInstance first = io::readDicomFile(dlg->files().front().toStdString());
    const QString seriesUid = QString::fromStdString(first.get(0x0020, 0x000e));
    const QJsonArray found = QJsonDocument::fromJson(curl({"-X", "POST", "--data", seriesUid, rest("/tools/lookup")})).array();
    QVERIFY2(found.size() == 1, "Orthanc does not hold the series");
    const QJsonObject series = QJsonDocument::fromJson(curl({rest("/series/" + found[0].toObject()["ID"].toString())})).object();
    const QJsonArray instances = series["Instances"].toArray();
    QCOMPARE(instances.size(), 4);
    std::set<int> numbers, positions;
    for (const auto& i : instances) {
      const QString id = i.toString();
      const QJsonObject tags = QJsonDocument::fromJson(curl({rest("/instances/" + id + "/tags?simplify")})).object();
      QCOMPARE(tags["PatientName"].toString(), QStringLiteral("DOE^JOHN"));
      QCOMPARE(tags["PatientID"].toString(), QStringLiteral("PACS-4"));
      QCOMPARE(tags["AccessionNumber"].toString(), QStringLiteral("ACC-PACS"));
      QCOMPARE(tags["NumberOfTemporalPositions"].toString(), QStringLiteral("4"));
      numbers.insert(tags["InstanceNumber"].toString().toInt());
      positions.insert(tags["TemporalPositionIdentifier"].toString().toInt());
      QCOMPARE(QString::fromUtf8(curl({rest("/instances/" + id + "/metadata/RemoteAET")})), QStringLiteral("LARMOR_WS2"));
    }
    QCOMPARE(numbers, (std::set<int>{1, 2, 3, 4}));
    QCOMPARE(positions, (std::set<int>{1, 2, 3, 4}));
    dlg->close();
  }

  void pacsSendFromMenu() {
    if (!orthanc_.skip.isEmpty()) QSKIP(qPrintable(orthanc_.skip));
    MainWindow w;
    w.resize(1200, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    int loaded = 0, finished = 0, failed = 0;
    connect(&w, &MainWindow::datasetLoaded, this, [&] { ++loaded; });
    connect(&w, &MainWindow::reconFinished, this, [&] { ++finished; });
    connect(&w, &MainWindow::reconFailed, this, [&] { ++failed; });
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

    QAction* action = w.menuBar()->findChild<QAction*>("sendToPacs");
    QVERIFY2(action, "File > Export has no Send to PACS action");
    // The series' options first (patient, study, frames): accepted as proposed.
    QTimer::singleShot(0, this, [] {
      if (auto* options = qobject_cast<QDialog*>(QApplication::activeModalWidget())) options->accept();
    });
    action->trigger();
    auto* dlg = w.findChild<PacsDialog*>();
    QVERIFY2(dlg, "Send to PACS did not open the dialog");
    QCOMPARE(dlg->files().size(), 3);

    QVERIFY2(dlg->addNode("test Orthanc", node(), 10), qPrintable(dlg->statusText()));
    QCOMPARE(QSettings().value("pacs/nodes").toStringList(),
             QStringList{"test Orthanc|" + node() + "|10|LARMOR"});  // kept in the settings
    bool verified = false, ok = false;
    connect(dlg, &PacsDialog::verifyFinished, this, [&](bool good, const QString&) { verified = true, ok = good; });
    dlg->verify();
    QVERIFY(waitSignal(dlg, verified, 20000));
    QVERIFY2(ok, qPrintable(dlg->statusText()));
    QVERIFY(dlg->statusText().contains("answered C-ECHO"));

    bool sent = false, all = false;
    connect(dlg, &PacsDialog::sendFinished, this, [&](bool a, const QString&) { sent = true, all = a; });
    dlg->send();
    QVERIFY(waitSignal(dlg, sent, 30000));
    QVERIFY2(all, qPrintable(dlg->statusText()));
    QCOMPARE(dlg->statusText(), QString("sent 3/3 instances to %1").arg(node()));
    QCOMPARE(dlg->progressBar()->value(), dlg->progressBar()->maximum());
    QCOMPARE(dlg->resultTable()->rowCount(), 3);
    for (int i = 0; i < 3; ++i) QVERIFY(dlg->resultTable()->item(i, 1)->text().contains("stored"));
    for (const QString& f : dlg->files()) checkArrived(f);
    dlg->close();
  }

  void pacsErrorsDoNotFreeze() {
    if (!orthanc_.skip.isEmpty()) QSKIP(qPrintable(orthanc_.skip));
    const QStringList files = writeSeries(scratchDir("pacs-errors"));
    QCOMPARE(files.size(), 3);
    PacsDialog dlg(files, "three slices");
    dlg.show();
    QVERIFY(dlg.addNode("wrong", node("WRONG"), 5));
    bool verified = false, ok = true;
    connect(&dlg, &PacsDialog::verifyFinished, this, [&](bool good, const QString&) { verified = true, ok = good; });
    dlg.verify();
    QVERIFY(waitSignal(&dlg, verified, 20000));
    QVERIFY(!ok);
    QVERIFY2(dlg.statusText().contains("rejected the association"), qPrintable(dlg.statusText()));

    SilentServer silent;
    QVERIFY(dlg.addNode("silent", QString("ORTHANC@127.0.0.1:%1").arg(silent.port), 1));
    bool sent = false, all = true;
    connect(&dlg, &PacsDialog::sendFinished, this, [&](bool a, const QString&) { sent = true, all = a; });
    // The event loop must keep running while the send waits: the largest gap between timer ticks.
    QElapsedTimer clock, since;
    clock.start();
    since.start();
    qint64 worst = 0;
    QTimer tick;
    connect(&tick, &QTimer::timeout, this, [&] { worst = std::max(worst, since.restart()); });
    tick.start(10);
    dlg.send();
    QVERIFY(dlg.busy());  // send() returned at once, the work runs elsewhere
    QVERIFY(waitSignal(&dlg, sent, 15000));
    tick.stop();
    QVERIFY(!all);
    QVERIFY2(dlg.statusText().contains("did not answer C-STORE within 1 s"), qPrintable(dlg.statusText()));
    QVERIFY2(clock.elapsed() < 5000, qPrintable(QString("the failed send took %1 ms").arg(clock.elapsed())));
    QVERIFY2(worst < 600, qPrintable(QString("the event loop stalled for %1 ms").arg(worst)));
  }

  void pacsCancel() {
    if (!orthanc_.skip.isEmpty()) QSKIP(qPrintable(orthanc_.skip));
    const QStringList files = writeSeries(scratchDir("pacs-cancel"));
    PacsDialog dlg(files, "three slices");
    QVERIFY(dlg.addNode("test", node(), 10));
    bool sent = false;
    connect(&dlg, &PacsDialog::sendFinished, this, [&](bool, const QString&) { sent = true; });
    dlg.send();
    dlg.cancel();  // before the association is up: stops before the first file
    QVERIFY(waitSignal(&dlg, sent, 20000));
    const io::SendReport* r = dlg.lastReport();
    QVERIFY(r);
    QVERIFY(r->cancelled);
    QVERIFY2(dlg.statusText().endsWith(", cancelled"), qPrintable(dlg.statusText()));
    for (const auto& x : r->results)
      if (!x.ok) QVERIFY2(x.message == "not sent (cancelled)", x.message.c_str());
    QVERIFY(r->sent() < r->results.size());
  }
};

int main(int argc, char** argv) { return guiTestMain<PacsGuiTest>("larmor-gui-pacs-tests", argc, argv); }

#include "test_gui_pacs.moc"
