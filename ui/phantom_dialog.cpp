#include "phantom_dialog.hpp"

#include <QButtonGroup>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace larmor::ui {

namespace {

QSpinBox* spin(int lo, int hi) {
  auto* s = new QSpinBox;
  s->setRange(lo, hi);
  return s;
}

}  // namespace

PhantomDialog::PhantomDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("New phantom"));
  auto* form = new QFormLayout;
  form->addRow(tr("Matrix"), makeMatrixRow());
  form->addRow(tr("Dimensions"), makeDimensionsRow());
  slices_ = spin(1, 512);
  slices_->setToolTip(tr("2D multi-slice: cross-sections of the 3D phantom"));
  form->addRow(tr("Slices (2D)"), slices_);
  coils_ = spin(1, 64);
  form->addRow(tr("Coils"), coils_);
  trajectory_ = new QComboBox;
  for (auto k : {TrajectoryKind::Cartesian, TrajectoryKind::Radial, TrajectoryKind::GoldenAngle, TrajectoryKind::Spiral,
                 TrajectoryKind::StackOfSpirals, TrajectoryKind::Radial3D})
    trajectory_->addItem(QString::fromStdString(toString(k)), static_cast<int>(k));
  form->addRow(tr("Trajectory"), trajectory_);
  accel_ = spin(1, 16);
  accel_->setToolTip(tr("Cartesian acceleration R along phase encoding"));
  form->addRow(tr("Acceleration R"), accel_);
  acs_ = spin(0, 256);
  acs_->setToolTip(tr("Calibration (ACS) lines in the centre of k-space when R > 1"));
  form->addRow(tr("ACS lines"), acs_);
  spokes_ = spin(0, 100000);
  spokes_->setSpecialValueText(tr("auto"));
  form->addRow(tr("Spokes"), spokes_);
  readout_ = spin(0, 8192);
  readout_->setSpecialValueText(tr("auto"));
  form->addRow(tr("Readout samples"), readout_);
  interleaves_ = spin(0, 4096);
  interleaves_->setSpecialValueText(tr("auto"));
  form->addRow(tr("Spiral interleaves"), interleaves_);
  noise_ = new QDoubleSpinBox;
  noise_->setRange(0, 1);
  noise_->setDecimals(4);
  noise_->setSingleStep(0.005);
  noise_->setToolTip(tr("Complex Gaussian noise σ per real/imaginary part (the phantom's peak is 1)"));
  form->addRow(tr("Noise σ"), noise_);
  seed_ = spin(0, 1 << 30);
  form->addRow(tr("Noise seed"), seed_);
  frames_ = spin(1, 1024);
  frames_->setObjectName("phantomFrames");
  frames_->setToolTip(tr("1: a static phantom. More: a dynamic series (2D, one slice; Cartesian, radial or golden "
                         "angle), one acquisition a frame: a beating ellipse, breathing and a contrast wash-in. "
                         "Radial: 'Spokes' counts all frames' spokes (auto: 21 a frame)"));
  form->addRow(tr("Frames"), frames_);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Generate"));
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* layout = new QVBoxLayout(this);
  auto* intro = new QLabel(tr("An analytic Shepp-Logan phantom with coil sensitivities: exact k-space, "
                              "the truth kept for comparisons."));
  intro->setWordWrap(true);
  layout->addWidget(intro);
  layout->addLayout(form);
  layout->addWidget(buttons);
  connect(twoD_, &QRadioButton::toggled, this, &PhantomDialog::updateEnabled);
  connect(trajectory_, &QComboBox::currentIndexChanged, this, &PhantomDialog::updateEnabled);
  connect(accel_, &QSpinBox::valueChanged, this, &PhantomDialog::updateEnabled);
  connect(slices_, &QSpinBox::valueChanged, this, &PhantomDialog::updateEnabled);
  setSettings(phantom::SimulateSettings{});
}

