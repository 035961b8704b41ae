#pragma once
// Streamed acquisitions into Datasets, one slice of one frame at a time (docs/streaming.md). Acquisitions are
// kept per (slice, contrast, phase, repetition, set); an imaging acquisition flagged ACQ_LAST_IN_SLICE finishes
// its group, the end of the stream finishes the rest. A finished group becomes a one-slice Dataset through the
// ISMRMRD file reader's own pass (io/ismrmrd_acquisitions.hpp), so a streamed slice is the Dataset the file gives
// for that slice. Noise scans belong to every group, as they do to every frame of a file.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "larmor/data/dataset.hpp"
#include "larmor/io/series.hpp"
#include "larmor/stream/protocol.hpp"

namespace larmor::stream {

struct FinishedSlice {
  int slice = 0;     ///< the acquisitions' slice index
  io::FrameKey key;  ///< contrast, phase, repetition, set
  Dataset dataset;   ///< one slice, validated
};

class SliceAssembler {
 public:
  /// `xml`: the HEADER message; `label` names the stream in errors (e.g. "stream from 127.0.0.1:5000").
  /// Error when the header is not a valid ISMRMRD header Larmor can reconstruct.
  /// `maxPendingBytes`: the samples and trajectories it may hold for slices not yet finished (noise scans
  /// included); an acquisition beyond it is an Error (a stream that never finishes a slice cannot fill memory).
  SliceAssembler(const std::string& xml, std::string label, std::uint64_t maxPendingBytes = kDefaultPendingBytes);
  static constexpr std::uint64_t kDefaultPendingBytes = std::uint64_t{4} << 30;
  ~SliceAssembler();
  SliceAssembler(const SliceAssembler&) = delete;
  SliceAssembler& operator=(const SliceAssembler&) = delete;

  const Header& header() const;
  /// The slices the header's encoding limits declare (-1: none declared); header().slices is each group's 1.
  int declaredSlices() const;
  /// The frames (contrast x phase x repetition x set) the header's encoding limits declare (-1: none declared).
  int declaredFrames() const;
  /// Takes one acquisition; returns the slice it finished (none, or one).
  std::vector<FinishedSlice> add(Acquisition a);
  /// The end of the stream: every group not finished yet, in (key, slice) order.
  std::vector<FinishedSlice> finish();
  /// Acquisitions held now (not yet reconstructed), and their bytes.
  std::size_t pending() const;
  std::uint64_t pendingBytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace larmor::stream
