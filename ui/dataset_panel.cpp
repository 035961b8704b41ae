#include "dataset_panel.hpp"

#include "method_choice.hpp"

#include <QAbstractTableModel>
#include <algorithm>
#include <array>
#include <cmath>
#include <QFileInfo>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLegendMarker>
#include <QtCharts/QLineSeries>
#include <QtCharts/QScatterSeries>
#include <QtCharts/QValueAxis>

namespace larmor::ui {

/// A chart view whose two value axes keep one scale (k-space is isotropic: a circle stays a circle).
class AspectChartView : public QChartView {
 public:
  using QChartView::QChartView;
  void setEqualAspect(double xlo, double xhi, double ylo, double yhi) {
    equal_ = true;
    range_ = {xlo, xhi, ylo, yhi};
    fit();
  }
  void setFreeAspect() { equal_ = false; }

 protected:
  void resizeEvent(QResizeEvent* e) override {
    QChartView::resizeEvent(e);
    fit();
  }

 private:
  void fit() {
    if (!equal_ || !chart()) return;
    const auto axesX = chart()->axes(Qt::Horizontal), axesY = chart()->axes(Qt::Vertical);
    auto* ax = axesX.isEmpty() ? nullptr : qobject_cast<QValueAxis*>(axesX.front());
    auto* ay = axesY.isEmpty() ? nullptr : qobject_cast<QValueAxis*>(axesY.front());
    const QRectF plot = chart()->plotArea();
    if (!ax || !ay || plot.width() < 10 || plot.height() < 10) return;
    // Widen whichever range is too narrow for the plot area's shape, around its centre.
    const double w = range_[1] - range_[0], h = range_[3] - range_[2];
    const double unitsPerPixel = std::max(w / plot.width(), h / plot.height());
    const double cx = 0.5 * (range_[0] + range_[1]), cy = 0.5 * (range_[2] + range_[3]);
    ax->setRange(cx - 0.5 * unitsPerPixel * plot.width(), cx + 0.5 * unitsPerPixel * plot.width());
    ay->setRange(cy - 0.5 * unitsPerPixel * plot.height(), cy + 0.5 * unitsPerPixel * plot.height());
  }
  bool equal_ = false;
  std::array<double, 4> range_{};
};

/// The acquisitions as a table; the engine decodes the flags (describeAcquisitionFlags).
class AcquisitionModel : public QAbstractTableModel {
 public:
  using QAbstractTableModel::QAbstractTableModel;
  void setDataset(std::shared_ptr<const Dataset> d) {
    beginResetModel();
    d_ = std::move(d);
    endResetModel();
  }
  int rowCount(const QModelIndex& parent = {}) const override {
    return parent.isValid() || !d_ ? 0 : static_cast<int>(d_->acquisitions.size());
  }
  int columnCount(const QModelIndex& = {}) const override { return 8; }
  QVariant headerData(int section, Qt::Orientation o, int role) const override {
    static const char* names[] = {"scan", "pe1", "pe2", "slice", "rep", "samples", "coils", "flags"};
    if (role != Qt::DisplayRole || o != Qt::Horizontal || section < 0 || section >= 8) return {};
    return QString::fromLatin1(names[section]);
  }
  QVariant data(const QModelIndex& index, int role) const override {
    if (!d_ || !index.isValid()) return {};
    const auto& a = d_->acquisitions[static_cast<std::size_t>(index.row())];
    if (role == Qt::DisplayRole) {
      switch (index.column()) {
        case 0: return a.scanCounter;
        case 1: return a.pe1;
        case 2: return a.pe2;
        case 3: return a.slice;
        case 4: return a.repetition;
        case 5: return a.samples;
        case 6: return a.channels;
        case 7: {
          const std::string f = describeAcquisitionFlags(a.flags);
          return f.empty() ? QStringLiteral("-") : QString::fromStdString(f);
        }
      }
    }
    if (role == Qt::ForegroundRole && index.column() == 7) {
      const std::string f = describeAcquisitionFlags(a.flags);
      if (f.find("calibration") != std::string::npos) return QColor(255, 176, 59);
    }
    if (role == Qt::TextAlignmentRole && index.column() < 7) return int(Qt::AlignRight | Qt::AlignVCenter);
    return {};
  }

