#include "compare_view.hpp"

#include <QComboBox>
#include <QFutureWatcher>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>

#include "display_volume.hpp"
#include "larmor/quality/display.hpp"
#include "slice_view.hpp"

namespace larmor::ui {

/// Everything the four views and the table show for one (test, reference) pair.
struct CompareData {
  std::shared_ptr<CArray> test, ref;  // as [x, y, n]
  quality::Metrics volume;
  DisplayVolumePtr a, b, error, psnr;
  quality::DisplayWindow magnitudeWindow, errorWindow, psnrWindow;
  QString problem;  // non-empty: why there is nothing to compare
};

namespace {

enum { kA = 0, kB = 1, kError = 2, kPsnr = 3 };

std::shared_ptr<CArray> asStack(const CArray& image) {
  auto v = std::make_shared<CArray>(image);
  const Shape& s = image.shape();
  v->reshape(Shape{s[0], s[1], image.size() / std::max<index_t>(1, s[0] * s[1])});
  return v;
}

std::shared_ptr<const CompareData> computeCompare(std::shared_ptr<const CArray> test, std::shared_ptr<const CArray> ref,
                                                  std::array<double, 3> spacing) {
  auto d = std::make_shared<CompareData>();
  try {
    if (!test || !ref) {
      d->problem = QObject::tr("No reference: open data with a phantom truth, or run another reconstruction.");
      return d;
    }
    if (test->size() != ref->size() || test->shape()[0] != ref->shape()[0] || test->shape()[1] != ref->shape()[1]) {
      d->problem = QObject::tr("The reference %1 and the image %2 differ in size.")
                       .arg(QString::fromStdString(ref->shape().str()), QString::fromStdString(test->shape().str()));
      return d;
    }
    d->test = asStack(*test);
    d->ref = asStack(*ref);
    d->volume = quality::compare(*d->test, *d->ref);
    // A is shown scaled by the least-squares factor so A and B share one window and the error map is
    // exactly the difference of the two pictures.
    const RArray a = quality::component(*d->test, quality::Component::Magnitude, d->volume.scale);
    const RArray b = quality::component(*d->ref, quality::Component::Magnitude);
    const RArray err = quality::errorMap(*d->test, *d->ref, d->volume.scale);
    const RArray psnr = quality::localPsnrMap(*d->test, *d->ref, d->volume.scale);
    d->magnitudeWindow = quality::percentileWindow(b, 0.5, 99.5);
    d->magnitudeWindow.lo = 0;
    d->errorWindow = quality::percentileWindow(err, 0.0, 99.5);
    d->errorWindow.lo = 0;
    d->psnrWindow = quality::percentileWindow(psnr, 1.0, 99.0);
    d->a = std::make_shared<DisplayVolume>(a, spacing);
    d->b = std::make_shared<DisplayVolume>(b, spacing);
    d->error = std::make_shared<DisplayVolume>(err, spacing);
    d->psnr = std::make_shared<DisplayVolume>(psnr, spacing);
  } catch (const std::exception& e) {
    d->problem = QString::fromStdString(e.what());
  }
  return d;
}

QString pct(double v) { return QString::number(v, 'f', 2) + QStringLiteral(" %"); }
QString db(double v) { return QString::number(v, 'f', 2) + QStringLiteral(" dB"); }
QString ssim(double v) { return QString::number(v, 'f', 4); }

}  // namespace

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
  makeControls();
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  // Two rows, so that the A and B lists do not widen the window (1024 px, gui.fitsXgaAndZooms): what is
  // compared, then the flicker, the slice and the status.
  layout->addLayout(pickRow());
  layout->addLayout(controlRow());
  layout->addLayout(viewGrid(), 1);
  layout->addLayout(metricsRow());
  connectControls();
  clear(tr("Run a reconstruction to compare it."));
}

void CompareView::makeControls() {
  test_choice_ = new QComboBox;
  test_choice_->setObjectName("compareA");
  test_choice_->setMinimumWidth(120);
  test_choice_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  test_choice_->setMinimumContentsLength(14);
  test_choice_->setToolTip(tr("A: the image compared (any run of this session, of any data, or a reference file)"));
  reference_ = new QComboBox;
  reference_->setObjectName("compareB");
  reference_->setMinimumWidth(160);
  reference_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  reference_->setMinimumContentsLength(18);
  reference_->setToolTip(tr("What the reconstruction is compared with"));
  flicker_ = new QPushButton(QIcon(":/icons/flicker.svg"), tr("Flicker A/B"));
  flicker_->setCheckable(true);
  flicker_->setToolTip(tr("Alternate the left view between the reconstruction (A) and the reference (B)"));
  slice_ = new QSlider(Qt::Horizontal);
  sliceLabel_ = new QLabel;
  status_ = new QLabel;
  status_->setObjectName("compareStatus");
  // Long messages ("No reference: ...") must not widen the window: the label takes the
  // room it is given, elides, and keeps the whole text in its tooltip.
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  status_->setMinimumWidth(40);
}

