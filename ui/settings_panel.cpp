#include "settings_panel.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QListView>
#include <QDoubleSpinBox>
#include <QDoubleValidator>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSlider>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <map>

#include "tasks.hpp"

namespace st = larmor::recon::settings;

namespace larmor::ui {
namespace {

constexpr int kLambdaSteps = 800;
constexpr double kLambdaMinLog = -6, kLambdaMaxLog = 2;
constexpr double kLambdaWindowDecades = 2;  // the λ slider's span: 30 px of a 100 px slider is 0.6 decades

QLineEdit* scientificEdit(QWidget* parent) {
  auto* e = new QLineEdit(parent);
  auto* v = new QDoubleValidator(0, 1e12, 12, e);
  v->setNotation(QDoubleValidator::ScientificNotation);
  e->setValidator(v);
  return e;
}

QString sci(double v) { return QString::number(v, 'g', 4); }

QString qs(const std::string& s) { return QString::fromStdString(s); }

const std::vector<std::pair<std::string, const char*>> kGroups = {
    {"reconstruction", QT_TRANSLATE_NOOP("SettingsPanel", "Reconstruction")},
    {"nufft", QT_TRANSLATE_NOOP("SettingsPanel", "NUFFT / DFT")},
    {"iterative", QT_TRANSLATE_NOOP("SettingsPanel", "Iterative (CG, CS)")},
    {"dynamic", QT_TRANSLATE_NOOP("SettingsPanel", "Dynamic (a series' frames, CS)")},
    {"grappa", QT_TRANSLATE_NOOP("SettingsPanel", "GRAPPA")},
};

/// A spin-box bound: the table's, an open end moved inside by one step.
int intBound(double v) { return static_cast<int>(std::clamp(v, -2e9, 2e9)); }

QWidget* pathRow(QLineEdit* edit, const QString& filter, QWidget* parent, bool folder = false) {
  auto* w = new QWidget(parent);
  auto* l = new QHBoxLayout(w);
  l->setContentsMargins(0, 0, 0, 0);
  l->addWidget(edit, 1);
  auto* b = new QToolButton(w);
  b->setText(QStringLiteral("…"));
  QObject::connect(b, &QToolButton::clicked, w, [edit, filter, w, folder] {
    // An empty field starts in the data's folder, not wherever the last dialog was.
    const QString start = edit->text().isEmpty() ? edit->property("startFolder").toString() : edit->text();
    const QString f = folder ? QFileDialog::getExistingDirectory(w, QObject::tr("Choose a folder"), start)
                             : QFileDialog::getOpenFileName(w, QObject::tr("Choose a file"), start, filter);
    if (!f.isEmpty()) {
      edit->setText(f);
      emit edit->editingFinished();
    }
  });
  l->addWidget(b);
  return w;
}

}  // namespace

double SettingsPanel::lambdaFromSlider(int position) {
  if (position <= 0) return 0.0;
  const double t = static_cast<double>(position - 1) / (kLambdaSteps - 1);
  return std::pow(10.0, kLambdaMinLog + t * (kLambdaMaxLog - kLambdaMinLog));
}

int SettingsPanel::sliderFromLambda(double lambda) {
  if (!(lambda > 0)) return 0;
  const double t = (std::log10(lambda) - kLambdaMinLog) / (kLambdaMaxLog - kLambdaMinLog);
  return 1 + static_cast<int>(std::lround(std::clamp(t, 0.0, 1.0) * (kLambdaSteps - 1)));
}

std::pair<double, double> SettingsPanel::lambdaSliderDecades() const {
  return {lambdaCentreLog_ - kLambdaWindowDecades / 2, lambdaCentreLog_ + kLambdaWindowDecades / 2};
}

double SettingsPanel::lambdaAt(int position) const {
  const auto [lo, hi] = lambdaSliderDecades();
  const double t = std::clamp(static_cast<double>(position) / kLambdaSteps, 0.0, 1.0);
  return std::pow(10.0, lo + t * (hi - lo));
}

int SettingsPanel::positionOf(double lambda) const {
  if (!(lambda > 0)) return 0;
  const auto [lo, hi] = lambdaSliderDecades();
  const double t = (std::log10(lambda) - lo) / (hi - lo);
  return static_cast<int>(std::lround(std::clamp(t, 0.0, 1.0) * kLambdaSteps));
}

void SettingsPanel::centreLambdaSlider(double lambda) {
  if (lambda > 0)
    lambdaCentreLog_ = std::clamp(std::log10(lambda), kLambdaMinLog + kLambdaWindowDecades / 2,
                                  kLambdaMaxLog - kLambdaWindowDecades / 2);
  const auto [lo, hi] = lambdaSliderDecades();
  lambdaSlider_->setToolTip(tr("λ on a log scale over %1 … %2, the two decades around the λ (centred again when "
                               "the slider is released or a λ typed); arrow keys for fine steps. Dragging re-solves live.")
                                .arg(std::pow(10.0, lo), 0, 'g', 2).arg(std::pow(10.0, hi), 0, 'g', 2));
  const bool was = loading_;
  loading_ = true;
  lambdaSlider_->setValue(positionOf(lambdaValue_));
  loading_ = was;
}

void SettingsPanel::slideLambdaTo(double lambda) {
  if (lambdaValue_ > 0 && lambda > 0) centreLambdaSlider(std::sqrt(lambdaValue_ * lambda));
  lambdaSlider_->setValue(positionOf(lambda));
  revealLambda();
}

void SettingsPanel::slideTemporalLambdaTo(double lambda) {
  temporalSlider_->setValue(sliderFromLambda(lambda));
  revealLambda();
}

void SettingsPanel::revealLambda() {
  // The geometry of a dock just shown is laid out first, so that the scroll area knows its rows' places.
  if (QWidget* top = window(); top && top->layout()) top->layout()->activate();
  if (QLayout* l = scroll_->widget()->layout()) l->activate();
  const int margin = fontMetrics().height() / 2;
  if (temporalRow_ && temporalRow_->isVisible()) scroll_->ensureWidgetVisible(temporalRow_, 0, margin);
  scroll_->ensureWidgetVisible(lambdaRow_, 0, margin);  // λ's row wins where both cannot show
}

int SettingsPanel::fittingWidth() const {
  const int content = std::max(scroll_->widget()->minimumWidth(), scroll_->widget()->minimumSizeHint().width());
  return content + scroll_->verticalScrollBar()->sizeHint().width() + 2 * scroll_->frameWidth();
}

SettingsPanel::SettingsPanel(QWidget* parent) : QWidget(parent) {
  QWidget* content = makeContent();
  auto* scroll = scroll_ = new QScrollArea;
  scroll->setWidget(content);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  // Wide enough for every group with the vertical scroll bar showing (nothing cut on the right).
  content->setMinimumWidth(300);
  setMinimumWidth(content->minimumWidth() + 24);

  QLayout* buttons = makeButtons();
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(scroll, 1);
  layout->addLayout(buttons);

  connect(device_, &QComboBox::currentIndexChanged, this, &SettingsPanel::changed);
  connect(trajectory_, &QLineEdit::editingFinished, this, [this] {
    if (!loading_) emit trajectoryChanged(trajectory_->text());
  });
  setState(SessionState{});
}

QWidget* SettingsPanel::makeContent() {
  auto* content = new QWidget;
  auto* col = new QVBoxLayout(content);
  col->setContentsMargins(6, 6, 6, 6);
  col->setSpacing(8);

  std::map<std::string, QFormLayout*> forms;
  for (const auto& [name, title] : kGroups) {
    auto* box = new QGroupBox(tr(title));
    forms[name] = new QFormLayout(box);
    groups_.emplace_back(name, box);
    col->addWidget(box);
  }
  int lambdaFormRow = -1;
  for (const st::Setting& s : st::table()) {
    if (s.scope != st::Scope::User) continue;
    Row row = makeRow(s);
    row.form = forms.at(s.group);
    const bool flag = s.kind == st::Kind::Flag;
    if (s.key == "dynamic.temporal_lambda") {
      // The temporal λ sits under λ, where the weights are tuned (it still shows and hides with its group's rule).
      row.form = forms.at("iterative");
      row.form->insertRow(lambdaFormRow + 1, qs(s.label), row.field);
    } else {
      row.form->addRow(flag ? QString() : qs(s.label), row.field);
    }
    if (s.key == "iterative.lambda") lambdaFormRow = row.form->rowCount() - 1;
    if (s.key == "method") {
      method_ = qobject_cast<QComboBox*>(row.field);
      // A new method brings its own defaults of the settings that depend on it (cs: TV, λ 0.01, ...).
      connect(method_, &QComboBox::currentIndexChanged, this, [this] {
        if (loading_) return;
        SessionState s = state();
        st::applyMethodDefaults(s.settings);
        setState(s);
      });
      // The GUI's own rows of the reconstruction group: the trajectory file, then (at the end) the device.
      trajectory_ = new QLineEdit;
      trajectory_->setPlaceholderText(tr("from the data"));
      trajectory_->setToolTip(tr("BART trajectory (.cfl, [3, readout, spokes], cycles/FOV) for .cfl k-space; "
                                 "empty: the trajectory stored in the data"));
      row.form->addRow(tr("Trajectory"), pathRow(trajectory_, tr("BART trajectory (*.cfl *.hdr)"), this));
    }
    rows_.push_back(std::move(row));
  }
  device_ = new QComboBox;
  device_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  device_->setMinimumContentsLength(12);
  forms.at("reconstruction")->addRow(tr("Device"), device_);
  deviceNote_ = new QLabel;
  deviceNote_->setWordWrap(true);
  deviceNote_->setObjectName("deviceNote");
  forms.at("reconstruction")->addRow(QString(), deviceNote_);
  col->addStretch(1);
  return content;
}

QLayout* SettingsPanel::makeButtons() {
  run_ = new QPushButton(QIcon(":/icons/run.svg"), tr("Run"));
  run_->setObjectName("runButton");
  run_->setToolTip(tr("Reconstruct (Ctrl+R)"));
  cancel_ = new QPushButton(QIcon(":/icons/cancel.svg"), tr("Cancel"));
  cancel_->setEnabled(false);
  cancel_->setToolTip(tr("Stop the running reconstruction (Esc); stops within one iteration"));
  auto* copy = new QPushButton(QIcon(":/icons/terminal.svg"), tr("CLI"));
  copy->setToolTip(tr("Copy the larmor-cli command that reproduces this reconstruction"));
  auto* buttons = new QHBoxLayout;
  buttons->setContentsMargins(6, 4, 6, 6);
  buttons->addWidget(run_, 2);
  buttons->addWidget(cancel_, 1);
  buttons->addWidget(copy, 1);
  connect(run_, &QPushButton::clicked, this, &SettingsPanel::runRequested);
  connect(cancel_, &QPushButton::clicked, this, &SettingsPanel::cancelRequested);
  connect(copy, &QPushButton::clicked, this, &SettingsPanel::copyCliRequested);
  return buttons;
}

SettingsPanel::Row SettingsPanel::makeRow(const st::Setting& s) {
  Row row;
  row.setting = &s;
  const QString tip = qs(st::help(s));
  switch (s.kind) {
    case st::Kind::Choice: choiceField(row, s); break;
    case st::Kind::Integer: integerField(row, s); break;
    case st::Kind::Real: realField(row, s); break;
    case st::Kind::Flag: flagField(row, s); break;
    case st::Kind::Text: textField(row, s); break;
    case st::Kind::Dims: dimsField(row, s, tip); break;
  }
  row.field->setToolTip(tip);
  return row;
}

// A list of the choices (by name).
void SettingsPanel::choiceField(Row& row, const st::Setting& s) {
  auto* c = new QComboBox;
  for (const auto& ch : s.choices) c->addItem(qs(ch.label), qs(ch.name));
  connect(c, &QComboBox::currentIndexChanged, this, &SettingsPanel::changed);
  connect(c, &QComboBox::currentIndexChanged, this, &SettingsPanel::updateVisibility);
  row.field = c;
  row.show = [c](const st::Value& v) { c->setCurrentIndex(std::max(0, c->findData(qs(std::get<std::string>(v))))); };
  row.read = [c](const st::Value&) -> st::Value { return c->currentData().toString().toStdString(); };
}

// A spin box.
void SettingsPanel::integerField(Row& row, const st::Setting& s) {
  auto* b = new QSpinBox;
  b->setRange(intBound(s.min), intBound(s.max));
  if (!s.zeroMeans.empty()) b->setSpecialValueText(tr(s.zeroMeans.c_str()));
  connect(b, &QSpinBox::valueChanged, this, &SettingsPanel::changed);
  row.field = b;
  row.show = [b](const st::Value& v) { b->setValue(static_cast<int>(std::get<long>(v))); };
  row.read = [b](const st::Value&) -> st::Value { return static_cast<long>(b->value()); };
}

// λ's slider and edit; a scientific edit (text that is not a number in range keeps the previous value); or a spin box.
void SettingsPanel::realField(Row& row, const st::Setting& s) {
  if (s.key == "iterative.lambda") {
    row.field = lambdaEditor(row);
    return;
  }
  if (s.key == "dynamic.temporal_lambda") {
    row.field = temporalLambdaEditor(row);
    return;
  }
  if (s.realStyle == st::RealStyle::Scientific) {
    auto* e = scientificEdit(this);
    connect(e, &QLineEdit::editingFinished, this, &SettingsPanel::changed);
    row.field = e;
    row.show = [e](const st::Value& v) { e->setText(sci(std::get<double>(v))); };
    // Text that is not a number in range keeps the previous value (the validator stops most of it).
    row.read = [e, &s](const st::Value& previous) -> st::Value {
      bool ok = false;
      const double v = e->text().toDouble(&ok);
      try {
        if (ok) st::check(s, v);
      } catch (const std::exception&) {
        ok = false;
      }
      return ok ? st::Value(v) : previous;
    };
  } else {
    auto* b = new QDoubleSpinBox;
    const double step = s.step > 0 ? s.step : (s.max - s.min) / 100;
    b->setDecimals(3);
    b->setSingleStep(step);
    b->setRange(s.min + (s.minOpen ? 0.001 : 0), s.max - (s.maxOpen ? step : 0));
    connect(b, &QDoubleSpinBox::valueChanged, this, &SettingsPanel::changed);
    row.field = b;
    row.show = [b](const st::Value& v) { b->setValue(std::get<double>(v)); };
    row.read = [b](const st::Value&) -> st::Value { return b->value(); };
  }
}

// A check box with the label.
void SettingsPanel::flagField(Row& row, const st::Setting& s) {
  auto* c = new QCheckBox(qs(s.label));
  connect(c, &QCheckBox::toggled, this, &SettingsPanel::changed);
  row.field = c;
  row.show = [c](const st::Value& v) { c->setChecked(std::get<bool>(v)); };
  row.read = [c](const st::Value&) -> st::Value { return c->isChecked(); };
}

// A path edit with a file (or folder) chooser.
void SettingsPanel::textField(Row& row, const st::Setting& s) {
  auto* e = new QLineEdit;
  e->setPlaceholderText(qs(s.valueName == "DIR" ? "default" : s.help));
  connect(e, &QLineEdit::editingFinished, this, &SettingsPanel::changed);
  row.field = pathRow(e, tr("Images (*.cfl *.hdr *.h5)"), this, s.valueName == "DIR");
  row.show = [e](const st::Value& v) { e->setText(qs(std::get<std::string>(v))); };
  row.read = [e](const st::Value&) -> st::Value { return e->text().trimmed().toStdString(); };
}

// One spin box a dimension ("×" between them unless zero means something); a partly given matrix is completed.
void SettingsPanel::dimsField(Row& row, const st::Setting& s, const QString& tip) {
  auto* w = new QWidget;
  auto* l = new QHBoxLayout(w);
  l->setContentsMargins(0, 0, 0, 0);
  std::vector<QSpinBox*> boxes;
  for (int i = 0; i < s.count; ++i) {
    if (i > 0 && s.zeroMeans.empty()) l->addWidget(new QLabel(QStringLiteral("×")));
    auto* b = new QSpinBox;
    b->setRange(s.zeroMeans.empty() ? intBound(s.min) : 0, intBound(s.max));
    if (!s.zeroMeans.empty()) b->setSpecialValueText(tr(s.zeroMeans.c_str()));
    b->setToolTip(tip);
    connect(b, &QSpinBox::valueChanged, this, &SettingsPanel::changed);
    l->addWidget(b);
    boxes.push_back(b);
  }
  row.field = w;
  row.show = [boxes](const st::Value& v) {
    const auto& d = std::get<std::vector<long>>(v);
    for (std::size_t i = 0; i < boxes.size(); ++i) boxes[i]->setValue(static_cast<int>(d[i]));
  };
  const bool matrix = s.count == 3;
  row.read = [boxes, matrix](const st::Value&) -> st::Value {
    std::vector<long> d;
    for (auto* b : boxes) d.push_back(b->value());
    // A partly given matrix means "this in-plane size": 2D unless z is set; no x means the header's.
    if (matrix && d[0] > 0 && d[1] == 0) d[1] = d[0];
    if (matrix && d[0] > 0 && d[2] == 0) d[2] = 1;
    if (matrix && d[0] == 0) d[1] = d[2] = 0;
    return d;
  };
}

QWidget* SettingsPanel::lambdaEditor(Row& row) {
  lambdaSlider_ = new QSlider(Qt::Horizontal);
  lambdaSlider_->setRange(0, kLambdaSteps);
  lambdaSlider_->setSingleStep(4);  // 0.01 decade
  lambdaSlider_->setPageStep(40);   // 0.1 decade
  lambda_ = scientificEdit(this);
  lambda_->setMaximumWidth(80);
  live_ = new QCheckBox(tr("live (warm start)"));
  live_->setToolTip(tr("Re-solve while the λ slider moves, starting from the last image when the engine can"));
  live_->setChecked(true);
  auto* w = new QWidget;
  auto* grid = new QVBoxLayout(w);
  grid->setContentsMargins(0, 0, 0, 0);
  // The slider on a line of its own (the panel's full width: finer per pixel), the value and "live" below it.
  grid->addWidget(lambdaSlider_);
  auto* line = new QHBoxLayout;
  line->addWidget(lambda_);
  line->addWidget(live_, 1);
  grid->addLayout(line);
  lambdaRow_ = w;
  connect(lambdaSlider_, &QSlider::valueChanged, this, [this](int pos) {
    if (loading_) return;
    const double l = lambdaAt(pos);
    lambdaValue_ = l;
    setLambdaText(l);
    fixLambdaRule();
    emit lambdaDragged(l);
  });
  connect(lambdaSlider_, &QSlider::sliderReleased, this, [this] { centreLambdaSlider(lambdaValue_); });
  connect(lambda_, &QLineEdit::editingFinished, this, [this] {
    if (loading_) return;
    const double l = std::max(0.0, lambda_->text().toDouble());
    // Leaving the field without a change (tabbing through the form) must not start a re-solve.
    if (l == lambdaValue_) return;
    lambdaValue_ = l;
    centreLambdaSlider(l);
    fixLambdaRule();
    emit lambdaDragged(l);
  });
  row.show = [this](const st::Value& v) {
    const double l = std::get<double>(v);
    lambdaValue_ = l;
    if (!lambdaSlider_->isSliderDown()) centreLambdaSlider(l);  // never under the user's hand
    setLambdaText(l);
  };
  row.read = [this](const st::Value&) -> st::Value { return lambdaValue_; };
  return w;
}

// The temporal λ: a log slider beside its value, as λ's (no rule: the value is the weight used). Each move
// re-runs the series (the window's worker supersedes a run still going, so a drag ends at the slider's rest).
QWidget* SettingsPanel::temporalLambdaEditor(Row& row) {
  temporalSlider_ = new QSlider(Qt::Horizontal);
  temporalSlider_->setObjectName("temporalLambdaSlider");
  temporalSlider_->setRange(0, kLambdaSteps);
  temporalSlider_->setToolTip(tr("Temporal λ on a log scale, 1e-6 … 1e2 (far left: 0): the weight of the prior along time. "
                                 "Dragging reconstructs the frames jointly again (no warm start on this path)."));
  temporalEdit_ = scientificEdit(this);
  temporalEdit_->setMaximumWidth(80);
  auto* w = new QWidget;
  auto* line = new QHBoxLayout(w);
  line->setContentsMargins(0, 0, 0, 0);
  line->addWidget(temporalSlider_, 1);
  line->addWidget(temporalEdit_);
  temporalRow_ = w;
  connect(temporalSlider_, &QSlider::valueChanged, this, [this](int pos) {
    if (loading_) return;
    temporalValue_ = lambdaFromSlider(pos);
    temporalEdit_->setText(sci(temporalValue_));
    emit temporalLambdaDragged(temporalValue_);
  });
  connect(temporalEdit_, &QLineEdit::editingFinished, this, [this] {
    if (loading_) return;
    const double l = temporalEdit_->text().toDouble();
    if (!(l >= 0) || l == temporalValue_) return;  // an unchanged field (tabbing through) starts nothing
    temporalValue_ = l;
    loading_ = true;
    temporalSlider_->setValue(sliderFromLambda(l));
    loading_ = false;
    emit temporalLambdaDragged(l);
  });
  row.show = [this](const st::Value& v) {
    temporalValue_ = std::get<double>(v);
    temporalSlider_->setValue(sliderFromLambda(temporalValue_));
    temporalEdit_->setText(sci(temporalValue_));
  };
  row.read = [this](const st::Value&) -> st::Value { return temporalValue_; };
  return w;
}

void SettingsPanel::setSeriesFrames(int frames) {
  if (frames == seriesFrames_) return;
  seriesFrames_ = frames;
  updateVisibility();
}

void SettingsPanel::fixLambdaRule() {
  // A λ the user sets is the λ used: the rule row shows "as given" (silently: the λ's own signal follows).
  loading_ = true;
  for (const Row& r : rows_)
    if (r.setting->key == "iterative.lambda_rule") r.show(std::string("fixed"));
  loading_ = false;
}

QWidget* SettingsPanel::editor(const std::string& key) const {
  for (const Row& r : rows_)
    if (r.setting->key == key) return r.field;
  return nullptr;
}

void SettingsPanel::setLambdaText(double lambda) { lambda_->setText(sci(lambda)); }

bool SettingsPanel::liveLambda() const { return live_->isChecked(); }

void SettingsPanel::changed() {
  if (!loading_) emit settingsChanged();
}

void SettingsPanel::updateVisibility() {
  if (loading_ || rows_.empty()) return;
  const recon::ReconSettings s = state().settings;
  for (const auto& [name, box] : groups_) {
    bool any = name == "reconstruction";
    for (const Row& r : rows_) {
      if (r.setting->group != name) continue;
      // The dynamic group is for a series: it shows once the data have frames.
      const bool forMethod = (r.setting->methods & st::bit(s.method)) != 0 && (name != "dynamic" || seriesFrames_ > 1);
      r.form->setRowVisible(r.field, forMethod);
      r.field->setEnabled(r.setting->usedBy(s));
      any |= forMethod;
    }
    box->setVisible(any);
  }
}

void SettingsPanel::setDevices(const std::vector<DeviceInfo>& devices, const QString& whyNoGpu) {
  const QString current = device_->currentData().toString();
  loading_ = true;
  device_->clear();
  device_->addItem(tr("auto (GPU if any)"), "auto");
  for (const auto& d : devices) {
    const QString id = QString::fromStdString(d.id);
    device_->addItem(QStringLiteral("%1 — %2").arg(id, QString::fromStdString(d.name)), id);
  }
  const int i = device_->findData(current.isEmpty() ? "auto" : current);
  device_->setCurrentIndex(i >= 0 ? i : 0);
  loading_ = false;
  bool anyGpu = false;
  for (const auto& d : devices) anyGpu |= d.gpu;
  deviceNote_->setText(anyGpu ? QString() : tr("No GPU: %1. Everything runs on the CPU.").arg(whyNoGpu));
  deviceNote_->setVisible(!anyGpu);
}

void SettingsPanel::setRunning(bool running) {
  cancel_->setEnabled(running);
  run_->setText(running ? tr("Restart") : tr("Run"));
}

void SettingsPanel::setState(const SessionState& st) {
  loading_ = true;
  shown_ = st;
  for (const Row& r : rows_) r.show(r.setting->get(st.settings));
  const int d = device_->findData(QString::fromStdString(st.device));
  if (d >= 0) device_->setCurrentIndex(d);
  else if (!st.device.empty()) {
    device_->addItem(QString::fromStdString(st.device), QString::fromStdString(st.device));
    device_->setCurrentIndex(device_->count() - 1);
  }
  trajectory_->setText(QString::fromStdString(st.trajectoryPath));
  loading_ = false;
  updateVisibility();
}

SessionState SettingsPanel::state() const {
  SessionState st = shown_;
  for (const Row& r : rows_) r.setting->put(st.settings, r.read(r.setting->get(shown_.settings)));
  st.device = device_->currentData().toString().toStdString();
  if (st.device.empty()) st.device = "auto";
  st.trajectoryPath = trajectory_->text().trimmed().toStdString();
  return st;
}

}  // namespace larmor::ui

