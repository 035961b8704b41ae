#pragma once
// The data the workstation works on: where they came from (a file or the simulator's settings), the
// loaded Dataset and the truth the reconstructions are compared with when the data carry a reference.
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "larmor/data/dataset.hpp"
#include "larmor/io/series.hpp"
#include "larmor/phantom/simulate.hpp"

namespace larmor::model {

struct DataSource {
  std::string path;                                 ///< the file; empty for a simulated phantom
  std::optional<phantom::SimulateSettings> phantom;  ///< the simulator's settings of a phantom

  static DataSource file(std::string path);
  static DataSource simulated(const phantom::SimulateSettings& settings);
  bool isFile() const { return !path.empty(); }
  /// The file's name, or "phantom".
  std::string name() const;
};

struct LoadedDataset {
  std::shared_ptr<const Dataset> dataset;
  DataSource source;
  /// What a reconstruction should equal (quality::comparisonTruth); null without a reference.
  std::shared_ptr<const CArray> truth;
  std::string truthProblem;  ///< why there is no truth although the data have a reference
  /// The file's frames (io/series.hpp) when it has several; `dataset` is then frames[frame] (sharing the
  /// series' ownership). Null for single-frame data.
  std::shared_ptr<const io::Series> series;
  std::size_t frame = 0;
  std::size_t frameCount() const { return series ? series->frames.size() : 1; }
  /// "frame 2/4" (frameLabel; "" for single-frame data): the frame bar, run titles and exports alike.
  std::string frameName() const;

  /// "radial, k-space [..], 4 coils" for the log.
  std::string description() const;
  /// Voxel size in mm of an image [x, y, z, 1, slices] of these data: FOV over the matrix; for
  /// multi-slice 2D the third entry is the slice thickness.
  std::array<double, 3> voxelSpacing(const Shape& imageShape) const;
};

/// "frame 3/4": frame `f` (0-based) of `n`, as the frame bar, the run titles and the exports name it.
std::string frameLabel(std::size_t f, std::size_t n);
/// What frame `f` of `s` is in the file's terms: its indices along the dims that vary in the series, counted
/// from 1 as the frame number is ("repetition 2" for the file's counter 1); "" when none vary.
std::string frameDetail(const io::Series& s, std::size_t f);
/// The frame dimensions (contrast, phase, repetition, set) that vary over a series' frames, found once (O(frames)),
/// and frameDetail from them (O(1) a frame).
struct FrameDims {
  std::vector<std::pair<const char*, int io::FrameKey::*>> varying;
};
FrameDims varyingFrameDims(const io::Series& s);
std::string frameDetail(const io::Series& s, std::size_t f, const FrameDims& dims);

/// The data with their truth computed (an Error while computing it goes into truthProblem).
LoadedDataset describeDataset(std::shared_ptr<const Dataset> dataset, DataSource source);

}  // namespace larmor::model
