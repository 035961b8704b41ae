#pragma once
// ISMRMRD acquisition records read straight from the file, without libhdf5's variable-length
// conversion (internal to the engine's ISMRMRD reader; ismrmrd_direct.cpp says how and when).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hdf5_global_heap.hpp"
#include "ismrmrd_records.hpp"
#include "ismrmrd_sample_verifier.hpp"

namespace larmor::io::detail {

struct RecordLayout;  // where each member lies in a record (ismrmrd_direct.cpp)

/// Why the records of acquisition dataset `dset` (already checked by RawRecordCheck) are read through
/// libhdf5 rather than directly; "" when they can be read directly.
std::string directReadRefusal(hid_t dset);

/// The records of /group/data, each decoded from its raw bytes (a chunk read raw through libhdf5, or the
/// contiguous storage) and its samples and trajectory taken from the global heap objects its
/// descriptors name (GlobalHeaps). Errors are one line naming the file.
class DirectRecords {
 public:
  /// `dset` must have passed directReadRefusal; `count` records.
  DirectRecords(hid_t dset, const std::string& path, const std::string& name, std::uint64_t count);
  ~DirectRecords();
  DirectRecords(const DirectRecords&) = delete;
  DirectRecords& operator=(const DirectRecords&) = delete;

  /// Record i: its header and sequences (valid until the next call).
  const AcqRecord& get(std::uint64_t i);

  /// Looks every chunk up in the chunk index and checks its size, reading nothing: the libhdf5 calls
  /// get() makes, done first in the crash sandbox (up to the first chunk never written, where the read
  /// ends: its records have no channels).
  void lookUpEveryChunk() const;

  /// For reads that only check the samples (structure-only reads of Cartesian data,
  /// io::LoadOptions::structureOnly): from now on the samples of the blocks ahead are resolved, read and
  /// checked by helper threads (SampleVerifier, ismrmrd_sample_verifier.hpp) while the caller takes the
  /// records of the current one, and get() leaves record.data.p null where every float of a record's samples
  /// is finite (samplesVerified()). A record with a non-finite float, one a helper could not read, and noise
  /// scans come with their samples as before, so that errors are the same, at the same record. Nothing
  /// changes where OpenMP allows one thread.
  void verifySamplesOnly();
  /// The last get()'s samples are all finite and were not handed on (data.p is null).
  bool samplesVerified() const { return verified_; }

  /// The verification's threads at most (the caller's included).
  static constexpr int kMaxHelpers = 16;

 private:
  bool chunkStored(std::uint64_t first) const;
  void readBlock(std::uint64_t i);
  std::uint64_t blockStart(std::uint64_t i) const;  ///< the first record of the block that holds record i
  void readRecords(std::uint64_t i, RecordBlock& b) const;

  hid_t dset_;
  std::string path_, name_;
  std::unique_ptr<RecordLayout> layout_;
  GlobalHeaps heaps_;
  std::uint64_t count_ = 0, recordBytes_ = 0, chunkRecords_ = 0;  ///< chunkRecords_ 0: contiguous
  std::uint64_t contiguousAt_ = 0;
  RecordBlock block_;  ///< the current block
  std::vector<float> traj_;
  AcqRecord record_{};
  bool verified_ = false;
  std::unique_ptr<SampleVerifier> verifier_;  ///< verifySamplesOnly
  std::vector<SampleCheck> prefetched_;       ///< per record of the current block (verifySamplesOnly)
};

}  // namespace larmor::io::detail
