#pragma once
// File ▸ Query PACS…: find a patient's series on a PACS (C-FIND), retrieve the chosen one (C-GET) and open it
// as the Compare tab's reference B, so that the current reconstruction is compared with the scanner's own
// images of the same scan. The node comes from the Send to PACS list (QSettings "pacs/nodes") or is typed as
// AET@host:port. The network work (the engine's io::query / io::retrieve, larmor/io/dicom_query.hpp) runs on
// QThreadPool::globalInstance(), so the window never freezes; Cancel stops between messages, and every wait is
// bounded by the node's timeout. The retrieved series goes into a temporary folder the dialog owns; its image
// is read into memory as the reference, so the folder goes when the dialog closes.
#include <QDialog>
#include <QFutureWatcher>
#include <functional>
#include <memory>
#include <vector>

#include "dicom_nodes.hpp"
#include "larmor/io/dicom_query.hpp"
#include "larmor/util/progress.hpp"

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QTemporaryDir;

namespace larmor::ui {

class QueryDialog : public QDialog {
  Q_OBJECT
 public:
  /// `openReference(file)`: shows a retrieved series (one of its .dcm files) as the reference; false when it
  /// could not (it shows why).
  explicit QueryDialog(std::function<bool(const QString&)> openReference, QWidget* parent = nullptr);
  ~QueryDialog() override;  ///< cancels work in progress and waits for it (bounded by the timeouts)

  // --- actions (the buttons; public for the GUI tests) ---------------------------------------------
  /// The node to ask: a stored node's or typed "AET@host:port" (then with `timeoutSeconds`).
  void setNode(const QString& nodeText, int timeoutSeconds = 10);
  void setPatientId(const QString& id);
  /// C-FIND of the series matching the filters, on the worker thread.
  void search();
  /// C-GET of the selected row's series into the dialog's folder, then openReference, on the worker thread.
  void retrieveSelected();
  void cancel();

  // --- state --------------------------------------------------------------------------------------
  bool busy() const;
  QString statusText() const;
  const std::vector<io::QueryRow>& rows() const { return rows_; }
  QTableWidget* resultTable() const { return table_; }
  /// The folder of the last retrieved series ("" before one was).
  QString retrievedFolder() const { return retrieved_; }

 signals:
  void searchFinished(bool ok, const QString& message);
  void retrieveFinished(bool ok, const QString& message);

 private:
  struct Outcome {
    bool ok = false;
    QString message;
    std::vector<io::QueryRow> rows;  ///< searches
    QString folder;                  ///< retrieves: where the series is
  };
  QWidget* makeFiltersBox();
  io::DicomNode node() const;  ///< throws a one-line Error when the text is not a node
  void start(const QString& label, std::function<Outcome(const Progress&)> work, bool isRetrieve);
  void finished();
  void showRows();
  void setStatus(const QString& text, bool error);
  void updateButtons();

  std::function<bool(const QString&)> openReference_;
  model::DicomNodeList nodes_;
  std::vector<io::QueryRow> rows_;
  std::unique_ptr<QTemporaryDir> folder_;
  QString retrieved_;
  int retrieves_ = 0;
  bool retrieving_ = false;
  std::shared_ptr<CancelToken> token_;
  QFutureWatcher<Outcome>* watcher_ = nullptr;

  QComboBox* node_ = nullptr;
  QSpinBox* timeout_ = nullptr;
  QLineEdit *patientId_ = nullptr, *patientName_ = nullptr, *studyDate_ = nullptr, *modality_ = nullptr;
  QPushButton *search_ = nullptr, *retrieve_ = nullptr, *cancel_ = nullptr;
  QProgressBar* bar_ = nullptr;
  QLabel* status_ = nullptr;
  QTableWidget* table_ = nullptr;
};

/// File ▸ Query PACS…: opens the dialog (window-modal, not blocking) and returns it.
QueryDialog* openQueryPacs(QWidget* parent, std::function<bool(const QString&)> openReference);

}  // namespace larmor::ui
