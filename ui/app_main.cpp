#include "app_main.hpp"

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QTimer>
#include <iostream>

#include "about_dialog.hpp"
#include "compare_view.hpp"
#include "demo.hpp"
#include "larmor/recon/settings_table.hpp"
#include "exporter.hpp"
#include "larmor/backend/registry.hpp"
#include "larmor/io/dataset_io.hpp"
#include "larmor/io/output_safety.hpp"
#include "larmor/io/series.hpp"
#include "larmor/io/png.hpp"
#include "larmor/quality/metrics.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/util/error.hpp"
#include "larmor/util/provenance.hpp"
#include "main_window.hpp"
#include "theme.hpp"

namespace larmor::ui {

namespace {

// Every file the headless run reads: the data, the trajectory, the reference, a coil-maps file.
std::vector<std::string> headlessInputs(const GuiOptions& o) {
  const auto& it = o.session.settings.iterative;
  std::vector<std::string> inputs = {o.file.toStdString(), o.session.trajectoryPath, it.referencePath};
  if (it.coilMaps == recon::CoilMapSource::File) inputs.push_back(it.coilMapsPath);
  return inputs;
}

// The headless run's outputs (the picture, and the DICOM series when the build writes DICOM), all checked
// before the work (output_safety.hpp), so that a refusal leaves nothing half written; a folder made for
// them is removed again when the check refuses.
void checkHeadlessOutputs(const QString& outDir, const QString& png, const QString& dicomDir,
                          const std::vector<std::string>& inputs) {
  const bool made = !QDir(outDir).exists();
  require(QDir().mkpath(outDir), outDir.toStdString() + ": cannot create the output directory");
  std::vector<io::PlannedOutput> outputs(1);
  outputs[0].path = png.toStdString();
  if (dicomExportAvailable()) {
    outputs.emplace_back();
    outputs[1].path = (dicomDir.endsWith('/') ? dicomDir : dicomDir + '/').toStdString();
  }
  try {
    io::checkOutputs(outputs, inputs);
  } catch (const Error&) {
    if (made) QDir().rmdir(outDir);
    throw;
  }
}

}  // namespace

bool noDisplay() {
  return qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
         qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
}

int runHeadless(const GuiOptions& o, const QString& outDir) {
  std::cout << "larmor: no display (DISPLAY, WAYLAND_DISPLAY and QT_QPA_PLATFORM unset): running the "
               "reconstruction headless into "
            << outDir.toStdString() << "/" << std::endl;
  try {
    const auto& settings = o.session.settings;
    const QString name = o.file.isEmpty() ? QStringLiteral("phantom") : QFileInfo(o.file).completeBaseName();
    const QString base = QDir(outDir).filePath(name + '-' + QString::fromStdString(recon::toString(settings.method)));
    const QString dicomDir = o.exportDicom.isEmpty() ? base + "-dicom" : o.exportDicom;
    checkHeadlessOutputs(outDir, base + ".png", dicomDir, headlessInputs(o));
    Dataset d;
    if (o.file.isEmpty()) {
      d = phantom::simulate(bundledPhantom(settings.method));
    } else {
      io::LoadOptions lo;
      lo.trajectoryPath = o.session.trajectoryPath;
      if (settings.matrix[0] > 0)
        for (int i = 0; i < 3; ++i) lo.matrix[i] = settings.matrix[i];
      io::Series series = io::loadSeries(o.file.toStdString(), lo);
      if (series.frames.size() > 1)
        std::cout << "note: " << o.file.toStdString() << " holds " << series.frames.size() << " frames ("
                  << series.describeDims() << "); the headless run reconstructs the first, "
                  << series.keys.front().str() << " (larmor-cli recon reconstructs the series)\n";
      d = std::move(series.frames.front());
    }
    const Selection sel = BackendRegistry::instance().select(o.session.device);
    if (!sel.notice.empty()) std::cout << "note: " << sel.notice << "\n";
    recon::ReconRequest req;
    req.dataset = &d;
    req.settings = settings;
    req.settings.keepCoilImages = false;
    req.backend = sel.backend;
    const recon::ReconResult r = recon::run(req);

    const RArray mag = quality::magnitude(r.image);
    const index_t planes = mag.size() / (mag.shape()[0] * mag.shape()[1]);
    io::writePng((base + ".png").toStdString(),
                 r.image.shape()[2] > 1 ? io::render(mag, planes / 2) : io::renderMosaic(mag));
    std::cout << "wrote " << (base + ".png").toStdString() << " " << r.image.shape().str() << " on " << r.device
              << " (" << r.deviceName << ") in " << r.timings.totalMilliseconds() << " ms\n";
    if (r.metrics.contains("percent_error"))
      std::cout << "  vs the phantom: " << r.metrics["percent_error"].get<double>() << " % error, PSNR "
                << r.metrics["psnr_db"].get<double>() << " dB, SSIM " << r.metrics["ssim"].get<double>() << "\n";
    if (dicomExportAvailable()) {
      const QStringList files = exportDicom(dicomDir, r, d, DicomExportOptions{});
      std::cout << "wrote " << dicomDir.toStdString() << "/ (DICOM series, " << files.size() << " files)\n";
    } else {
      std::cout << "no DICOM series: this build has no DICOM writer\n";
    }
    return 0;
  } catch (const Cancelled&) {
    std::cerr << "larmor: cancelled\n";
    return 130;
  } catch (const std::exception& e) {
    std::cerr << "larmor: " << e.what() << "\n";
    return 1;
  }
}

ScriptedRun::ScriptedRun(MainWindow* window, GuiOptions options, QObject* parent)
    : QObject(parent), window_(window), options_(std::move(options)) {
  connect(window_, &MainWindow::datasetLoaded, this, &ScriptedRun::afterLoad);
  connect(window_, &MainWindow::loadFailed, this, [this](const QString& m) {
    std::cerr << "larmor: " << m.toStdString() << "\n";
    finish(1);
  });
  connect(window_, &MainWindow::reconFinished, this, [this] {
    // The run's own label (its method and settings, not a fixed name).
    if (const model::RunRecord* r = window_->model().shownRun())
      std::cout << "larmor: " << r->label << " on " << r->result->device << " in "
                << model::formatDuration(r->result->timings.totalMilliseconds()) << "\n";
    finish(0);
  });
  connect(window_, &MainWindow::reconFailed, this, [this](const QString& m) {
    std::cerr << "larmor: " << m.toStdString() << "\n";
    finish(1);
  });
}

void ScriptedRun::start() {
  if (options_.file.isEmpty()) window_->newPhantom(bundledPhantom(window_->session().settings.method));
  else window_->openFile(options_.file, !options_.session.trajectoryPath.empty());  // --traj came with FILE
}

bool bareStart(const GuiOptions& o) {
  return o.file.isEmpty() && !o.quit && !o.run && !o.settingsGiven && o.screenshot.isEmpty() && o.exportDicom.isEmpty() &&
         !o.demo;
}

void ScriptedRun::afterLoad() {
  if (finished_) return;
  if (window_->ranOnOpen()) return;  // the file's method runs already; its reconFinished ends the script
  if (options_.run) window_->runReconstruction();
  else if (!options_.screenshot.isEmpty() || options_.quit) finish(0);
}

void ScriptedRun::finish(int code) {
  if (finished_) return;
  finished_ = true;
  exitCode_ = code;
  if (!options_.tab.isEmpty()) window_->showTab(options_.tab);
  // The compare maps are computed off the GUI thread; a screenshot of that tab waits for them.
  QElapsedTimer waited;
  waited.start();
  auto* poll = new QTimer(this);
  poll->setInterval(50);
  connect(poll, &QTimer::timeout, this, [this, poll, code, waited] {
    const bool compareBusy = options_.tab == "compare" && window_->model().shownResult() && !window_->compareView()->ready();
    if (compareBusy && waited.elapsed() < 20000) return;
    poll->stop();
    poll->deleteLater();
    // One more turn of the event loop so layouts and repaints settle before the grab.
    QTimer::singleShot(250, this, [this, code] { capture(code); });
  });
  poll->start();
}

void ScriptedRun::capture(int code) {
  if (!options_.screenshot.isEmpty()) {
    if (window_->saveScreenshot(options_.screenshot)) std::cout << "larmor: screenshot " << options_.screenshot.toStdString() << "\n";
    else code = code ? code : 1;
  }
  if (!options_.exportDicom.isEmpty()) {
    if (window_->exportDicomSeries(options_.exportDicom))
      std::cout << "larmor: DICOM series " << options_.exportDicom.toStdString() << "/\n";
    else {
      std::cerr << "larmor: " << window_->lastError().toStdString() << "\n";
      code = code ? code : 1;
    }
  }
  exitCode_ = code;
  emit done(code);
  if (options_.quit) QCoreApplication::exit(code);
}

int larmorMain(int argc, char** argv) {
  QStringList args;
  for (int i = 0; i < argc; ++i) args << QString::fromLocal8Bit(argv[i]);
  GuiOptions options;
  try {
    options = parseGuiArguments(args);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n" << "Try 'larmor --help'.\n";
    return 2;
  }
  if (options.help) {
    std::cout << usageText().toStdString();
    return 0;
  }
  if (options.version) {
    std::cout << versionLine().toStdString() << "\n";
    return 0;
  }
  if (noDisplay()) return runHeadless(options);

  QApplication app(argc, argv);
  QCoreApplication::setOrganizationName("Larmor");
  QCoreApplication::setApplicationName("larmor");
  QCoreApplication::setApplicationVersion(QString::fromStdString(versionString()));
  QApplication::setWindowIcon(QIcon(":/icons/larmor.svg"));
  applyTheme(app);
  // An interactive start continues the last session; a scripted one (--quit) starts from the
  // defaults, as larmor-cli does, so its result does not depend on what someone clicked yesterday.
  if (!options.quit && !options.settingsGiven) options.session = lastSession();

  // A bare `larmor` opens on something worth looking at: an undersampled acquisition reconstructed
  // (GRAPPA R2 of the Cartesian phantom) rather than an empty view or the FFT of fully sampled data.
  const bool bare = bareStart(options);
  if (bare) {
    if (options.session.settings.method == recon::Method::Fft) {
      options.session.settings.method = recon::Method::Grappa;
      recon::settings::applyMethodDefaults(options.session.settings);
    }
    options.run = true;
  }

  MainWindow window;
  window.setMethodGiven(options.settingsGiven);
  if (options.quit || options.settingsGiven) {
    window.applySession(options.session);
    window.setInteractive(false);
  }
  if (!options.quit) window.restoreSavedLayout();
  if (bare) window.applySession(options.session);
  window.show();
  if (options.demo) {
    DemoScript demo(&window, options.quitAfterDemo);
    if (!options.screenshot.isEmpty()) demo.setScreenshotPrefix(QFileInfo(options.screenshot).dir().filePath(QFileInfo(options.screenshot).completeBaseName()));
    QObject::connect(&window, &MainWindow::demoRequested, &demo, [&demo, &options] {
      if (!demo.running()) demo.start(options.demoPauseMs);
    });
    QTimer::singleShot(0, &demo, [&demo, &options] { demo.start(options.demoPauseMs); });
    return app.exec();
  }
  DemoScript demo(&window, false);
  QObject::connect(&window, &MainWindow::demoRequested, &demo, [&demo, &options] {
    if (!demo.running()) demo.start(options.demoPauseMs);
  });
  ScriptedRun script(&window, options);
  QTimer::singleShot(0, &script, &ScriptedRun::start);
  return app.exec();
}

}  // namespace larmor::ui