 private:
  std::shared_ptr<const Dataset> d_;
};

DatasetPanel::DatasetPanel(QWidget* parent) : QWidget(parent) {
  tabs_ = new QTabWidget;
  auto* headerPage = new QWidget;
  auto* headerLayout = new QVBoxLayout(headerPage);
  form_ = new QFormLayout;
  form_->setLabelAlignment(Qt::AlignRight);
  form_->setHorizontalSpacing(10);
  form_->setVerticalSpacing(3);
  empty_ = new QLabel(tr("No data loaded.\nFile ▸ Open, drop a file here, or File ▸ New phantom."));
  empty_->setWordWrap(true);
  headerLayout->addWidget(empty_);
  headerLayout->addLayout(form_);
  headerLayout->addStretch(1);

  table_ = new QTableView;
  model_ = new AcquisitionModel(this);
  table_->setModel(model_);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->setDefaultSectionSize(20);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setAlternatingRowColors(true);

  chartView_ = new AspectChartView;
  chartView_->setRenderHint(QPainter::Antialiasing);
  chartView_->setMinimumHeight(220);

  // The sampling plot goes first under the header: it is the quickest way to see what the data are.
  auto* split = new QWidget;
  auto* splitLayout = new QVBoxLayout(split);
  splitLayout->setContentsMargins(0, 0, 0, 0);
  splitLayout->addWidget(headerPage);
  splitLayout->addWidget(chartView_, 1);
  tabs_->addTab(split, tr("Header"));
  tabs_->addTab(table_, tr("Acquisitions"));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(tabs_);
  auto* chart = new QChart;
  chart->setTheme(QChart::ChartThemeDark);
  chart->setBackgroundRoundness(0);
  chart->legend()->hide();
  chart->setTitle(tr("Sampling"));
  chartView_->setChart(chart);
}

DatasetPanel::~DatasetPanel() = default;

void DatasetPanel::setDataset(std::shared_ptr<const Dataset> d) {
  dataset_ = std::move(d);
  model_->setDataset(dataset_);
  while (form_->rowCount() > 0) form_->removeRow(0);
  empty_->setVisible(!dataset_);
  if (!dataset_) return;
  fillHeader(*dataset_);
  fillTrajectory(*dataset_);
  tabs_->setTabText(1, tr("Acquisitions (%1)").arg(dataset_->acquisitions.size()));
}

void DatasetPanel::fillHeader(const Dataset& d) {
  const Header& h = d.header;
  auto row = [&](const QString& label, const QString& value) {
    auto* v = new QLabel(value);
    v->setTextInteractionFlags(Qt::TextSelectableByMouse);
    v->setWordWrap(true);
    form_->addRow(label, v);
  };
  auto dims = [](const index_t* m) { return QStringLiteral("%1 × %2 × %3").arg(m[0]).arg(m[1]).arg(m[2]); };
  auto fov = [](const float* f) {
    return QStringLiteral("%1 × %2 × %3 mm").arg(f[0], 0, 'g', 4).arg(f[1], 0, 'g', 4).arg(f[2], 0, 'g', 4);
  };
  row(tr("Source"), d.source == "simulated" ? tr("simulated phantom") : QFileInfo(QString::fromStdString(d.source)).fileName());
  row(tr("Trajectory"), QString::fromStdString(toString(h.trajectory)) + (h.is3D() ? tr(", 3D") : tr(", 2D")));
  row(tr("Encoded"), dims(h.encoded) + QStringLiteral("   ") + fov(h.encodedFovMm));
  row(tr("Recon"), dims(h.recon) + QStringLiteral("   ") + fov(h.reconFovMm));
  row(tr("Coils / slices"), QStringLiteral("%1 / %2").arg(h.coils).arg(h.slices));
  // From the sampling mask (method_choice.hpp): R and calibration lines for regular undersampling, the
  // sampled share and the fully sampled centre for Poisson-disc-like sampling (files may state neither).
  row(tr("Sampling"), QString::fromStdString(model::describeSampling(d).summary()));
  row(tr("k-space"), QString::fromStdString(d.kspace.shape().str()));
  row(tr("Acquisitions"), d.acquisitions.empty() ? tr("none stored (simulated)")
                                                 : QStringLiteral("%1 (+%2 noise scans)").arg(d.acquisitions.size()).arg(d.noiseScans));
  if (h.systemFieldT > 0) row(tr("Field"), QStringLiteral("%1 T").arg(h.systemFieldT));
  if (!h.deviceDescription.empty()) row(tr("Scanner"), QString::fromStdString(h.deviceDescription));
  if (!h.protocolName.empty()) row(tr("Protocol"), QString::fromStdString(h.protocolName));
  if (!h.patientName.empty()) row(tr("Patient"), QString::fromStdString(h.patientName));
  row(tr("Reference"), d.reference ? tr("yes (truth for compare)") : tr("none"));
}

namespace {

const QColor kImagingColor(110, 168, 220), kCalibColor(255, 176, 59);

/// What the sampling chart shows: its series (not yet added), title, axis titles and ranges.
struct SamplingPlot {
  QString title, xTitle, yTitle;
  double range[4] = {-1, 1, -1, 1};  ///< x from, x to, y from, y to
  bool equal = false;                ///< one scale on both axes (k-space)
  bool anyCalib = false;             ///< a calibration (ACS) point or line is shown
  QList<QAbstractSeries*> series;
};

/// 3D Cartesian: which (pe1, pe2) lines were acquired; each point is a whole readout.
SamplingPlot cartesian3dPlot(const Dataset& d, bool hasCalib) {
  const index_t n1 = d.sampled.shape()[0], n2 = d.sampled.shape()[1];
  SamplingPlot p{DatasetPanel::tr("Sampled lines (ky × kz)"), "ky (pe1)", "kz (pe2)"};
  auto* img = new QScatterSeries;
  auto* cal = new QScatterSeries;
  for (auto* sc : {img, cal}) {
    sc->setMarkerSize(3.0);
    sc->setBorderColor(Qt::transparent);
  }
  img->setColor(kImagingColor);
  cal->setColor(kCalibColor);
  const index_t step = std::max<index_t>(1, (n1 * n2) / 20000);
  for (index_t i = 0; i < n1 * n2; i += step) {
    if (!d.sampled[i]) continue;
    const bool c = hasCalib && d.calibration[i];
    p.anyCalib |= c;
    (c ? cal : img)->append(static_cast<double>(i % n1 - n1 / 2), static_cast<double>(i / n1 - n2 / 2));
  }
  p.series << img << cal;
  p.range[0] = -n1 / 2.0 - 1, p.range[1] = n1 / 2.0, p.range[2] = -n2 / 2.0 - 1, p.range[3] = n2 / 2.0;
  return p;
}

/// 2D Cartesian: each acquired phase-encoding line drawn along the readout, calibration lines in orange.
SamplingPlot cartesian2dPlot(const Dataset& d, bool hasCalib) {
  const index_t n1 = d.sampled.shape()[0];
  SamplingPlot p{DatasetPanel::tr("Sampled lines (kx × ky)"), "kx", "ky (pe1)"};
  const double half = d.kspace.shape()[0] / 2.0;
  const QPen imagingPen(kImagingColor, 1), calibPen(kCalibColor, 1.5);
  for (index_t l = 0; l < n1; ++l) {
    if (!d.sampled[l]) continue;
    const bool c = hasCalib && d.calibration[l];
    p.anyCalib |= c;
    auto* line = new QLineSeries;
    line->setPen(c ? calibPen : imagingPen);
    const double ky = static_cast<double>(l - n1 / 2);
    line->append(-half, ky);
    line->append(half - 1, ky);
    p.series << line;
  }
  p.range[0] = -half, p.range[1] = half, p.range[2] = -n1 / 2.0 - 1, p.range[3] = n1 / 2.0;
  return p;
}

/// Non-Cartesian: the trajectory's points (at most about 12000), on equal axes.
SamplingPlot trajectoryPlot(const Dataset& d) {
  SamplingPlot p{DatasetPanel::tr("Trajectory (cycles / FOV)"), "kx", "ky"};
  auto* pts = new QScatterSeries;
  pts->setMarkerSize(2.5);
  pts->setBorderColor(Qt::transparent);
  pts->setColor(kImagingColor);
  const index_t points = d.trajectory.size() / 3;
  const index_t step = std::max<index_t>(1, points / 12000);
  double kmax = 1;
  for (index_t q = 0; q < points; q += step) {
    pts->append(d.trajectory[3 * q], d.trajectory[3 * q + 1]);
    kmax = std::max({kmax, std::abs(static_cast<double>(d.trajectory[3 * q])),
                     std::abs(static_cast<double>(d.trajectory[3 * q + 1]))});
  }
  p.series << pts;
  kmax = std::ceil(kmax * 1.02);
  p.range[0] = p.range[2] = -kmax, p.range[1] = p.range[3] = kmax;
  p.equal = true;
  return p;
}

SamplingPlot samplingPlot(const Dataset& d) {
  if (d.header.trajectory == TrajectoryKind::Cartesian && d.sampled.size() > 0) {
    const bool hasCalib = d.calibration.size() == d.sampled.size();
    return d.sampled.shape()[1] > 1 ? cartesian3dPlot(d, hasCalib) : cartesian2dPlot(d, hasCalib);
  }
  if (d.trajectory.size() >= 3) return trajectoryPlot(d);
  return SamplingPlot{DatasetPanel::tr("Sampling: no trajectory stored")};
}

/// Value axes with ticks at round numbers through 0 (-64, 0, 64: not -129, -65, -1) over the plot's ranges,
/// attached to every series of the chart.
void addAxes(QChart* chart, const SamplingPlot& p) {
  auto* ax = new QValueAxis;
  auto* ay = new QValueAxis;
  ax->setTitleText(p.xTitle);
  ay->setTitleText(p.yTitle);
  auto niceStep = [](double span) {
    const double raw = std::max(1.0, span / 4.0), p10 = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
      if (m * p10 >= raw) return m * p10;
    return 10 * p10;
  };
  for (QValueAxis* a : {ax, ay}) {
    a->setLabelFormat("%g");
    a->setTickType(QValueAxis::TicksDynamic);
    a->setTickAnchor(0);
    a->setGridLineColor(QColor(60, 66, 76));
  }
  ax->setTickInterval(niceStep(p.range[1] - p.range[0]));
  ay->setTickInterval(niceStep(p.range[3] - p.range[2]));
  ax->setRange(p.range[0], p.range[1]);
  ay->setRange(p.range[2], p.range[3]);
  chart->addAxis(ax, Qt::AlignBottom);
  chart->addAxis(ay, Qt::AlignLeft);
  for (QAbstractSeries* sr : chart->series()) {
    sr->attachAxis(ax);
    sr->attachAxis(ay);
  }
}

}  // namespace

void DatasetPanel::fillTrajectory(const Dataset& d) {
  QChart* chart = chartView_->chart();
  chart->removeAllSeries();
  for (QAbstractAxis* a : chart->axes()) {
    chart->removeAxis(a);
    delete a;
  }
  auto* legendImaging = new QLineSeries;  // legend entries (and the 3D/trajectory points' colours)
  legendImaging->setName(tr("imaging"));
  legendImaging->setPen(QPen(kImagingColor, 2));
  auto* legendCalib = new QLineSeries;
  legendCalib->setName(tr("calibration (ACS)"));
  legendCalib->setPen(QPen(kCalibColor, 2));
  const SamplingPlot p = samplingPlot(d);
  chart->setTitle(p.title);
  for (QAbstractSeries* sr : p.series) chart->addSeries(sr);
  chart->addSeries(legendImaging);
  if (p.anyCalib) chart->addSeries(legendCalib);
  addAxes(chart, p);
  // Only the two named series appear in the legend; the per-line series are anonymous.
  for (QLegendMarker* m : chart->legend()->markers())
    m->setVisible(m->series() == legendImaging || m->series() == legendCalib);
  chart->legend()->setVisible(true);
  chart->legend()->setAlignment(Qt::AlignBottom);
  auto* view = static_cast<AspectChartView*>(chartView_);
  if (p.equal) view->setEqualAspect(p.range[0], p.range[1], p.range[2], p.range[3]);
  else view->setFreeAspect();
}

}  // namespace larmor::ui
