// MainWindow: the method for new data. When a file opens, the method its sampling calls for
// (model/method_choice.hpp: FFT fully sampled, GRAPPA regular with calibration lines, CS irregular, gridding or
// CS non-Cartesian) replaces the session's and runs (Reconstruct ▸ Run the fitting method on open, kept in
// QSettings); a method that cannot apply to new data never carries over. A blue banner says why, and warns of
// aliasing or of a radial scan read as Cartesian (then it offers to reopen the file as radial).
#include <QAction>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QToolButton>

#include "larmor/recon/settings_table.hpp"
#include "main_window.hpp"
#include "method_choice.hpp"
#include "method_fit.hpp"
#include "settings_panel.hpp"

namespace larmor::ui {

namespace {

constexpr const char* kRunOnOpenKey = "gui/runOnOpen";

}  // namespace

void MainWindow::makeMethodBanner() {
  methodBanner_ = new QWidget;
  methodBanner_->setObjectName("methodBanner");
  methodBanner_->setStyleSheet(QStringLiteral("#methodBanner { background: #1f3b57; border-bottom: 1px solid #3d85c6; }"
                                              "#methodText { color: #dcecff; }"));
  auto* bl = new QHBoxLayout(methodBanner_);
  bl->setContentsMargins(10, 3, 4, 3);
  methodText_ = new QLabel;
  methodText_->setObjectName("methodText");
  methodText_->setWordWrap(true);
  methodText_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  bl->addWidget(methodText_, 1);
  radialOffer_ = new QWidget;
  auto* rl = new QHBoxLayout(radialOffer_);
  rl->setContentsMargins(0, 0, 0, 0);
  for (const QString& t : {QStringLiteral("radial:180"), QStringLiteral("radial:360")}) {
    auto* b = new QPushButton(tr("Reopen as %1").arg(t));
    b->setObjectName(t == QStringLiteral("radial:180") ? "reopenRadial180" : "reopenRadial360");
    b->setToolTip(tr("Read the file again with uniform spokes over %1° (larmor-cli --traj %2)").arg(t.mid(7), t));
    connect(b, &QPushButton::clicked, this, [this, t] { reopenAsRadial(t); });
    rl->addWidget(b);
  }
  bl->addWidget(radialOffer_);
  auto* close = new QToolButton;
  close->setText(QStringLiteral("✕"));
  close->setAutoRaise(true);
  connect(close, &QToolButton::clicked, methodBanner_, &QWidget::hide);
  bl->addWidget(close);
  methodBanner_->hide();
  runOnOpen_ = QSettings().value(kRunOnOpenKey, true).toBool();
  runOnOpenAction_ = new QAction(tr("Run the fitting method on &open"), this);
  runOnOpenAction_->setObjectName("runOnOpen");
  runOnOpenAction_->setCheckable(true);
  runOnOpenAction_->setChecked(runOnOpen_);
  runOnOpenAction_->setToolTip(tr("When a file opens, choose the method its sampling calls for and reconstruct at once"));
  connect(runOnOpenAction_, &QAction::toggled, this, [this](bool on) { setRunOnOpen(on); });
}

void MainWindow::setRunOnOpen(bool on) {
  runOnOpen_ = on;
  QSettings().setValue(kRunOnOpenKey, on);
  if (runOnOpenAction_ && runOnOpenAction_->isChecked() != on) runOnOpenAction_->setChecked(on);
}

QString MainWindow::methodNotice() const {
  return methodBanner_ && !methodBanner_->isHidden() ? methodText_->text() : QString();
}

void MainWindow::showMethodNotice(const QString& text, bool offerRadial) {
  methodText_->setText(text);
  radialOffer_->setVisible(offerRadial && model_.source().isFile());
  methodBanner_->setVisible(!text.isEmpty());
  if (!text.isEmpty()) log(tr("method: %1").arg(text));
}

void MainWindow::adoptMethodFor(const Dataset& d) {
  const bool choose = chooseForLoad_;
  chooseForLoad_ = false;
  const model::MethodChoice c = model::chooseMethod(d);
  const model::SamplingFacts facts = model::describeSampling(d);
  SessionState s = settings_->state();
  const std::string problem = model::methodProblem(s.settings.method, d);
  QString text;
  if (choose || !problem.empty()) {
    if (!choose)  // the previous data's method cannot apply: say so rather than fail at Run
      text = tr("%1 does not apply to these data. ").arg(QString::fromStdString(model::methodLabel(s.settings.method)));
    text += QString::fromStdString(c.reason);
    if (s.settings.method != c.method) {
      s.settings.method = c.method;
      recon::settings::applyMethodDefaults(s.settings);
      applySession(s);
    }
  }
  const std::string warning = s.settings.method == c.method ? c.warning : model::aliasingWarning(s.settings.method, facts);
  if (!warning.empty()) text += (text.isEmpty() ? QString() : QStringLiteral(" ")) + QString::fromStdString(warning);
  showMethodNotice(text, facts.looksRadial);
  runAfterLoad_ = choose && runOnOpen_;
}

void MainWindow::reopenAsRadial(const QString& trajectory) {
  if (!model_.source().isFile()) return;
  SessionState s = settings_->state();
  s.trajectoryPath = trajectory.toStdString();
  applySession(s);
  openFile(QString::fromStdString(model_.source().path), true);
}

}  // namespace larmor::ui
