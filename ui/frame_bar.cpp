// The frame bar (frame_bar.hpp).
#include "frame_bar.hpp"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSlider>
#include <QTimer>
#include <QToolButton>

namespace larmor::ui {

FrameBar::FrameBar(QWidget* parent) : QWidget(parent) {
  setObjectName("frameBar");
  auto* l = new QHBoxLayout(this);
  l->setContentsMargins(8, 2, 8, 2);
  auto* title = new QLabel(tr("Frame"));
  slider_ = new QSlider(Qt::Horizontal);
  slider_->setObjectName("frameSlider");
  slider_->setPageStep(1);
  slider_->setToolTip(tr("The file's frames (repetitions, echoes, cardiac phases, sets): each is reconstructed "
                         "with the current settings when first shown"));
  name_ = new QLabel;
  name_->setObjectName("frameName");
  name_->setMinimumWidth(160);
  play_ = new QToolButton;
  play_->setObjectName("cineButton");
  play_->setCheckable(true);
  play_->setText(QStringLiteral("▶ Cine"));
  play_->setToolTip(tr("Play the frames in turn (each frame is reconstructed once, then shown from the runs)"));
  speed_ = new QComboBox;
  speed_->setObjectName("cineSpeed");
  for (double r : cineRates()) speed_->addItem(tr("%1 fps").arg(r), r);
  speed_->setCurrentIndex(static_cast<int>(cineRates().indexOf(4.0)));
  speed_->setToolTip(tr("Cine speed: frames per second"));
  timer_ = new QTimer(this);
  l->addWidget(title);
  l->addWidget(slider_, 1);
  l->addWidget(name_);
  l->addWidget(play_);
  l->addWidget(speed_);
  connect(speed_, &QComboBox::currentIndexChanged, this, [this] {
    if (timer_->isActive()) timer_->start(qRound(1000.0 / cineRate()));
  });
  connect(slider_, &QSlider::valueChanged, this, [this](int v) {
    name_->setText(nameOf(v));
    emit frameRequested(v);
  });
  connect(play_, &QToolButton::toggled, this, [this](bool on) { setPlaying(on); });
  connect(timer_, &QTimer::timeout, this, &FrameBar::cineTick);
  hide();
}

void FrameBar::setFrames(int count, std::function<QString(int)> name, int current) {
  setPlaying(false);
  nameOf_ = std::move(name);
  count_ = std::max(0, count);
  const QSignalBlocker block(slider_);
  slider_->setRange(0, std::max(0, count_ - 1));
  slider_->setValue(current);
  name_->setText(nameOf(current));
  setVisible(count_ > 1);
}

void FrameBar::setCurrent(int frame) {
  const QSignalBlocker block(slider_);
  slider_->setValue(frame);
  name_->setText(nameOf(frame));
}

int FrameBar::current() const { return slider_->value(); }
bool FrameBar::playing() const { return timer_->isActive(); }

void FrameBar::setPlaying(bool on, int ms) {
  {
    const QSignalBlocker block(play_);
    play_->setChecked(on);
    play_->setText(on ? QStringLiteral("■ Stop") : QStringLiteral("▶ Cine"));
  }
  if (on) timer_->start(ms > 0 ? ms : qRound(1000.0 / cineRate()));
  else timer_->stop();
}

QList<double> FrameBar::cineRates() { return {1, 2, 4, 8, 15, 30}; }

void FrameBar::setCineRate(double framesPerSecond) {
  const int i = static_cast<int>(cineRates().indexOf(framesPerSecond));
  if (i >= 0) speed_->setCurrentIndex(i);
}

double FrameBar::cineRate() const { return speed_->currentData().toDouble(); }

QString FrameBar::currentName() const { return name_->text(); }

}  // namespace larmor::ui