QLayout* CompareView::pickRow() {
  auto* pick = new QHBoxLayout;
  pick->setContentsMargins(6, 4, 6, 0);
  pick->addWidget(new QLabel(tr("A")));
  pick->addWidget(test_choice_, 1);
  pick->addSpacing(8);
  pick->addWidget(new QLabel(tr("B")));
  pick->addWidget(reference_, 1);
  auto* fromFile = new QPushButton(tr("Reference file…"));
  fromFile->setToolTip(tr("Compare with an image file (BART .cfl, a DICOM series, NIfTI .nii/.nii.gz): any run of "
                          "the session, of any data, against it"));
  connect(fromFile, &QPushButton::clicked, this, &CompareView::referenceFileRequested);
  pick->addWidget(fromFile);
  return pick;
}

QLayout* CompareView::controlRow() {
  auto* top = new QHBoxLayout;
  top->setContentsMargins(6, 0, 6, 4);
  top->addWidget(flicker_);
  top->addSpacing(12);
  top->addWidget(new QLabel(tr("Slice")));
  top->addWidget(slice_, 1);
  top->addWidget(sliceLabel_);
  top->addSpacing(12);
  top->addWidget(status_, 2);
  return top;
}

QLayout* CompareView::viewGrid() {
  auto* grid = new QGridLayout;
  grid->setSpacing(2);
  const QString titles[] = {tr("A: reconstruction"), tr("B: reference"), tr("Error |a·A − B|"), tr("Local PSNR")};
  const QString bars[] = {tr("magnitude"), tr("magnitude"), tr("error"), tr("dB")};
  const QString maps[] = {"grey", "grey", "viridis", "hot"};
  for (int i = 0; i < 4; ++i) {
    views_[i] = new SliceView(SliceView::Axial);
    views_[i]->setTitle(titles[i]);
    views_[i]->setColorBar(true, bars[i]);
    views_[i]->setColormap(maps[i]);
    views_[i]->setPlaceholder(tr("Run a reconstruction to compare it."));
    grid->addWidget(views_[i], i / 2, i % 2);
  }
  return grid;
}

QLayout* CompareView::metricsRow() {
  table_ = new QTableWidget(3, 2);
  table_->setHorizontalHeaderLabels({tr("this slice"), tr("volume")});
  table_->setVerticalHeaderLabels({tr("percent error"), tr("PSNR"), tr("SSIM")});
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  table_->verticalHeader()->setDefaultSectionSize(22);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setMaximumHeight(table_->verticalHeader()->defaultSectionSize() * 3 + table_->horizontalHeader()->sizeHint().height() + 6);
  table_->setMaximumWidth(380);
  probe_ = new QLabel(tr("Move the mouse over a view: A, B, |Δ| and the local PSNR under the cursor appear here. "
                          "Drag with the left button to change A and B's window; ctrl+wheel zooms all four."));
  probe_->setObjectName("probe");
  probe_->setWordWrap(true);
  auto* bottom = new QHBoxLayout;
  bottom->setContentsMargins(6, 2, 6, 2);
  bottom->addWidget(table_);
  bottom->addWidget(probe_, 1);
  return bottom;
}

void CompareView::connectControls() {
  flickerTimer_ = new QTimer(this);
  flickerTimer_->setInterval(600);
  connect(flickerTimer_, &QTimer::timeout, this, [this] {
    if (!data_ || !data_->a) return;
    showingB_ = !showingB_;
    views_[kA]->setVolume(showingB_ ? data_->b : data_->a);
    views_[kA]->setBadge(showingB_ ? QStringLiteral("B") : QStringLiteral("A"));
    views_[kA]->setTitle(showingB_ ? views_[kB]->title() : tr("A: %1").arg(testLabel_));
  });
  connect(flicker_, &QPushButton::toggled, this, &CompareView::setFlicker);
  connect(reference_, &QComboBox::currentIndexChanged, this, [this](int index) {
    recompute();
    emit referenceChosen(index);
  });
  connect(test_choice_, &QComboBox::currentIndexChanged, this, [this](int index) { emit testChosen(index); });
  connect(slice_, &QSlider::valueChanged, this, &CompareView::setSlice);
  for (SliceView* v : views_) {
    connect(v, &SliceView::hovered, this, &CompareView::onHover);
    connect(v, &SliceView::sliceChanged, this, &CompareView::setSlice);
    connect(v, &SliceView::viewTransformChanged, this, [this, v](double z, double pr, double pu) {
      for (SliceView* o : views_)
        if (o != v) o->setViewTransform(z, pr, pu);
    });
  }
  // A and B share the magnitude window; the maps keep theirs.
  for (int i : {kA, kB})
    connect(views_[i], &SliceView::windowDragged, this, [this](double lo, double hi) {
      views_[kA]->setWindow(lo, hi);
      views_[kB]->setWindow(lo, hi);
    });
}

