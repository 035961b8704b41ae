#include "worker.hpp"

#include <QFutureWatcher>
#include <QPointer>
#include <QThreadPool>
#include <QtConcurrent/QtConcurrentRun>

#include "larmor/util/cancel_scope.hpp"

namespace larmor::ui {

Worker::Worker(QObject* parent) : QObject(parent) {
  // One thread: tasks run in order and never share the backend (the engine parallelises inside).
  pool_ = new QThreadPool(this);
  pool_->setMaxThreadCount(1);
  pool_->setExpiryTimeout(-1);
  watcher_ = new QFutureWatcher<TaskOutcome>(this);
  connect(watcher_, &QFutureWatcher<TaskOutcome>::finished, this, &Worker::onFinished);
}

Worker::~Worker() {
  queue_.clear();
  if (token_) token_->cancel();
  watcher_->disconnect(this);
  watcher_->waitForFinished();
  pool_->waitForDone();
}

quint64 Worker::restart(Task task) {
  queue_.clear();
  const quint64 id = nextId_++;
  queue_.push_back({id, std::move(task)});
  if (running_) {
    if (token_) token_->cancel();  // startNext() runs when the cancelled task has stopped
  } else {
    startNext();
  }
  return id;
}

quint64 Worker::enqueue(Task task) {
  const quint64 id = nextId_++;
  queue_.push_back({id, std::move(task)});
  if (!running_) startNext();
  return id;
}

void Worker::cancel() {
  queue_.clear();
  if (running_ && token_) token_->cancel();
}

void Worker::startNext() {
  if (queue_.empty()) {
    emit idle();
    return;
  }
  Queued next = std::move(queue_.front());
  queue_.pop_front();
  running_ = next.id;
  runningTask_ = next.task;
  token_ = std::make_shared<CancelToken>();
  const quint64 id = next.id;
  QPointer<Worker> self(this);
  // Progress arrives on the worker thread; it is posted to the GUI thread (a queued call on `this`).
  Progress progress(
      [self, id](double fraction, const std::string& stage) {
        if (!self) return;
        const QString text = QString::fromStdString(stage);
        QMetaObject::invokeMethod(
            self.data(), [self, id, fraction, text] {
              if (self && self->running_ == id) emit self->progress(id, fraction, text);
            },
            Qt::QueuedConnection);
      },
      token_.get());
  auto token = token_;
  auto work = next.task.work;
  emit started(id, next.task.kind, next.task.label);
  watcher_->setFuture(QtConcurrent::run(pool_, [work, progress, token]() -> TaskOutcome {
    TaskOutcome out;
    try {
      const CancelScope cancel(progress);  // also inside single long calls (the exact DFT)
      out.output = work(progress);
      // A task that finished its work after Cancel was pressed still counts as cancelled: the user
      // asked for it to stop and the result may belong to settings that are no longer shown.
      if (token->cancelled()) out.cancelled = true;
    } catch (const Cancelled&) {
      out.cancelled = true;
    } catch (const std::exception& e) {
      out.error = QString::fromStdString(e.what());
    } catch (...) {
      out.error = QStringLiteral("unknown error");
    }
    return out;
  }));
}

void Worker::onFinished() {
  const TaskOutcome out = watcher_->result();
  const quint64 id = running_;
  const Task task = runningTask_;
  running_ = 0;
  runningTask_ = Task{};
  token_.reset();
  if (out.cancelled) emit cancelled(id, task.kind);
  else if (!out.error.isEmpty()) emit failed(id, task.kind, out.error);
  else emit succeeded(id, task.kind, task.tag, out.output);
  // A receiver may already have started the next task (restart() from a slot).
  if (!running_) startNext();
}

}  // namespace larmor::ui
