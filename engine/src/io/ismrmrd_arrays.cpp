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
#include "larmor/recon/resources.hpp"

namespace larmor::io::detail {

namespace {

enum class Complex { No, Yes, Damaged };

// A compound of two floating-point members "real" and "imag" (else No). It must be laid out as libismrmrd
// writes complex floats (or doubles): IEEE little-endian 32-bit (64-bit) floats at bytes 0 and 4 (8) of 8
// (16), else Damaged: libhdf5 1.10's compound conversion trusts the member offsets (fuzz_ismrmrd: an "imag"
// at byte 16,775,428 of an 8-byte type made it copy from far outside the buffer, in this process, where the
// crash sandbox, which reads no values, cannot see it).
Complex complexType(hid_t dset) {
  H5Id type(H5Dget_type(dset), H5Tclose);
  Complex c = type.id >= 0 && H5Tget_class(type.id) == H5T_COMPOUND && H5Tget_nmembers(type.id) == 2 ? Complex::Yes
                                                                                                   : Complex::No;
  int idx[2] = {-1, -1};
  const char* names[2] = {"real", "imag"};
  for (int m = 0; m < 2 && c == Complex::Yes; ++m) {
    idx[m] = H5Tget_member_index(type.id, names[m]);
    if (idx[m] < 0 || H5Tget_member_class(type.id, static_cast<unsigned>(idx[m])) != H5T_FLOAT) c = Complex::No;
  }
  if (c == Complex::Yes) {
    const std::size_t size = H5Tget_size(type.id);
    const hid_t want = size == 8 ? H5T_IEEE_F32LE : H5T_IEEE_F64LE;
    bool exact = size == 8 || size == 16;
    for (int m = 0; m < 2 && exact; ++m) {
      H5Id member(H5Tget_member_type(type.id, static_cast<unsigned>(idx[m])), H5Tclose);
      exact = member.id >= 0 && H5Tequal(member.id, want) > 0 &&
              H5Tget_member_offset(type.id, static_cast<unsigned>(idx[m])) == static_cast<std::size_t>(m) * size / 2;
    }
    if (!exact) c = Complex::Damaged;
  }
  H5Eclear2(H5E_DEFAULT);
  return c;
}

}  // namespace

std::optional<NdArray> readNdArray(hid_t file, const std::string& path, const std::string& group,
                                   const std::string& var, bool readData, hsize_t index) {
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
  if (dims[0] <= index) return std::nullopt;
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
  const Complex complex = complexType(dset.id);
  if (complex == Complex::Damaged)
    fail("its complex type is not two little-endian 32- or 64-bit floats, real then imag, filling the type");
  out.complexFloat = complex == Complex::Yes;
  if (!out.complexFloat) return out;
  if (!readData) {  // the structure only (the crash sandbox): the chunk index, not the values
    ChunkCheck(dset.id, path, name).check(index, 1);
    return out;
  }
  H5Id mem(H5Tcreate(H5T_COMPOUND, sizeof(cfloat)), H5Tclose);
  H5Tinsert(mem.id, "real", 0, H5T_NATIVE_FLOAT);
  H5Tinsert(mem.id, "imag", sizeof(float), H5T_NATIVE_FLOAT);
  hsize_t start[H5S_MAX_RANK] = {index}, count[H5S_MAX_RANK];
  count[0] = 1;
  for (int i = 1; i < rank; ++i) count[i] = dims[i];
  // The memory space has the file selection's shape (not one flat dimension): HDF5 then copies each
  // chunk's runs straight into place instead of iterating element by element (5 s of a 1 GB read).
  H5Id memSpace(H5Screate_simple(rank, count, nullptr), H5Sclose);
  recon::requireHostMemory(8.0 * static_cast<double>(out.shape.size()), path, "NDArray " + name + " " + out.shape.str());
  try {
    out.data = CArray(out.shape);
  } catch (const std::bad_alloc&) {
    fail("not enough memory for " + out.shape.str());
  }
  ChunkCheck(dset.id, path, name).check(index, 1);
  if (H5Sselect_hyperslab(space.id, H5S_SELECT_SET, start, nullptr, count, nullptr) < 0 ||
      H5Dread(dset.id, mem.id, memSpace.id, space.id, H5P_DEFAULT, out.data.data()) < 0)
    fail(hdf5Reason());
  return out;
}

hsize_t ndArrayCount(hid_t file, const std::string& group, const std::string& var) {
  const std::string name = "/" + group + "/" + var;
  if (H5Lexists(file, name.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return 0;
  }
  H5Id dset(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  H5Id space(dset.id >= 0 ? H5Dget_space(dset.id) : -1, H5Sclose);
  hsize_t dims[H5S_MAX_RANK] = {0};
  const int rank = space.id >= 0 ? H5Sget_simple_extent_dims(space.id, dims, nullptr) : -1;
  H5Eclear2(H5E_DEFAULT);
  return rank >= 1 ? dims[0] : 0;
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
