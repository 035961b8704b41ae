#include "settings_panel.hpp"

#include <QCheckBox>
#include <QComboBox>
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
#include <QSlider>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>
#include <cmath>

#include "tasks.hpp"

namespace larmor::ui {
namespace {

constexpr int kLambdaSteps = 800;
constexpr double kLambdaMinLog = -6, kLambdaMaxLog = 2;

QLineEdit* scientificEdit(QWidget* parent) {
  auto* e = new QLineEdit(parent);
  auto* v = new QDoubleValidator(0, 1e12, 12, e);
  v->setNotation(QDoubleValidator::ScientificNotation);
  e->setValidator(v);
  return e;
}

QString sci(double v) { return QString::number(v, 'g', 4); }

QWidget* pathRow(QLineEdit* edit, const QString& filter, QWidget* parent) {
  auto* w = new QWidget(parent);
  auto* l = new QHBoxLayout(w);
  l->setContentsMargins(0, 0, 0, 0);
  l->addWidget(edit, 1);
  auto* b = new QToolButton(w);
  b->setText(QStringLiteral("…"));
  QObject::connect(b, &QToolButton::clicked, w, [edit, filter, w] {
    const QString f = QFileDialog::getOpenFileName(w, QObject::tr("Choose a file"), edit->text(), filter);
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

SettingsPanel::SettingsPanel(QWidget* parent) : QWidget(parent) {
  auto* content = new QWidget;
  auto* col = new QVBoxLayout(content);
  col->setContentsMargins(6, 6, 6, 6);
  col->setSpacing(8);

  // --- reconstruction ---------------------------------------------------------------------------
  auto* recon = new QGroupBox(tr("Reconstruction"));
  auto* rf = new QFormLayout(recon);
  method_ = new QComboBox;
  method_->addItem(tr("FFT (Cartesian)"), "fft");
  method_->addItem(tr("Gridding (NUFFT adjoint)"), "gridding");
  method_->addItem(tr("TRON radial"), "tron");
  method_->addItem(tr("Exact DFT"), "dft");
  method_->addItem(tr("Iterative (CG, regularized)"), "cg");
  method_->addItem(tr("GRAPPA"), "grappa");
  rf->addRow(tr("Method"), method_);
  trajectory_ = new QLineEdit;
  trajectory_->setPlaceholderText(tr("from the data"));
  trajectory_->setToolTip(tr("BART trajectory (.cfl, [3, readout, spokes], cycles/FOV) for .cfl k-space; "
                             "empty: the trajectory stored in the data"));
  rf->addRow(tr("Trajectory"), pathRow(trajectory_, tr("BART trajectory (*.cfl *.hdr)"), this));
  auto* matrixRow = new QWidget;
  auto* ml = new QHBoxLayout(matrixRow);
  ml->setContentsMargins(0, 0, 0, 0);
  for (auto*& m : matrix_) {
    m = new QSpinBox;
    m->setRange(0, 4096);
    m->setSpecialValueText(tr("hdr"));
    m->setToolTip(tr("Output matrix; 'hdr' = the header's recon matrix"));
    ml->addWidget(m);
  }
  rf->addRow(tr("Matrix"), matrixRow);
  combine_ = new QComboBox;
  combine_->addItem(tr("Sum of squares"), "sos");
  combine_->addItem(tr("Adaptive (Walsh)"), "adaptive");
  rf->addRow(tr("Coil combination"), combine_);
  device_ = new QComboBox;
  device_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  device_->setMinimumContentsLength(12);
  rf->addRow(tr("Device"), device_);
  deviceNote_ = new QLabel;
  deviceNote_->setWordWrap(true);
  deviceNote_->setObjectName("deviceNote");
  rf->addRow(QString(), deviceNote_);
  col->addWidget(recon);

  // --- NUFFT ---------------------------------------------------------------------------------------
  nufftGroup_ = new QGroupBox(tr("NUFFT / DFT"));
  auto* nf = new QFormLayout(nufftGroup_);
  width_ = new QSpinBox;
  width_->setRange(2, 16);
  width_->setToolTip(tr("Kaiser-Bessel kernel width W: the full width in grid points (Beatty et al. 2005)"));
  nf->addRow(tr("Kernel width W"), width_);
  sigma_ = new QDoubleSpinBox;
  sigma_->setRange(1.0, 4.0);
  sigma_->setSingleStep(0.125);
  sigma_->setDecimals(3);
  sigma_->setToolTip(tr("Grid oversampling σ"));
  nf->addRow(tr("Oversampling σ"), sigma_);
  dcf_ = new QComboBox;
  for (const char* d : {"auto", "ramp", "pipe-menon", "none"}) dcf_->addItem(QString::fromLatin1(d), d);
  dcf_->setToolTip(tr("Density compensation: auto = ramp for radial, Pipe-Menon otherwise"));
  nf->addRow(tr("Density comp."), dcf_);
  dcfIters_ = new QSpinBox;
  dcfIters_->setRange(1, 1000);
  nf->addRow(tr("DCF iterations"), dcfIters_);
  kernelTable_ = new QCheckBox(tr("kernel by table lookup"));
  nf->addRow(QString(), kernelTable_);
  spreader_ = new QComboBox;
  for (const char* s : {"auto", "sector", "tron"}) spreader_->addItem(QString::fromLatin1(s), s);
  spreader_->setToolTip(tr("GPU adjoint gridding: Gregerson's sectors or TRON's spreader"));
  nf->addRow(tr("GPU spreader"), spreader_);
  trig_ = new QComboBox;
  for (const char* s : {"accurate", "fast", "recurrence"}) trig_->addItem(QString::fromLatin1(s), s);
  trig_->setToolTip(tr("Exact DFT trigonometry (Kirk & Hwu: fast sin/cos costs ~0.1 dB)"));
  nf->addRow(tr("DFT trigonometry"), trig_);
  col->addWidget(nufftGroup_);

  // --- iterative -------------------------------------------------------------------------------------
  iterGroup_ = new QGroupBox(tr("Iterative (CG)"));
  auto* itf = new QFormLayout(iterGroup_);
  regularizer_ = new QComboBox;
  regularizer_->addItem(tr("Tikhonov (identity)"), "tikhonov");
  regularizer_->addItem(tr("Finite differences"), "fd");
  regularizer_->addItem(tr("Anatomical (weighted FD)"), "anatomical");
  itf->addRow(tr("Regularizer"), regularizer_);
  lambdaSlider_ = new QSlider(Qt::Horizontal);
  lambdaSlider_->setRange(0, kLambdaSteps);
  lambdaSlider_->setToolTip(tr("λ on a log scale, 1e-6 … 1e2 (far left: 0). Dragging re-solves live."));
  lambda_ = scientificEdit(this);
  lambda_->setMaximumWidth(80);
  auto* lambdaRow = new QWidget;
  auto* ll = new QHBoxLayout(lambdaRow);
  ll->setContentsMargins(0, 0, 0, 0);
  ll->addWidget(lambdaSlider_, 1);
  ll->addWidget(lambda_);
  itf->addRow(tr("λ"), lambdaRow);
  live_ = new QCheckBox(warmStartSupported() ? tr("live (warm start)") : tr("live"));
  live_->setToolTip(tr("Re-solve while the λ slider moves, starting from the last image when the engine can"));
  live_->setChecked(true);
  itf->addRow(QString(), live_);
  iterations_ = new QSpinBox;
  iterations_->setRange(1, 100000);
  itf->addRow(tr("Iterations"), iterations_);
  tolerance_ = scientificEdit(this);
  tolerance_->setToolTip(tr("Stop at this relative residual (0: iterations only)"));
  itf->addRow(tr("Tolerance"), tolerance_);
  fhd_ = new QComboBox;
  fhd_->addItem(tr("exact DFT"), "dft");
  fhd_->addItem(tr("NUFFT"), "nufft");
  itf->addRow(QStringLiteral("Fᴴd by"), fhd_);
  reference_ = new QLineEdit;
  reference_->setPlaceholderText(tr("anatomical prior image"));
  itf->addRow(tr("Reference"), pathRow(reference_, tr("Images (*.cfl *.hdr *.h5)"), this));
  col->addWidget(iterGroup_);

  // --- GRAPPA -------------------------------------------------------------------------------------------
  grappaGroup_ = new QGroupBox(tr("GRAPPA"));
  auto* gf = new QFormLayout(grappaGroup_);
  calibration_ = new QComboBox;
  calibration_->addItem(tr("improved (findWsImproved)"), "improved");
  calibration_->addItem(tr("basic (findWs)"), "basic");
  gf->addRow(tr("Calibration"), calibration_);
  auto* kernelRow = new QWidget;
  auto* kl = new QHBoxLayout(kernelRow);
  kl->setContentsMargins(0, 0, 0, 0);
  kernelPe_ = new QSpinBox;
  kernelPe_->setRange(1, 64);
  kernelRo_ = new QSpinBox;
  kernelRo_->setRange(1, 64);
  kl->addWidget(kernelPe_);
  kl->addWidget(new QLabel(QStringLiteral("×")));
  kl->addWidget(kernelRo_);
  kernelRow->setToolTip(tr("Kernel: source lines (PE) × source columns (RO)"));
  gf->addRow(tr("Kernel PE × RO"), kernelRow);
  blocks_ = new QSpinBox;
  blocks_->setRange(1, 64);
  gf->addRow(tr("Blocks Nb"), blocks_);
  segment_ = new QSpinBox;
  segment_->setRange(1, 65536);
  gf->addRow(tr("Segment Δs"), segment_);
  chi_ = scientificEdit(this);
  chi_->setToolTip(tr("Regularization χ: λ = χ·trace(AᴴA)/rows"));
  gf->addRow(tr("χ"), chi_);
  eta_ = new QDoubleSpinBox;
  eta_->setRange(0.001, 1000);
  eta_->setDecimals(3);
  gf->addRow(tr("η"), eta_);
  kappa_ = new QDoubleSpinBox;
  kappa_->setRange(0, 0.99);
  kappa_->setSingleStep(0.01);
  kappa_->setDecimals(3);
  gf->addRow(tr("κ"), kappa_);
  outCoils_ = new QSpinBox;
  outCoils_->setRange(0, 1024);
  outCoils_->setSpecialValueText(tr("no compression"));
  gf->addRow(tr("Output coils"), outCoils_);
  col->addWidget(grappaGroup_);
  col->addStretch(1);

  auto* scroll = new QScrollArea;
  scroll->setWidget(content);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  // Wide enough for every group with the vertical scroll bar showing (nothing cut on the right).
  content->setMinimumWidth(300);
  setMinimumWidth(content->minimumWidth() + 24);

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

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(scroll, 1);
  layout->addLayout(buttons);

  connect(run_, &QPushButton::clicked, this, &SettingsPanel::runRequested);
  connect(cancel_, &QPushButton::clicked, this, &SettingsPanel::cancelRequested);
  connect(copy, &QPushButton::clicked, this, &SettingsPanel::copyCliRequested);

  for (QComboBox* c : {method_, device_, combine_, dcf_, spreader_, trig_, calibration_, regularizer_, fhd_})
    connect(c, &QComboBox::currentIndexChanged, this, &SettingsPanel::changed);
  for (QSpinBox* s : {matrix_[0], matrix_[1], matrix_[2], width_, dcfIters_, kernelPe_, kernelRo_, blocks_, segment_,
                      outCoils_, iterations_})
    connect(s, &QSpinBox::valueChanged, this, &SettingsPanel::changed);
  for (QDoubleSpinBox* s : {sigma_, eta_, kappa_}) connect(s, &QDoubleSpinBox::valueChanged, this, &SettingsPanel::changed);
  for (QLineEdit* e : {chi_, tolerance_, reference_}) connect(e, &QLineEdit::editingFinished, this, &SettingsPanel::changed);
  connect(kernelTable_, &QCheckBox::toggled, this, &SettingsPanel::changed);
  connect(method_, &QComboBox::currentIndexChanged, this, &SettingsPanel::updateVisibility);
  connect(calibration_, &QComboBox::currentIndexChanged, this, &SettingsPanel::updateVisibility);
  connect(trajectory_, &QLineEdit::editingFinished, this, [this] {
    if (!loading_) emit trajectoryChanged(trajectory_->text());
  });
  connect(lambdaSlider_, &QSlider::valueChanged, this, [this](int pos) {
    if (loading_) return;
    const double l = lambdaFromSlider(pos);
    lambdaValue_ = l;
    setLambdaText(l);
    emit lambdaDragged(l);
  });
  connect(lambda_, &QLineEdit::editingFinished, this, [this] {
    if (loading_) return;
    const double l = std::max(0.0, lambda_->text().toDouble());
    // Leaving the field without a change (tabbing through the form) must not start a re-solve.
    if (l == lambdaValue_) return;
    lambdaValue_ = l;
    loading_ = true;
    lambdaSlider_->setValue(sliderFromLambda(l));
    loading_ = false;
    emit lambdaDragged(l);
  });
  setState(SessionState{});
}

void SettingsPanel::setLambdaText(double lambda) { lambda_->setText(sci(lambda)); }

bool SettingsPanel::liveLambda() const { return live_->isChecked(); }

void SettingsPanel::changed() {
  if (!loading_) emit settingsChanged();
}

void SettingsPanel::updateVisibility() {
  const QString m = method_->currentData().toString();
  nufftGroup_->setVisible(m == "gridding" || m == "tron" || m == "dft" || m == "cg");
  iterGroup_->setVisible(m == "cg");
  grappaGroup_->setVisible(m == "grappa");
  const bool basic = calibration_->currentData().toString() == "basic";
  blocks_->setEnabled(basic);
  segment_->setEnabled(basic);
  trig_->setEnabled(m == "dft" || m == "cg");
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
  const auto& s = st.settings;
  auto select = [](QComboBox* c, const QString& data) {
    const int i = c->findData(data);
    if (i >= 0) c->setCurrentIndex(i);
  };
  select(method_, QString::fromStdString(recon::toString(s.method)));
  const int d = device_->findData(QString::fromStdString(st.device));
  if (d >= 0) device_->setCurrentIndex(d);
  else if (!st.device.empty()) {
    device_->addItem(QString::fromStdString(st.device), QString::fromStdString(st.device));
    device_->setCurrentIndex(device_->count() - 1);
  }
  trajectory_->setText(QString::fromStdString(st.trajectoryPath));
  for (int i = 0; i < 3; ++i) matrix_[i]->setValue(static_cast<int>(s.matrix[i]));
  select(combine_, QString::fromStdString(recon::toString(s.combine)));
  width_->setValue(s.nufft.width);
  sigma_->setValue(s.nufft.oversampling);
  select(dcf_, QString::fromStdString(toString(s.nufft.dcf)));
  dcfIters_->setValue(s.nufft.dcfIterations);
  kernelTable_->setChecked(s.nufft.kernelTable);
  select(spreader_, QString::fromStdString(s.nufft.spreader));
  select(trig_, QString::fromStdString(s.nufft.trig));
  select(calibration_, s.grappa.calibration == recon::GrappaCalibration::Basic ? "basic" : "improved");
  kernelPe_->setValue(s.grappa.kernelPe);
  kernelRo_->setValue(s.grappa.kernelRo);
  blocks_->setValue(s.grappa.blocks);
  segment_->setValue(s.grappa.segment);
  chi_->setText(sci(s.grappa.chi));
  eta_->setValue(s.grappa.eta);
  kappa_->setValue(s.grappa.kappa);
  outCoils_->setValue(s.grappa.outCoils);
  select(regularizer_, QString::fromStdString(s.iterative.regularizer));
  lambdaSlider_->setValue(sliderFromLambda(s.iterative.lambda));
  lambdaValue_ = s.iterative.lambda;
  setLambdaText(s.iterative.lambda);
  iterations_->setValue(s.iterative.iterations);
  tolerance_->setText(sci(s.iterative.tolerance));
  select(fhd_, QString::fromStdString(s.iterative.fhd));
  reference_->setText(QString::fromStdString(s.iterative.referencePath));
  loading_ = false;
  updateVisibility();
}

SessionState SettingsPanel::state() const {
  SessionState st;
  auto& s = st.settings;
  s.method = recon::methodFromString(method_->currentData().toString().toStdString());
  st.device = device_->currentData().toString().toStdString();
  if (st.device.empty()) st.device = "auto";
  st.trajectoryPath = trajectory_->text().trimmed().toStdString();
  for (int i = 0; i < 3; ++i) s.matrix[i] = matrix_[i]->value();
  // A partly given matrix means "this in-plane size": 2D unless z is set.
  if (s.matrix[0] > 0 && s.matrix[1] == 0) s.matrix[1] = s.matrix[0];
  if (s.matrix[0] > 0 && s.matrix[2] == 0) s.matrix[2] = 1;
  if (s.matrix[0] == 0) s.matrix[1] = s.matrix[2] = 0;
  s.combine = recon::combineFromString(combine_->currentData().toString().toStdString());
  s.nufft.width = width_->value();
  s.nufft.oversampling = sigma_->value();
  s.nufft.dcf = dcfFromString(dcf_->currentData().toString().toStdString());
  s.nufft.dcfIterations = dcfIters_->value();
  s.nufft.kernelTable = kernelTable_->isChecked();
  s.nufft.spreader = spreader_->currentData().toString().toStdString();
  s.nufft.trig = trig_->currentData().toString().toStdString();
  s.grappa.calibration = calibration_->currentData().toString() == "basic" ? recon::GrappaCalibration::Basic
                                                                             : recon::GrappaCalibration::Improved;
  s.grappa.kernelPe = kernelPe_->value();
  s.grappa.kernelRo = kernelRo_->value();
  s.grappa.blocks = blocks_->value();
  s.grappa.segment = segment_->value();
  s.grappa.chi = std::max(0.0, chi_->text().toDouble());
  s.grappa.eta = eta_->value();
  s.grappa.kappa = kappa_->value();
  s.grappa.outCoils = outCoils_->value();
  s.iterative.regularizer = regularizer_->currentData().toString().toStdString();
  s.iterative.lambda = lambdaValue_;
  s.iterative.iterations = iterations_->value();
  s.iterative.tolerance = std::max(0.0, tolerance_->text().toDouble());
  s.iterative.fhd = fhd_->currentData().toString().toStdString();
  s.iterative.referencePath = reference_->text().trimmed().toStdString();
  return st;
}

}  // namespace larmor::ui
