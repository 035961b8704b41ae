#pragma once
// The NDArrays an ISMRMRD file may carry beside its acquisitions (internal to the engine's ISMRMRD
// reader): a reference image and coil maps, Larmor's ("reference", "coil_maps") or the ISMRMRD
// generator's ("phantom", "csm").
#include <optional>
#include <string>

#include "hdf5_guards.hpp"
#include "larmor/data/dataset.hpp"

namespace larmor::io::detail {

/// An NDArray of complex floats as stored (dims and data); data empty when it is not complex float.
struct NdArray {
  Shape shape;
  bool complexFloat = false;
  CArray data;
};

/// The NDArray at `index` (0: the first) of /group/var, or nothing when the file has none there. Without
/// `readData` only its shape and type are read and checked (data left empty): the crash sandbox's structural
/// read.
std::optional<NdArray> readNdArray(hid_t file, const std::string& path, const std::string& group,
                                   const std::string& var, bool readData = true, hsize_t index = 0);

/// How many NDArrays /group/var holds (0 when there is no such dataset): a series' reference holds one per
/// repetition (writeIsmrmrdSeries).
hsize_t ndArrayCount(hid_t file, const std::string& group, const std::string& var);

/// Whether `raw` (its values read or not) can be reshaped to `want`: a complex float array of as many
/// elements. `required` (Larmor's own arrays): throws when it cannot.
bool arrayFits(const NdArray& raw, const Shape& want, const std::string& path, const std::string& var, bool required);

/// `raw` reshaped to `want`. `required` (Larmor's own arrays): it must fit or the file is rejected;
/// otherwise (the generator's) it is taken only when it fits.
std::optional<CArray> fitArray(std::optional<NdArray> raw, const Shape& want, const std::string& path,
                               const std::string& var, bool required);

}  // namespace larmor::io::detail
