#pragma once
// ISMRMRD acquisition records as stored in /group/data (internal to the engine's ISMRMRD reader): each
// record's sizes are checked against the data it actually stores before anything is used.
#include <ismrmrd/ismrmrd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hdf5_guards.hpp"
#include "larmor/data/dataset.hpp"

namespace larmor::io::detail {

/// The part of ISMRMRD's acquisition header Larmor uses. HDF5 converts compound members by name, so
/// this subset can be read straight from the file's full record.
struct AcqHead {
  std::uint16_t version;
  std::uint64_t flags;
  std::uint32_t scan_counter;
  std::uint16_t number_of_samples, active_channels, discard_pre, discard_post, center_sample, trajectory_dimensions;
  std::uint32_t physiology_time_stamp[3];  ///< [0]: time since the last trigger in 2.5 ms ticks (cardiac)
  float position[3], read_dir[3], phase_dir[3], slice_dir[3];
  struct {
    std::uint16_t kspace_encode_step_1, kspace_encode_step_2, average, slice, contrast, phase, repetition, set;
  } idx;
};
struct AcqRecord {
  AcqHead head;
  hvl_t traj;  // floats, trajectory_dimensions per sample
  hvl_t data;  // floats, re/im interleaved, [channels][samples]
};

/// Flag `f` (ISMRMRD numbers them from 1: bit f - 1) is set in an acquisition's flags.
inline bool isFlag(std::uint64_t flags, ISMRMRD::ISMRMRD_AcquisitionFlags f) {
  return (flags >> (static_cast<int>(f) - 1)) & 1u;
}

/// Navigator, phase-correction, feedback, dummy and surface-coil-correction scans: no imaging k-space.
bool isAuxiliaryScan(std::uint64_t flags);

/// The acquisition header as Larmor shows it.
AcquisitionInfo infoOf(const AcqHead& ah);

/// A record's sequences must hold what its header says: 2 * samples * channels floats of data and
/// samples * trajectory_dimensions trajectory values (one-line Error naming acquisition `i` otherwise).
void requireAcquisitionSizes(const std::string& path, std::uint64_t i, std::uint64_t samples, std::uint64_t channels,
                             std::uint64_t trajDims, std::uint64_t dataFloats, std::uint64_t trajValues);

class RawRecordCheck;
class DirectRecords;

/// Reads /group/data itself rather than through ISMRMRD::Dataset::readAcquisition: libismrmrd trusts
/// each record's header sizes and copies the variable-length data into buffers sized from them, so one
/// corrupt byte in a header corrupts the heap. The records are read directly (ismrmrd_direct.hpp) where
/// the file is laid out as libismrmrd writes it, else through libhdf5's conversion (the fallback).
class AcquisitionReader {
 public:
  /// Opens the file again (the reader's own handle); a file without /group/data has no acquisitions.
  AcquisitionReader(const std::string& path, const std::string& group);
  ~AcquisitionReader();
  AcquisitionReader(const AcquisitionReader&) = delete;
  AcquisitionReader& operator=(const AcquisitionReader&) = delete;

  std::uint64_t count() const { return count_; }

  /// "" when the records are read directly, else why they go through libhdf5.
  const std::string& fallbackReason() const { return fallback_; }

  /// Looks up every chunk of the records where the direct read will (the crash sandbox's part).
  void lookUpEveryChunk() const;

  /// Record i, valid until the next call. Reads blocks of records to keep HDF5 calls few.
  const AcqRecord& get(std::uint64_t i);

  /// The samples are only to be checked, not used (DirectRecords::verifySamplesOnly; nothing changes
  /// when the records go through libhdf5).
  void verifySamplesOnly();
  /// The last get()'s samples are all finite and not handed on (record.data.p is null).
  bool samplesVerified() const;

 private:
  void buildMemType();
  void releaseBlock();
  void readBlock(std::uint64_t first);

  static constexpr hsize_t kBlock = 256;
  std::string path_;
  H5Id file_, dset_, fileSpace_, memType_;
  std::unique_ptr<RawRecordCheck> records_;
  std::unique_ptr<ChunkCheck> chunks_;
  std::unique_ptr<VlenTransfer> xfer_;
  std::unique_ptr<DirectRecords> direct_;
  std::string fallback_ = "no records";
  std::uint64_t count_ = 0;
  std::vector<AcqRecord> block_;
  std::uint64_t blockStart_ = 0;
};

}  // namespace larmor::io::detail
