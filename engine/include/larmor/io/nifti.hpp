#pragma once
// NIfTI-1 single-file output (.nii): the 348-byte header, 4 zero extension bytes, then the voxels
// (little-endian), written atomically. Our own code: the format is small and fixed.
//
// Voxel (i, j, k) is pixel (x = i, y = j) of plane k (plane = partition + nz * slice, the array's order),
// so the data need no reordering. NIfTI's world space is RAS+ (x towards the patient's right, y
// anterior, z superior); DICOM and ISMRMRD use LPS+, so the affine negates the first two rows.
// Both the sform and the qform hold it (codes 1, NIFTI_XFORM_SCANNER_ANAT), units mm.
#include <array>
#include <string>
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/io/image_geometry.hpp"

namespace larmor::io {

/// Rows of the voxel-index -> RAS (mm) affine, [R | t] with 3 rows of 4.
using Affine = std::array<std::array<double, 4>, 3>;

/// The affine of a NIfTI volume of `g`'s planes: columns are the x, y and plane steps (mm, RAS), the
/// translation the centre of voxel (0, 0, 0). Uneven plane positions get the mean step and a warning.
Affine niftiAffine(const ImageGeometry& g, std::vector<std::string>* warnings = nullptr);

struct NiftiOptions {
  bool complex = false;          ///< complex64 voxels (datatype 32); else float32 magnitude (datatype 16)
  double calMin = 0, calMax = 0; ///< display range (cal_min/cal_max), 0/0 = none
  std::string description;       ///< descrip (at most 79 bytes kept)
  /// Frames of a series (io/series.hpp) after each other in `image`: NIfTI's 4th dimension (the 5th
  /// when the frames are 3D multi-slab volumes, which use the 4th).
  index_t frames = 1;
};

/// Writes `image` [x, y, z, 1, slices] as NIfTI-1. A 3D volume with several slabs becomes 4D
/// [x, y, z, slabs] with slab 0's affine (and a warning); everything else is 3D [x, y, planes].
/// Returns warnings. Throws Error naming the path on failure.
std::vector<std::string> writeNifti(const std::string& path, const CArray& image, const ImageGeometry& g,
                                    const NiftiOptions& options = {});

/// Reads a single-file NIfTI-1 image (.nii or gzip-compressed .nii.gz; nifti_reader.cpp) as [dim1, dim2,
/// the product of the other dims], voxels in storage order (as writeNifti stores them), scaled by
/// scl_slope / scl_inter (complex64 as stored); the reference image of a comparison. Throws Error naming the
/// file: not NIfTI-1, a .hdr/.img pair, an unsupported datatype, truncated data, non-finite voxels.
CArray readNiftiImage(const std::string& path);

}  // namespace larmor::io
