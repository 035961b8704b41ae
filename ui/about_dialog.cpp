#include "about_dialog.hpp"

#include <QMessageBox>
#include <QtGlobal>

#include "larmor/backend/registry.hpp"
#include "larmor/util/provenance.hpp"

namespace larmor::ui {
namespace {

QString html(const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); }

QString deviceDetails(const DeviceInfo& d) {
  if (!d.gpu) return {};  // the CPU's name already says its threads
  return QObject::tr("%1 MiB, sm_%2%3, %4 SMs")
      .arg(static_cast<qulonglong>(d.memoryBytes >> 20))
      .arg(d.computeMajor)
      .arg(d.computeMinor)
      .arg(d.multiprocessors);
}

}  // namespace

QString versionLine() { return QStringLiteral("larmor ") + QString::fromStdString(versionString()); }

QString aboutText(const QString& current) {
  auto& reg = BackendRegistry::instance();
  const auto devices = reg.devices();
  const std::string why = reg.whyNoGpu();

  QString rows;
  for (const auto& d : devices)
    rows += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td><td>%3</td><td>%4</td></tr>")
                .arg(html(d.id), html(d.name), deviceDetails(d).toHtmlEscaped(), html(d.library));
  QString text = QObject::tr("<h3>Larmor %1</h3>"
                             "<p>MRI reconstruction on the GPU and the CPU: FFT, gridding, TRON, exact DFT, "
                             "iterative (CG) and GRAPPA, with quality metrics and stage timings.</p>")
                     .arg(html(versionString()));
  if (!current.isEmpty()) text += QObject::tr("<p>This window runs on: %1</p>").arg(current.toHtmlEscaped());
  text += QObject::tr("<p><b>Compute devices found</b></p>"
                      "<table cellspacing=\"0\" cellpadding=\"3\">%1</table>")
              .arg(rows);
  if (!why.empty()) text += QObject::tr("<p>No GPU: %1. Everything runs on the CPU.</p>").arg(html(why));
  text += QObject::tr("<p><small>Qt %1 (built with %2)</small></p>").arg(QString::fromLatin1(qVersion()),
                                                                            QStringLiteral(QT_VERSION_STR));
  return text;
}

void showAboutDialog(QWidget* parent, const QString& current) {
  QMessageBox::about(parent, QObject::tr("About Larmor"), aboutText(current));
}

}  // namespace larmor::ui