QWidget* PhantomDialog::makeMatrixRow() {
  nx_ = spin(8, 1024);
  ny_ = spin(8, 1024);
  nz_ = spin(1, 512);
  auto* matrix = new QWidget;
  auto* ml = new QHBoxLayout(matrix);
  ml->setContentsMargins(0, 0, 0, 0);
  ml->addWidget(nx_);
  ml->addWidget(new QLabel(QStringLiteral("×")));
  ml->addWidget(ny_);
  ml->addWidget(new QLabel(QStringLiteral("×")));
  ml->addWidget(nz_);
  return matrix;
}

QWidget* PhantomDialog::makeDimensionsRow() {
  twoD_ = new QRadioButton(tr("2D"));
  threeD_ = new QRadioButton(tr("3D"));
  auto* group = new QButtonGroup(this);
  group->addButton(twoD_);
  group->addButton(threeD_);
  auto* dims = new QWidget;
  auto* dl = new QHBoxLayout(dims);
  dl->setContentsMargins(0, 0, 0, 0);
  dl->addWidget(twoD_);
  dl->addWidget(threeD_);
  dl->addStretch(1);
  return dims;
}

void PhantomDialog::updateEnabled() {
  const bool is3D = threeD_->isChecked();
  nz_->setEnabled(is3D);
  slices_->setEnabled(!is3D);
  const auto k = static_cast<TrajectoryKind>(trajectory_->currentData().toInt());
  const bool cart = k == TrajectoryKind::Cartesian;
  accel_->setEnabled(cart);
  acs_->setEnabled(cart && accel_->value() > 1);
  spokes_->setEnabled(k == TrajectoryKind::Radial || k == TrajectoryKind::GoldenAngle || k == TrajectoryKind::Radial3D);
  readout_->setEnabled(!cart);
  interleaves_->setEnabled(k == TrajectoryKind::Spiral || k == TrajectoryKind::StackOfSpirals);
  // The dynamic phantom is 2D single-slice, Cartesian or radial (phantom::simulateSeries).
  frames_->setEnabled(!is3D && slices_->value() == 1 &&
                      (cart || k == TrajectoryKind::Radial || k == TrajectoryKind::GoldenAngle));
}

void PhantomDialog::setSettings(const phantom::SimulateSettings& s) {
  nx_->setValue(static_cast<int>(s.matrix[0]));
  ny_->setValue(static_cast<int>(s.matrix[1]));
  nz_->setValue(static_cast<int>(std::max<index_t>(s.matrix[2], 1)));
  (s.matrix[2] > 1 ? threeD_ : twoD_)->setChecked(true);
  if (s.matrix[2] <= 1) nz_->setValue(64);
  slices_->setValue(static_cast<int>(s.slices));
  coils_->setValue(s.coils);
  trajectory_->setCurrentIndex(trajectory_->findData(static_cast<int>(s.trajectory)));
  accel_->setValue(s.accel);
  acs_->setValue(s.acs);
  spokes_->setValue(static_cast<int>(s.spokes));
  readout_->setValue(static_cast<int>(s.readout));
  interleaves_->setValue(static_cast<int>(s.interleaves));
  noise_->setValue(s.noiseSigma);
  seed_->setValue(static_cast<int>(s.seed));
  frames_->setValue(static_cast<int>(std::max<index_t>(1, s.frames)));
  updateEnabled();
}

phantom::SimulateSettings PhantomDialog::settings() const {
  phantom::SimulateSettings s;
  s.matrix[0] = nx_->value();
  s.matrix[1] = ny_->value();
  s.matrix[2] = threeD_->isChecked() ? nz_->value() : 1;
  s.slices = threeD_->isChecked() ? 1 : slices_->value();
  s.coils = coils_->value();
  s.trajectory = static_cast<TrajectoryKind>(trajectory_->currentData().toInt());
  s.accel = accel_->value();
  s.acs = acs_->value();
  s.spokes = spokes_->value();
  s.readout = readout_->value();
  s.interleaves = interleaves_->value();
  s.noiseSigma = static_cast<float>(noise_->value());
  s.seed = static_cast<std::uint64_t>(seed_->value());
  s.frames = frames_->isEnabled() ? frames_->value() : 1;
  return s;
}

}  // namespace larmor::ui
