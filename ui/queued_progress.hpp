#pragma once
// A Progress for work on a worker thread that a dialog shows: each report is queued to the GUI thread and sets
// the dialog's progress bar (fraction x 1000) and status line; reports that arrive after the dialog is gone are
// dropped. The token is the work's Cancel (the dialog's Cancel button sets it).
#include <QLabel>
#include <QProgressBar>

#include "larmor/util/progress.hpp"

namespace larmor::ui {

Progress queuedProgress(QProgressBar* bar, QLabel* status, CancelToken* token);

}  // namespace larmor::ui