CompareView::~CompareView() = default;

void CompareView::clear(const QString& message) {
  setFlicker(false);
  data_.reset();
  ready_ = false;
  volumeMetrics_ = {};
  for (SliceView* v : views_) {
    v->setVolume(nullptr);
    v->setPlaceholder(message);
  }
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 2; ++c) table_->setItem(r, c, new QTableWidgetItem(QStringLiteral("—")));
  status_->clear();
  slice_->setEnabled(false);
}

void CompareView::setComparison(std::shared_ptr<const CArray> test, const QString& label,
                                std::array<double, 3> spacingMm, const QVector<Candidate>& candidates, int current) {
  auto same = [](const Candidate& a, const Candidate& b) { return a.label == b.label && a.image == b.image; };
  const bool unchanged = test == test_ && label == testLabel_ && spacingMm == spacing_ && current == reference_->currentIndex() &&
                         std::equal(candidates.begin(), candidates.end(), candidates_.begin(), candidates_.end(), same);
  if (unchanged) return;  // shown, or being computed
  test_ = std::move(test);
  testLabel_ = label;
  spacing_ = spacingMm;
  candidates_ = candidates;
  views_[kA]->setTitle(tr("A: %1").arg(label));
  reference_->blockSignals(true);
  reference_->clear();
  for (const auto& c : candidates_) reference_->addItem(c.label);
  reference_->setCurrentIndex(current);
  reference_->blockSignals(false);
  recompute();
}

void CompareView::setTestChoices(const QStringList& labels, int current) {
  QStringList now;
  for (int i = 0; i < test_choice_->count(); ++i) now << test_choice_->itemText(i);
  if (now == labels && test_choice_->currentIndex() == current) return;
  test_choice_->blockSignals(true);
  test_choice_->clear();
  test_choice_->addItems(labels);
  test_choice_->setCurrentIndex(current);
  test_choice_->blockSignals(false);
}

int CompareView::testChoice() const { return test_choice_->currentIndex(); }

void CompareView::setStatus(const QString& text) {
  status_->setToolTip(text);
  status_->setText(status_->fontMetrics().elidedText(text, Qt::ElideRight, std::max(40, status_->width())));
}

QString CompareView::statusText() const { return status_->toolTip(); }

void CompareView::setOrientation(const model::DisplayOrientation& o) {
  for (SliceView* v : views_) v->setOrientation(o);
}

bool CompareView::hasMaps() const { return data_ && data_->a; }

void CompareView::setFlicker(bool on) {
  if (flicker_->isChecked() != on) {
    flicker_->setChecked(on);  // re-enters through toggled
    return;
  }
  showingB_ = false;
  if (on && data_ && data_->a) {
    flickerTimer_->start();
    views_[kA]->setBadge(QStringLiteral("A"));
  } else {
    flickerTimer_->stop();
    views_[kA]->setBadge({});
    views_[kA]->setTitle(tr("A: %1").arg(testLabel_));
    if (data_ && data_->a) views_[kA]->setVolume(data_->a);
  }
}

bool CompareView::flickering() const { return flickerTimer_->isActive(); }

void CompareView::recompute() {
  const int i = reference_->currentIndex();
  std::shared_ptr<const CArray> ref = i >= 0 && i < candidates_.size() ? candidates_[i].image : nullptr;
  if (!test_) {
    clear(tr("Run a reconstruction to compare it."));
    return;
  }
  views_[kB]->setTitle(i >= 0 && i < candidates_.size() ? tr("B: %1").arg(candidates_[i].label) : tr("B: reference"));
  ready_ = false;
  setStatus(tr("computing…"));
  const quint64 gen = ++generation_;
  auto* watcher = new QFutureWatcher<std::shared_ptr<const CompareData>>(this);
  connect(watcher, &QFutureWatcher<std::shared_ptr<const CompareData>>::finished, this, [this, watcher, gen] {
    apply(watcher->result(), gen);
    watcher->deleteLater();
  });
  watcher->setFuture(QtConcurrent::run(computeCompare, test_, ref, spacing_));
}

