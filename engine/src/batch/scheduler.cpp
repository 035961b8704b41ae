// The scheduler of a batch run (run_parts.hpp): what runs where and when.
//  - One thread per worker (device). Items are dealt from one shared queue, in plan order, as workers free
//    up: a worker that takes long items takes fewer of them.
//  - Within a worker, three items are in flight at most: the next one loads (prepareJob, on its own thread)
//    and the previous one is written (finishJob, on its own thread) while the device reconstructs the
//    current one, so the device is not idle during file I/O. One item is written at a time per worker.
#include <atomic>
#include <future>
#include <thread>

#include <omp.h>

#include "run_parts.hpp"

namespace larmor::batch::detail {

namespace {

/// One worker's loop: takes items from the queue until it is empty.
void workerLoop(RunContext& ctx, Worker& w, bool severalWorkers, const std::vector<std::size_t>& queue,
                std::atomic<std::size_t>& next) {
  if (w.device.ompThreads > 0) omp_set_num_threads(w.device.ompThreads);
  auto fetch = [&]() -> std::future<Job> {
    const std::size_t k = next++;
    if (k >= queue.size()) return {};
    return std::async(std::launch::async, [&ctx, &w, index = queue[k]] { return prepareJob(ctx, w, index); });
  };
  std::future<Job> pending = fetch();
  std::future<void> writing;
  while (pending.valid()) {
    Job job = pending.get();
    pending = fetch();  // the next item loads while this one reconstructs
    if (!job.error.empty()) {
      failJob(ctx, job, w.id);
      continue;
    }
    std::vector<recon::ReconResult> results;
    if (!reconstructJob(ctx, w, job, severalWorkers, results)) continue;
    if (writing.valid()) writing.get();  // one item being written at a time per worker
    writing = std::async(std::launch::async, [&ctx, &w, job = std::move(job), results = std::move(results)]() mutable {
      finishJob(ctx, w, job, results);
    });
  }
  if (writing.valid()) writing.get();
}

}  // namespace

void runWorkers(RunContext& ctx, std::vector<Worker>& workers, const std::vector<std::size_t>& queue) {
  std::atomic<std::size_t> next{0};
  const bool severalWorkers = workers.size() > 1;
  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back([&, wp = &w] { workerLoop(ctx, *wp, severalWorkers, queue, next); });
  for (auto& t : threads) t.join();
}

}  // namespace larmor::batch::detail
