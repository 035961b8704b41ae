// The samples of a structure-only ISMRMRD read, checked on helper threads (ismrmrd_sample_verifier.hpp).
#include "ismrmrd_sample_verifier.hpp"

#include <algorithm>

#include "larmor/array/finite.hpp"
#include "larmor/util/error.hpp"

namespace larmor::io::detail {

SampleVerifier::SampleVerifier(const std::string& path, const GlobalHeaps& like, std::size_t recordBytes,
                               std::size_t dataAt, int threads)
    : recordBytes_(recordBytes), dataAt_(dataAt) {
  for (int t = 0; t < threads; ++t) {
    heaps_.push_back(std::make_unique<GlobalHeaps>(path, like.base(), like.lengthBytes()));
    if (!heaps_.back()->usable()) throw Error(path + ": cannot open the file again");
  }
  gen_.assign(heaps_.size(), 0);
  try {
    for (int t = 1; t < threads; ++t) threads_.emplace_back([this, t] { helper(t); });
  } catch (...) {
    stop();
    throw;
  }
}

SampleVerifier::~SampleVerifier() { stop(); }

bool SampleVerifier::first(std::uint64_t start) {
  std::lock_guard lock(mutex_);
  return !pending_.empty() && pending_.front().block.start == start;
}

std::size_t SampleVerifier::queued() {
  std::lock_guard lock(mutex_);
  return pending_.size();
}

std::uint64_t SampleVerifier::end() {
  std::lock_guard lock(mutex_);
  return pending_.empty() ? 0 : pending_.back().block.start + pending_.back().block.count;
}

void SampleVerifier::clear() {
  std::unique_lock lock(mutex_);
  for (auto& p : pending_) p.next = p.block.count;  // no more handed out
  finished_.wait(lock, [&] { return inFlight_ == 0; });
  pending_.clear();
}

void SampleVerifier::post(RecordBlock&& b) {
  std::lock_guard lock(mutex_);
  Pending& p = pending_.emplace_back();
  p.block = std::move(b);
  p.results.assign(static_cast<std::size_t>(p.block.count), SampleCheck{});
  p.generation = ++generation_;
  work_.notify_all();
}

void SampleVerifier::take(RecordBlock& b, std::vector<SampleCheck>& results) {
  std::unique_lock lock(mutex_);
  Pending& p = pending_.front();
  while (p.done < p.block.count) {
    if (p.next < p.block.count) {
      runGrab(lock, p, 0);
    } else {
      finished_.wait(lock);
    }
  }
  b = std::move(p.block);
  results = std::move(p.results);
  pending_.pop_front();
}

SampleVerifier::Pending* SampleVerifier::withWork() {
  for (auto& p : pending_)
    if (p.next < p.block.count) return &p;
  return nullptr;
}

void SampleVerifier::helper(int t) {
  std::unique_lock lock(mutex_);
  for (;;) {
    Pending* p = nullptr;
    work_.wait(lock, [&] { return stop_ || (p = withWork()) != nullptr; });
    if (stop_) return;
    runGrab(lock, *p, t);
  }
}

// Takes the next few records of `p` (under the lock) and checks them (without it). A block is dropped or
// taken only when none of its records is being checked (inFlight_, done), so `p` outlives the check.
void SampleVerifier::runGrab(std::unique_lock<std::mutex>& lock, Pending& p, int t) {
  const std::uint64_t from = p.next, to = std::min(p.block.count, p.next + kGrab);
  p.next = to;
  ++inFlight_;
  GlobalHeaps& heaps = *heaps_[static_cast<std::size_t>(t)];
  if (gen_[static_cast<std::size_t>(t)] != p.generation) {  // another block: forget the last one's collections
    heaps.forget();
    gen_[static_cast<std::size_t>(t)] = p.generation;
  }
  lock.unlock();
  for (std::uint64_t k = from; k < to; ++k) check(heaps, p, k);
  lock.lock();
  p.done += to - from;
  --inFlight_;
  finished_.notify_all();
}

void SampleVerifier::check(GlobalHeaps& heaps, Pending& p, std::uint64_t k) const {
  const auto r = static_cast<std::size_t>(k);
  if (!p.block.stored[r]) return;
  SampleCheck& out = p.results[r];
  try {
    const VlenDescriptor d = decodeDescriptor(p.block.raw.data() + r * recordBytes_ + dataAt_);
    const HeapObject o = heaps.object(d, sizeof(float), "samples");
    if (o.size > 0) {
      out.finite = firstNonFinite(reinterpret_cast<const float*>(heaps.bytes(o)), d.length) == d.length;
      out.collection = heaps.known(d.address);
    } else {
      out.finite = true;
    }
    out.ok = true;
  } catch (...) {
    out = SampleCheck{};  // the reader reads it itself
  }
}

void SampleVerifier::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

}  // namespace larmor::io::detail