void CompareView::apply(std::shared_ptr<const CompareData> data, quint64 generation) {
  if (generation != generation_) return;  // a newer pair is on its way
  if (!data->problem.isEmpty()) {
    clear(data->problem);
    setStatus(data->problem);
    ready_ = true;
    emit computed();
    return;
  }
  const bool sameShape = data_ && data_->a && data_->a->dim(2) == data->a->dim(2) && data_->a->dim(0) == data->a->dim(0);
  data_ = std::move(data);
  volumeMetrics_ = data_->volume;
  views_[kA]->setVolume(flickering() && showingB_ ? data_->b : data_->a);
  views_[kB]->setVolume(data_->b);
  views_[kError]->setVolume(data_->error);
  views_[kPsnr]->setVolume(data_->psnr);
  if (!sameShape) {
    views_[kA]->setWindow(data_->magnitudeWindow.lo, data_->magnitudeWindow.hi);
    views_[kB]->setWindow(data_->magnitudeWindow.lo, data_->magnitudeWindow.hi);
  }
  views_[kError]->setWindow(data_->errorWindow.lo, data_->errorWindow.hi);
  views_[kPsnr]->setWindow(data_->psnrWindow.lo, data_->psnrWindow.hi);
  const int n = data_->a->dim(2);
  slice_->setEnabled(n > 1);
  slice_->setRange(0, n - 1);
  slice_->setValue(views_[kA]->slice());
  table_->setItem(0, 1, new QTableWidgetItem(pct(data_->volume.percentError)));
  table_->setItem(1, 1, new QTableWidgetItem(db(data_->volume.psnrDb)));
  table_->setItem(2, 1, new QTableWidgetItem(ssim(data_->volume.ssim)));
  updateSliceMetrics();
  setStatus(tr("scale a = %1").arg(data_->volume.scale, 0, 'g', 4));
  ready_ = true;
  emit computed();
}

void CompareView::setSlice(int slice) {
  for (SliceView* v : views_) {
    v->blockSignals(true);
    v->setSlice(slice);
    v->blockSignals(false);
  }
  slice_->blockSignals(true);
  slice_->setValue(slice);
  slice_->blockSignals(false);
  updateSliceMetrics();
}

void CompareView::updateSliceMetrics() {
  if (!data_ || !data_->a) return;
  const int k = views_[kA]->slice();
  sliceLabel_->setText(QStringLiteral("%1 / %2").arg(k + 1).arg(data_->a->dim(2)));
  try {
    const auto m = quality::compare(quality::plane(*data_->test, 2, k), quality::plane(*data_->ref, 2, k));
    table_->setItem(0, 0, new QTableWidgetItem(pct(m.percentError)));
    table_->setItem(1, 0, new QTableWidgetItem(db(m.psnrDb)));
    table_->setItem(2, 0, new QTableWidgetItem(ssim(m.ssim)));
  } catch (const std::exception&) {
    // e.g. a slice outside the object: the reference is all zero there
    for (int r = 0; r < 3; ++r) table_->setItem(r, 0, new QTableWidgetItem(QStringLiteral("—")));
  }
}

void CompareView::onHover(int i, int j, int k) {
  for (SliceView* v : views_) v->setCrosshair(i >= 0 ? std::optional<std::array<int, 3>>({i, j, k}) : std::nullopt);
  if (i < 0 || !data_ || !data_->a) return;
  probe_->setText(tr("x %1  y %2    A %3    B %4    error %5    local PSNR %6 dB")
                      .arg(i)
                      .arg(j)
                      .arg(data_->a->value(i, j, k), 0, 'g', 4)
                      .arg(data_->b->value(i, j, k), 0, 'g', 4)
                      .arg(data_->error->value(i, j, k), 0, 'g', 4)
                      .arg(data_->psnr->value(i, j, k), 0, 'f', 1));
}

QString CompareView::metricsText() const {
  QStringList rows;
  for (int r = 0; r < 3; ++r) {
    auto* h = table_->verticalHeaderItem(r);
    auto* s = table_->item(r, 0);
    auto* v = table_->item(r, 1);
    rows << QStringLiteral("%1: slice %2, volume %3")
                .arg(h ? h->text() : QString(), s ? s->text() : QString(), v ? v->text() : QString());
  }
  return rows.join('\n');
}

}  // namespace larmor::ui
