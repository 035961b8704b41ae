// NDArrays of an ISMRMRD file (ismrmrd_arrays.hpp). Format facts (libismrmrd's Dataset::appendNDArray):
// /group/VAR is an HDF5 dataset [count, d_{n-1}, ..., d_0] (C order, so the ISMRMRD dims are the rest
// reversed), one array per index of the first dimension; complex floats are a compound {real, imag} of
// two floats, which HDF5 converts by member name. The dimensions are checked against what the dataset
// stores before anything is allocated (kMaxCompression).
#include "ismrmrd_arrays.hpp"

#include <ismrmrd/ismrmrd.h>

#include <algorithm>
#include <new>
#include <vector>

#include "ismrmrd_header.hpp"

namespace larmor::io::detail {

namespace {

// A compound of two floating-point members "real" and "imag".
bool isComplexType(hid_t dset) {
  H5Id type(H5Dget_type(dset), H5Tclose);
  bool complex = type.id >= 0 && H5Tget_class(type.id) == H5T_COMPOUND && H5Tget_nmembers(type.id) == 2;
  for (const char* member : {"real", "imag"}) {
    if (!complex) break;
    const int idx = H5Tget_member_index(type.id, member);
    complex = idx >= 0 && H5Tget_member_class(type.id, static_cast<unsigned>(idx)) == H5T_FLOAT;
  }
  H5Eclear2(H5E_DEFAULT);
  return complex;
}

}  // namespace

std::optional<NdArray> readNdArray(hid_t file, const std::string& path, const std::string& group,
                                   const std::string& var, bool readData) {
  const std::string name = "/" + group + "/" + var;
  if (H5Lexists(file, name.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  auto fail = [&](const std::string& why) -> void {
    failFile(path, "cannot read NDArray '" + var + "' (" + why + ")");
  };
  H5Id dset(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (dset.id < 0) fail(hdf5Reason());
  requireCompactStorageFits(dset.id, path, name);
  H5Id space(H5Dget_space(dset.id), H5Sclose);
  hsize_t dims[H5S_MAX_RANK] = {0};
  const int rank = space.id >= 0 ? H5Sget_simple_extent_dims(space.id, dims, nullptr) : -1;
  if (rank < 2 || rank > ISMRMRD::ISMRMRD_NDARRAY_MAXDIM + 1)
    throw Error(path + ": NDArray " + name + " has " + std::to_string(std::max(rank, 0)) +
                " dimensions, not an ISMRMRD array");
  if (dims[0] == 0) return std::nullopt;
  const double stored = storedBytes(dset.id, path);
  double bytes = sizeof(cfloat);
  for (int i = 1; i < rank; ++i) bytes *= static_cast<double>(dims[i]);
  if (bytes > kMaxCompression * stored + 65536)
    throw Error(path + ": NDArray " + name + " claims " + countText(bytes / 8) +
                " elements but stores only " + countText(stored) + " bytes");
  NdArray out;
  std::vector<index_t> shape;
  for (int i = rank - 1; i >= 1; --i) shape.push_back(static_cast<index_t>(dims[i]));
  out.shape = Shape(shape);
  out.complexFloat = isComplexType(dset.id);
  if (!out.complexFloat) return out;
  if (!readData) {  // the structure only (the crash sandbox): the chunk index, not the values
    ChunkCheck(dset.id, path, name).check(0, 1);
    return out;
  }
  H5Id mem(H5Tcreate(H5T_COMPOUND, sizeof(cfloat)), H5Tclose);
  H5Tinsert(mem.id, "real", 0, H5T_NATIVE_FLOAT);
  H5Tinsert(mem.id, "imag", sizeof(float), H5T_NATIVE_FLOAT);
  hsize_t start[H5S_MAX_RANK] = {0}, count[H5S_MAX_RANK];
  count[0] = 1;
  for (int i = 1; i < rank; ++i) count[i] = dims[i];
  // The memory space has the file selection's shape (not one flat dimension): HDF5 then copies each
  // chunk's runs straight into place instead of iterating element by element (5 s of a 1 GB read).
  H5Id memSpace(H5Screate_simple(rank, count, nullptr), H5Sclose);
  try {
    out.data = CArray(out.shape);
  } catch (const std::bad_alloc&) {
    fail("not enough memory for " + out.shape.str());
  }
  ChunkCheck(dset.id, path, name).check(0, 1);
  if (H5Sselect_hyperslab(space.id, H5S_SELECT_SET, start, nullptr, count, nullptr) < 0 ||
      H5Dread(dset.id, mem.id, memSpace.id, space.id, H5P_DEFAULT, out.data.data()) < 0)
    fail(hdf5Reason());
  return out;
}

bool arrayFits(const NdArray& raw, const Shape& want, const std::string& path, const std::string& var, bool required) {
  if (raw.complexFloat && raw.shape.size() == want.size()) return true;
  if (!required) return false;
  throw Error(path + ": NDArray '" + var + "' " + raw.shape.str() + " does not fit " + want.str() +
              " (complex float expected)");
}

std::optional<CArray> fitArray(std::optional<NdArray> raw, const Shape& want, const std::string& path,
                               const std::string& var, bool required) {
  if (!raw || !arrayFits(*raw, want, path, var, required)) return std::nullopt;
  raw->data.reshape(want);
  return std::move(raw->data);
}

}  // namespace larmor::io::detail