namespace larmor::ui {

namespace {
QStandardItem* methodItem(QComboBox* box, recon::Method m) {
  auto* model = qobject_cast<QStandardItemModel*>(box ? box->model() : nullptr);
  if (!model) return nullptr;
  const int i = box->findData(QString::fromStdString(recon::toString(m)));
  return i >= 0 ? model->item(i) : nullptr;
}
}  // namespace

void SettingsPanel::setMethodProblems(const std::map<recon::Method, QString>& problems) {
  for (int i = 0; method_ && i < method_->count(); ++i) {
    const recon::Method m = recon::methodFromString(method_->itemData(i).toString().toStdString());
    QStandardItem* item = methodItem(method_, m);
    if (!item) continue;
    const auto it = problems.find(m);
    item->setEnabled(it == problems.end());
    item->setToolTip(it == problems.end() ? QString() : it->second);
    // Hidden, not only disabled: a list of what applies (the reason stays the item's tooltip).
    if (auto* list = qobject_cast<QListView*>(method_->view())) list->setRowHidden(i, it != problems.end());
  }
}

bool SettingsPanel::methodHidden(recon::Method m) const {
  const int i = method_ ? method_->findData(QString::fromStdString(recon::toString(m))) : -1;
  const auto* list = method_ ? qobject_cast<QListView*>(method_->view()) : nullptr;
  return i >= 0 && list && list->isRowHidden(i);
}

bool SettingsPanel::methodEnabled(recon::Method m) const {
  const QStandardItem* item = methodItem(method_, m);
  return item && item->isEnabled();
}

QString SettingsPanel::methodToolTip(recon::Method m) const {
  const QStandardItem* item = methodItem(method_, m);
  return item ? item->toolTip() : QString();
}

}  // namespace larmor::ui

namespace larmor::ui {

void SettingsPanel::setDataFolder(const QString& folder) {
  if (trajectory_) trajectory_->setProperty("startFolder", folder);
}

QString SettingsPanel::dataFolder() const { return trajectory_ ? trajectory_->property("startFolder").toString() : QString(); }

}  // namespace larmor::ui
