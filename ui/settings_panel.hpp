#pragma once
// The settings dock: edits the engine's ReconSettings (the structs larmor-cli fills from its flags),
// the device and the trajectory file. Groups show only for the methods that use them.
#include <QWidget>
#include <vector>

#include "larmor/backend/backend.hpp"
#include "session.hpp"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSlider;
class QSpinBox;

namespace larmor::ui {

class SettingsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit SettingsPanel(QWidget* parent = nullptr);
  void setState(const SessionState& s);
  SessionState state() const;
  /// The devices the registry found (the CPU first); `whyNoGpu` explains an empty GPU list.
  void setDevices(const std::vector<DeviceInfo>& devices, const QString& whyNoGpu);
  void setRunning(bool running);
  /// λ <-> slider position (log scale over 1e-6 .. 1e2; position 0 is λ = 0).
  static double lambdaFromSlider(int position);
  static int sliderFromLambda(double lambda);
  QSlider* lambdaSlider() const { return lambdaSlider_; }
  QComboBox* methodBox() const { return method_; }
  bool liveLambda() const;

 signals:
  void settingsChanged();
  /// The λ slider moved (live re-solve when the method is CG).
  void lambdaDragged(double lambda);
  void trajectoryChanged(const QString& path);
  void runRequested();
  void cancelRequested();
  void copyCliRequested();

 private:
  void updateVisibility();
  void changed();
  void setLambdaText(double lambda);

  bool loading_ = false;
  double lambdaValue_ = 0;  ///< the λ last shown (the text field may hold more digits than the slider)
  QComboBox* method_ = nullptr;
  QComboBox* device_ = nullptr;
  QLabel* deviceNote_ = nullptr;
  QLineEdit* trajectory_ = nullptr;
  QComboBox* combine_ = nullptr;
  QSpinBox* matrix_[3] = {nullptr, nullptr, nullptr};
  QGroupBox* nufftGroup_ = nullptr;
  QSpinBox* width_ = nullptr;
  QDoubleSpinBox* sigma_ = nullptr;
  QComboBox* dcf_ = nullptr;
  QSpinBox* dcfIters_ = nullptr;
  QCheckBox* kernelTable_ = nullptr;
  QComboBox* spreader_ = nullptr;
  QComboBox* trig_ = nullptr;
  QGroupBox* grappaGroup_ = nullptr;
  QComboBox* calibration_ = nullptr;
  QSpinBox* kernelPe_ = nullptr;
  QSpinBox* kernelRo_ = nullptr;
  QSpinBox* blocks_ = nullptr;
  QSpinBox* segment_ = nullptr;
  QLineEdit* chi_ = nullptr;
  QDoubleSpinBox* eta_ = nullptr;
  QDoubleSpinBox* kappa_ = nullptr;
  QSpinBox* outCoils_ = nullptr;
  QGroupBox* iterGroup_ = nullptr;
  QComboBox* regularizer_ = nullptr;
  QSlider* lambdaSlider_ = nullptr;
  QLineEdit* lambda_ = nullptr;
  QCheckBox* live_ = nullptr;
  QSpinBox* iterations_ = nullptr;
  QLineEdit* tolerance_ = nullptr;
  QComboBox* fhd_ = nullptr;
  QLineEdit* reference_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* cancel_ = nullptr;
};

}  // namespace larmor::ui
