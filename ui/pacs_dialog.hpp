#pragma once
// File ▸ Export ▸ Send to PACS…: the DICOM nodes of the settings (add, remove, "Verify (C-ECHO)") and the
// sending of a DICOM series with a progress bar and one result row per file. The network work (the engine's
// io::echo / io::send, larmor/io/dicom_send.hpp) runs on a thread of its own, so the window never freezes;
// Cancel stops between files, and every network wait is bounded by the node's timeout. The node list is the
// Qt-free model::DicomNodeList (ui/model/dicom_nodes.hpp), kept in QSettings under "pacs/nodes".
#include <QDialog>
#include <QFutureWatcher>
#include <QStringList>
#include <functional>
#include <memory>
#include <utility>

#include "dicom_nodes.hpp"
#include "larmor/io/dicom_send.hpp"
#include "larmor/util/progress.hpp"

class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QTemporaryDir;

namespace larmor::ui {

class PacsDialog : public QDialog {
  Q_OBJECT
 public:
  /// `files`: the DICOM files to send; `what`: a few words on what they are ("the shown image, 3 slices").
  explicit PacsDialog(const QStringList& files, const QString& what, QWidget* parent = nullptr);
  ~PacsDialog() override;  ///< cancels a send in progress and waits for it (bounded by the timeouts)

  /// The dialog owns `dir` (a temporary series folder) and removes it when it closes.
  void keepTemporaryFolder(std::unique_ptr<QTemporaryDir> dir);

  // --- actions (the buttons; public for the GUI tests) ---------------------------------------------
  /// Adds (or replaces) a node and stores the list; false with the error in statusText() when invalid.
  /// `callingAe`: our AE title for this node (empty: LARMOR).
  bool addNode(const QString& name, const QString& nodeText, int timeoutSeconds = 10, const QString& callingAe = {});
  void removeSelectedNode();
  void selectNode(int index);
  int selectedNode() const;
  /// C-ECHO to the selected node, on the worker thread.
  void verify();
  /// C-STORE of the files to the selected node, on the worker thread.
  void send();
  void cancel();

  // --- state --------------------------------------------------------------------------------------
  bool busy() const;
  const model::DicomNodeList& nodes() const { return nodes_; }
  const QStringList& files() const { return files_; }
  QString statusText() const;
  /// The last finished send (null before one finished).
  const io::SendReport* lastReport() const { return report_.get(); }
  QTableWidget* resultTable() const { return table_; }
  QProgressBar* progressBar() const { return bar_; }

 signals:
  void verifyFinished(bool ok, const QString& message);
  void sendFinished(bool allSent, const QString& summary);

 private:
  struct Outcome {
    bool ok = false;
    QString message;
    std::shared_ptr<io::SendReport> report;  ///< sends only
  };
  /// The "DICOM nodes" group: the stored nodes, the fields of a new one, Add / Remove / Verify.
  QWidget* makeNodesBox();
  void start(const QString& label, std::function<Outcome(const Progress&)> work, bool isSend);
  void finished();
  void setStatus(const QString& text, bool error);
  void refreshNodes();
  void saveNodes() const;
  void updateButtons();
  void showReport(const io::SendReport& r);

  QStringList files_;
  model::DicomNodeList nodes_;
  std::unique_ptr<QTemporaryDir> tempDir_;
  std::shared_ptr<CancelToken> token_;
  bool sending_ = false;
  std::shared_ptr<io::SendReport> report_;
  QFutureWatcher<Outcome>* watcher_ = nullptr;

  QListWidget* list_ = nullptr;
  QLineEdit *name_ = nullptr, *node_ = nullptr, *callingAe_ = nullptr;
  QSpinBox* timeout_ = nullptr;
  QPushButton *add_ = nullptr, *remove_ = nullptr, *verify_ = nullptr, *send_ = nullptr, *cancel_ = nullptr;
  QProgressBar* bar_ = nullptr;
  QLabel* status_ = nullptr;
  QTableWidget* table_ = nullptr;
};

/// Export ▸ Send to PACS…: `write` writes the DICOM series into the temporary folder it is given (the window's
/// export: every frame by default) and returns its files and a few words on them; the dialog opens on them
/// (window-modal, not blocking). Shows why not when `write` throws or this build has no DICOM. Returns the
/// dialog (null when it did not open).
PacsDialog* openSendToPacs(QWidget* parent, const std::function<std::pair<QStringList, QString>(const QString&)>& write);

}  // namespace larmor::ui
