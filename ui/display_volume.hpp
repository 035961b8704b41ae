#pragma once
// A real-valued volume ready for the VTK views ([x, y, z], x fastest, as the engine's arrays), with the
// voxel spacing in mm so views show the true aspect ratio. Several views share one (the three planes
// and the volume rendering of a 3D image).
#include <array>
#include <memory>

#include "larmor/array/array.hpp"

class vtkImageData;

namespace larmor::ui {

class DisplayVolume {
 public:
  /// values: [x, y, z] (dims beyond 2 must be 1); spacingMm: voxel size along x, y, z.
  DisplayVolume(const RArray& values, std::array<double, 3> spacingMm);
  ~DisplayVolume();
  DisplayVolume(const DisplayVolume&) = delete;
  DisplayVolume& operator=(const DisplayVolume&) = delete;

  int dim(int axis) const { return dims_[static_cast<std::size_t>(axis)]; }
  double spacing(int axis) const { return spacing_[static_cast<std::size_t>(axis)]; }
  bool is3D() const { return dims_[2] > 1; }
  vtkImageData* image() const { return image_; }
  /// The value of voxel (i, j, k), NaN outside.
  float value(int i, int j, int k) const;

 private:
  std::array<int, 3> dims_{};
  std::array<double, 3> spacing_{};
  vtkImageData* image_ = nullptr;  // owned (reference counted by VTK)
};

using DisplayVolumePtr = std::shared_ptr<const DisplayVolume>;

}  // namespace larmor::ui
