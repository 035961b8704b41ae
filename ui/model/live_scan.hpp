#pragma once
// One streamed scan as the workstation's live view shows it (docs/streaming.md): the images the reconstruction
// server makes of one connection's slices, as they arrive, collected into a series of frames (io::FrameKey order,
// as a file's frames) of [x, y, z, 1, slices] images, the slices not yet arrived zero. Beside the images, the
// scan's data so far: each frame a Dataset of every slice arrived (their k-space side by side along the slice
// dimension, the others empty and unsampled), with the scan's header and each arrived slice's position, so the
// data can be reconstructed again, compared and exported as a file's. The data are gathered frame by frame: a
// frame is gathered again only when a slice of it arrived, and while nobody else holds the series it is updated in
// place (a new frame appended), so a dynamic scan whose every image is a new frame costs each frame's k-space
// once, not every frame again at each new one.
#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/data/dataset.hpp"
#include "larmor/io/series.hpp"
#include "larmor/recon/recon.hpp"

namespace larmor::model {

/// One image of the scan, as the server made it.
struct LiveImage {
  int slice = 0;
  io::FrameKey key;
  std::shared_ptr<const Dataset> data;  ///< the slice's one-slice Dataset (its k-space, its position)
  CArray image;                         ///< [x, y, z, 1, 1]
  std::string method;                   ///< "fft", "gridding", ...
  std::string device;                   ///< where it was reconstructed ("cpu", "cuda:0")
  double reconMs = 0;
};

class LiveScan {
 public:
  /// `scan`: the scan's header (its slice count); `source`: what the data are called ("stream from HOST:PORT").
  LiveScan(Header scan, std::string source);

  /// Takes one image (a slice of a frame arriving again replaces it). Error when its matrix is not the scan's.
  void add(LiveImage image);
  std::size_t imageCount() const { return count_; }
  /// Slices per frame: the header's, or more where the images say so.
  index_t slices() const { return slices_; }
  const std::vector<io::FrameKey>& keys() const { return keys_; }
  const std::string& source() const { return source_; }
  /// The newest image's frame (an index into keys()) and slice.
  std::pair<std::size_t, int> newest() const;
  /// "fft (live)": the method of the images.
  std::string description() const;

  /// The data so far, one frame per key (a series of one frame for a single-frame scan). Only the frames that
  /// changed since the last call are gathered again, in place when the last series returned is held by nobody
  /// else (callers let theirs go before asking again); held elsewhere, every frame is gathered into a new series.
  std::shared_ptr<const io::Series> series() const;
  /// How many frames series() has gathered (each arrived slice's k-space copied) so far: what its cost grows with.
  std::size_t gatheredFrames() const { return gathered_; }
  /// Each frame's image so far as a result (each slice's reconstruction a stage of its timings), in the order
  /// of keys(). Only the frames that changed since the last call are made again.
  std::vector<std::shared_ptr<const recon::ReconResult>> results() const;

 private:
  using Slices = std::map<int, LiveImage>;
  Dataset frameData(const Slices& slices) const;
  void gatherAll() const;
  void gatherChanged() const;
  CArray frameImage(const Slices& slices) const;

  Header scan_;
  std::string source_, method_;
  index_t slices_ = 1;
  std::size_t count_ = 0;
  Shape shape_;  ///< the first image's
  std::vector<io::FrameKey> keys_;
  io::FrameKey newestKey_;
  int newestSlice_ = 0;
  std::map<io::FrameKey, Slices> frames_;
  mutable std::shared_ptr<io::Series> series_;  ///< the last series() (updated in place while only this holds it)
  mutable std::set<io::FrameKey> changed_;       ///< frames with slices that series_ does not hold yet
  mutable std::size_t gathered_ = 0;
  mutable std::map<io::FrameKey, std::shared_ptr<const recon::ReconResult>> results_;  ///< unchanged frames'
};

}  // namespace larmor::model
