#pragma once
// The dataset dock: header summary, the acquisition table (ISMRMRD flags decoded by the engine) and a
// plot of the sampling: Cartesian lines (calibration lines highlighted) or the non-Cartesian trajectory.
#include <QWidget>
#include <memory>

#include "larmor/data/dataset.hpp"

class QFormLayout;
class QLabel;
class QTableView;
class QTabWidget;
class QChartView;
class QChart;

namespace larmor::ui {

class AcquisitionModel;

class DatasetPanel : public QWidget {
  Q_OBJECT
 public:
  explicit DatasetPanel(QWidget* parent = nullptr);
  ~DatasetPanel() override;
  void setDataset(std::shared_ptr<const Dataset> d);
  QTabWidget* tabs() const { return tabs_; }

 private:
  void fillHeader(const Dataset& d);
  void fillTrajectory(const Dataset& d);

  QTabWidget* tabs_ = nullptr;
  QFormLayout* form_ = nullptr;
  QLabel* empty_ = nullptr;
  QTableView* table_ = nullptr;
  AcquisitionModel* model_ = nullptr;
  QChartView* chartView_ = nullptr;
  std::shared_ptr<const Dataset> dataset_;
};

}  // namespace larmor::ui
