#pragma once
// The samples of a structure-only ISMRMRD read, checked on helper threads (internal to the engine's ISMRMRD
// reader; ismrmrd_direct.hpp uses it). A structure-only read of Cartesian data (`larmor-cli info`) only
// checks that every sample is finite. The reader posts blocks of raw acquisition records, up to kAhead
// beyond the one it is on; helper threads, and the reader itself once it needs a block, take their records
// a few at a time, resolve each record's samples in a GlobalHeaps of their own, read them and check that
// every float is finite. So the samples of the blocks ahead are read and checked while the reader goes
// through the records of the current one (on two cores: the reader's own work, libhdf5's chunk lookups
// among it, beside the page-cache copies and the checks). Whatever goes wrong is left to the reader, which
// then reads that record itself and reports it, in order.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hdf5_global_heap.hpp"

namespace larmor::io::detail {

/// A block of raw acquisition records as read from the file.
struct RecordBlock {
  std::uint64_t start = 0, count = 0;
  std::vector<unsigned char> raw;  ///< the records
  std::vector<char> stored;        ///< per record: its chunk is stored
};

/// What a helper found for one record's samples.
struct SampleCheck {
  bool ok = false;      ///< the samples' heap object was resolved and read
  bool finite = false;  ///< every float of it is finite
  GlobalHeaps::Collection collection;  ///< as the helper parsed it (size 0: no object)
};

class SampleVerifier {
 public:
  static constexpr std::size_t kAhead = 4;  ///< blocks posted beyond the current one

  /// `threads` GlobalHeaps of `path` with the geometry of `like` (the reader's), threads - 1 helper threads
  /// (the reader is the last); a record's samples descriptor lies at `dataAt` of its `recordBytes`. Throws
  /// when the file cannot be opened again or a thread cannot be started.
  SampleVerifier(const std::string& path, const GlobalHeaps& like, std::size_t recordBytes, std::size_t dataAt,
                 int threads);
  ~SampleVerifier();
  SampleVerifier(const SampleVerifier&) = delete;
  SampleVerifier& operator=(const SampleVerifier&) = delete;

  /// Whether block `start` is the first one posted and not taken.
  bool first(std::uint64_t start);
  /// Blocks posted and not taken.
  std::size_t queued();
  /// Where the last block posted ends (0: none posted).
  std::uint64_t end();
  /// Drops every block posted and not taken (the reader jumped); records being checked finish first.
  void clear();
  /// Posts `b` after the blocks posted before (its vectors are moved in).
  void post(RecordBlock&& b);
  /// The first block posted, once every record of it is checked (the caller helps): into `b`, its results
  /// into `results`.
  void take(RecordBlock& b, std::vector<SampleCheck>& results);

 private:
  struct Pending {
    RecordBlock block;
    std::vector<SampleCheck> results;
    std::uint64_t next = 0, done = 0, generation = 0;
  };
  static constexpr std::uint64_t kGrab = 4;  ///< records taken at a time

  Pending* withWork();
  void helper(int t);
  void runGrab(std::unique_lock<std::mutex>& lock, Pending& p, int t);
  void check(GlobalHeaps& heaps, Pending& p, std::uint64_t k) const;
  void stop();

  const std::size_t recordBytes_, dataAt_;
  std::vector<std::unique_ptr<GlobalHeaps>> heaps_;  ///< [0]: the reader's, [t]: helper t's
  std::vector<std::uint64_t> gen_;                    ///< per GlobalHeaps: the block it last worked on
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable work_, finished_;
  std::deque<Pending> pending_;  ///< posted, not taken, in file order (references stay valid in a deque)
  std::uint64_t generation_ = 0;
  int inFlight_ = 0;  ///< grabs being checked
  bool stop_ = false;
};

}  // namespace larmor::io::detail
