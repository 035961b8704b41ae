#include "queued_progress.hpp"

#include <QMetaObject>
#include <QPointer>
#include <algorithm>
#include <cmath>

namespace larmor::ui {

Progress queuedProgress(QProgressBar* bar, QLabel* status, CancelToken* token) {
  QPointer<QProgressBar> b(bar);
  QPointer<QLabel> l(status);
  return Progress(
      [b, l](double f, const std::string& stage) {
        const QString s = QString::fromStdString(stage);
        QMetaObject::invokeMethod(
            b.data(),
            [b, l, f, s] {
              if (b) b->setValue(static_cast<int>(std::lround(1000 * std::clamp(f, 0.0, 1.0))));
              if (l) l->setText(s);
            },
            Qt::QueuedConnection);
      },
      token);
}

}  // namespace larmor::ui
