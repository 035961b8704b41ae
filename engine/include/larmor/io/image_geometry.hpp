#pragma once
// Where the pixels of a reconstructed image lie in the patient coordinate system (DICOM's and ISMRMRD's
// LPS: +x towards the patient's left, +y posterior, +z head), in mm. One place for the DICOM and NIfTI
// writers, so both files describe the same voxels.
//
// Conventions (docs/conventions.md): image pixel n of a dimension with N pixels sits at (n - floor(N/2))
// pixel spacings from the centre of the field of view, so the pixel at index floor(N/2) is the centre,
// which ISMRMRD's `position` gives. Image x (array dimension 0) runs along the readout direction, y along
// phase encoding, z (3D partitions) along the slice direction.
#include <array>
#include <string>
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/data/dataset.hpp"

namespace larmor::io {

using Vec3 = std::array<double, 3>;

struct ImageGeometry {
  index_t nx = 0, ny = 0;       ///< columns (x, readout) and rows (y, phase encoding) of a plane
  index_t nz = 1, slices = 1;   ///< 3D partitions per slab and slices (2D) or slabs (3D)
  bool threeD = false;          ///< partitions of a 3D volume (MRAcquisitionType 3D)
  Vec3 row{1, 0, 0};            ///< unit vector of increasing x (DICOM: direction along a row)
  Vec3 column{0, 1, 0};         ///< unit vector of increasing y (DICOM: direction down a column)
  Vec3 sliceDir{0, 0, 1};       ///< unit vector of increasing z / slice position
  double spacingX = 1, spacingY = 1;  ///< mm between columns and between rows
  double sliceThickness = 1;    ///< mm: the 2D slice thickness or the 3D partition thickness
  /// Centre of pixel (0, 0) of every plane, plane p = z + nz * slice (the array order), LPS mm.
  std::vector<Vec3> topLeft;
  /// Distance between adjacent plane centres when they are evenly spaced along one line, else 0.
  double planeSpacing = 0;
  /// True when geometry came from the data; false when defaults were used (see warnings).
  bool fromData = false;
  std::vector<std::string> warnings;

  index_t planes() const { return nz * slices; }
  Vec3 normal() const;  ///< row x column, DICOM's slice normal
  /// LPS position of the centre of pixel (x, y) of plane p.
  Vec3 position(index_t plane, double x, double y) const;
};

/// The geometry of an image of `imageShape` [x, y, z, 1, slices] reconstructed from data with header `h`.
/// Pixel spacing is the recon FOV over the image's matrix (ReconSettings::matrix may differ from the
/// header's). Missing or degenerate geometry (no direction vectors, parallel read and phase directions,
/// NaN) falls back to an axial plane centred at the isocentre, with a warning in `warnings`.
ImageGeometry imageGeometry(const Header& h, const Shape& imageShape);

}  // namespace larmor::io
