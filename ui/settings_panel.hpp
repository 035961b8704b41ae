#pragma once
// The settings dock: edits the engine's ReconSettings (the structs larmor-cli fills from its flags), the
// device and the trajectory file. Its widgets are generated from the engine's settings table
// (larmor/recon/settings_table.hpp): one group per table group, one row per setting with the table's label,
// range, choices and help (tooltip); rows show only for the methods that use them and are enabled only where
// they apply. The λ row is the one hand-made editor: a log slider for live re-solves beside the value.
#include <QWidget>
#include <map>
#include <functional>
#include <vector>

#include "larmor/backend/backend.hpp"
#include "larmor/recon/settings_table.hpp"
#include "session.hpp"

class QCheckBox;
class QComboBox;
class QFormLayout;
class QGroupBox;
class QLabel;
class QLayout;
class QLineEdit;
class QPushButton;
class QScrollArea;
class QSlider;

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
  /// The temporal λ's slider position <-> value (log scale over 1e-6 .. 1e2; position 0 is 0).
  static double lambdaFromSlider(int position);
  static int sliderFromLambda(double lambda);
  /// The λ slider's position <-> λ: a log scale over the two decades around the λ it was last centred on
  /// (kLambdaWindowDecades; within 1e-6 .. 1e2), 800 steps. It is centred again on the new λ when the slider
  /// is released and when a λ is typed or loaded, so a drag is fine and a long way is several drags.
  double lambdaAt(int position) const;
  int positionOf(double lambda) const;
  /// The decades the λ slider spans now, [lo, hi] as log10 λ.
  std::pair<double, double> lambdaSliderDecades() const;
  /// Moves the λ slider to `lambda` as a drag would (live re-solve), the window first centred between the
  /// current λ and it (the presenter's script).
  void slideLambdaTo(double lambda);
  QSlider* lambdaSlider() const { return lambdaSlider_; }
  /// Scrolls the settings so that the λ row (slider, value, live) and the temporal λ row under it, where shown,
  /// lie inside the visible part (the presenter's live-λ steps, a small screen). slideLambdaTo calls it.
  void revealLambda();
  /// The width the panel needs to show its widest row whole beside the vertical scroll bar (it grows with the
  /// zoom's type; the dock may be narrower at zoom 1 on a 1024 px screen, where a row's fields give way).
  int fittingWidth() const;
  /// The temporal λ's slider (dynamic.temporal_lambda, the same log scale as λ's): shown with the dynamic
  /// group, for cs on data with frames; enabled unless the frames are reconstructed independently.
  QSlider* temporalLambdaSlider() const { return temporalSlider_; }
  /// Moves the temporal λ slider to `lambda` as a drag would (the series solved again), in view (the presenter's script).
  void slideTemporalLambdaTo(double lambda);
  /// How many frames the data have: the dynamic group shows only for a series (two or more).
  void setSeriesFrames(int frames);
  QComboBox* methodBox() const { return method_; }
  /// The editor widget of a setting by its table key ("nufft.width"); null when it has none.
  QWidget* editor(const std::string& key) const;
  bool liveLambda() const;
  /// Greys out the methods that cannot apply to the loaded data; `problems` maps a method to why (its
  /// tooltip). Methods not in the map are enabled.
  void setMethodProblems(const std::map<recon::Method, QString>& problems);
  /// Whether the method list offers `m` (enabled), and the tooltip it carries.
  bool methodEnabled(recon::Method m) const;
  /// Whether the method is left out of the list (it cannot apply to the data).
  bool methodHidden(recon::Method m) const;
  /// Where the trajectory file dialog starts while its field is empty: the data's folder.
  void setDataFolder(const QString& folder);
  QString dataFolder() const;
  QString methodToolTip(recon::Method m) const;

 signals:
  void settingsChanged();
  /// The λ slider moved (live re-solve when the method is CG).
  void lambdaDragged(double lambda);
  /// The temporal λ slider moved (or its value was typed): the series is reconstructed again.
  void temporalLambdaDragged(double lambda);
  void trajectoryChanged(const QString& path);
  void runRequested();
  void cancelRequested();
  void copyCliRequested();

 private:
  /// One generated row: the setting, its field widget, and how to show and read a value.
  struct Row {
    const recon::settings::Setting* setting = nullptr;
    QFormLayout* form = nullptr;
    QWidget* field = nullptr;
    std::function<void(const recon::settings::Value&)> show;
    std::function<recon::settings::Value(const recon::settings::Value& previous)> read;
  };
  /// The scrolled content: a group a settings group, a row a user setting, the trajectory and device rows.
  QWidget* makeContent();
  QLayout* makeButtons();  ///< Run, Cancel, CLI
  Row makeRow(const recon::settings::Setting& s);
  // makeRow's field of each kind of setting: row.field, row.show and row.read.
  void choiceField(Row& row, const recon::settings::Setting& s);
  void integerField(Row& row, const recon::settings::Setting& s);
  void realField(Row& row, const recon::settings::Setting& s);
  void flagField(Row& row, const recon::settings::Setting& s);
  void textField(Row& row, const recon::settings::Setting& s);
  void dimsField(Row& row, const recon::settings::Setting& s, const QString& tip);
  QWidget* lambdaEditor(Row& row);
  QWidget* temporalLambdaEditor(Row& row);
  void updateVisibility();
  void changed();
  void setLambdaText(double lambda);
  void fixLambdaRule();

  bool loading_ = false;
  SessionState shown_;      ///< the state last set; settings without a widget keep its values
  double lambdaCentreLog_ = -3;  ///< log10 of the λ the slider's window is centred on
  void centreLambdaSlider(double lambda);
  double lambdaValue_ = 0;  ///< the λ last shown (the text field may hold more digits than the slider)
  std::vector<Row> rows_;
  std::vector<std::pair<std::string, QGroupBox*>> groups_;
  QComboBox* method_ = nullptr;
  QComboBox* device_ = nullptr;
  QLabel* deviceNote_ = nullptr;
  QLineEdit* trajectory_ = nullptr;
  QScrollArea* scroll_ = nullptr;
  QWidget* lambdaRow_ = nullptr;    ///< λ's editor: the slider, the value and "live"
  QWidget* temporalRow_ = nullptr;  ///< the temporal λ's editor
  QSlider* lambdaSlider_ = nullptr;
  QLineEdit* lambda_ = nullptr;
  QCheckBox* live_ = nullptr;
  QSlider* temporalSlider_ = nullptr;
  QLineEdit* temporalEdit_ = nullptr;
  double temporalValue_ = 0;
  int seriesFrames_ = 1;
  QPushButton* run_ = nullptr;
  QPushButton* cancel_ = nullptr;
};

}  // namespace larmor::ui
