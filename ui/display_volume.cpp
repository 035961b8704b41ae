#include "display_volume.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include <vtkFloatArray.h>
#include <vtkImageData.h>
#include <vtkPointData.h>

namespace larmor::ui {

DisplayVolume::DisplayVolume(const RArray& values, std::array<double, 3> spacingMm) : spacing_(spacingMm) {
  const Shape& s = values.shape();
  require(values.size() == s[0] * s[1] * s[2] && values.size() > 0, "display: expected a volume, got " + s.str());
  dims_ = {static_cast<int>(s[0]), static_cast<int>(s[1]), static_cast<int>(s[2])};
  for (double& d : spacing_)
    if (!(d > 0)) d = 1.0;
  image_ = vtkImageData::New();
  image_->SetDimensions(dims_[0], dims_[1], dims_[2]);
  image_->SetSpacing(spacing_[0], spacing_[1], spacing_[2]);
  image_->SetOrigin(0, 0, 0);
  vtkFloatArray* scalars = vtkFloatArray::New();
  scalars->SetNumberOfComponents(1);
  scalars->SetNumberOfTuples(values.size());
  // Same memory order (x fastest) in the engine and in VTK: one copy, no reordering.
  std::memcpy(scalars->GetPointer(0), values.data(), sizeof(float) * static_cast<std::size_t>(values.size()));
  image_->GetPointData()->SetScalars(scalars);
  scalars->Delete();
}

DisplayVolume::~DisplayVolume() {
  if (image_) image_->Delete();
}

float DisplayVolume::value(int i, int j, int k) const {
  if (i < 0 || j < 0 || k < 0 || i >= dims_[0] || j >= dims_[1] || k >= dims_[2])
    return std::numeric_limits<float>::quiet_NaN();
  const auto* p = static_cast<const float*>(image_->GetScalarPointer());
  return p[(static_cast<std::size_t>(k) * dims_[1] + j) * dims_[0] + i];
}

}  // namespace larmor::ui
