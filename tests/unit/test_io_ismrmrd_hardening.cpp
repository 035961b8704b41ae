// ISMRMRD files whose HDF5 structure lies: dimensions without storage (allocation bombs), a newer
// acquisition format version. Built only with LARMOR_IO (the file name's prefix).
#include <gtest/gtest.h>
#include <hdf5.h>

#include "larmor/io/dataset_io.hpp"
#include "larmor/io/ismrmrd.hpp"
#include "test_io_export_util.hpp"

using namespace larmor;
using namespace larmor::testing;

namespace {

std::string writeSmallFile(const std::string& dir) {
  phantom::SimulateSettings s;
  s.matrix[0] = 16, s.matrix[1] = 12;
  s.coils = 2;
  const std::string path = dir + "/small.h5";
  io::writeIsmrmrd(phantom::simulate(s), path);
  return path;
}

struct H5 {
  hid_t id;
  herr_t (*close)(hid_t);
  ~H5() {
    if (id >= 0) close(id);
  }
};

}  // namespace

TEST(IoIsmrmrdHardening, AcquisitionCountWithoutStorage) {
  const std::string dir = exportTestDir("ismrmrd-hardening");
  const std::string path = writeSmallFile(dir);
  {
    H5 f{H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose};
    H5 d{H5Dopen2(f.id, "/dataset/data", H5P_DEFAULT), H5Dclose};
    ASSERT_GE(d.id, 0);
    const hsize_t huge[1] = {1000000000000ull};  // chunked and unlimited: costs nothing on disk
    ASSERT_GE(H5Dset_extent(d.id, huge), 0);
  }
  expectExportError([&] { io::loadDataset(path); }, "claims 1000000000000 acquisitions but stores only");
}

TEST(IoIsmrmrdHardening, NDArrayDimensionsWithoutStorage) {
  const std::string dir = exportTestDir("ismrmrd-hardening");
  const std::string path = writeSmallFile(dir);
  {
    H5 f{H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose};
    H5Ldelete(f.id, "/dataset/reference", H5P_DEFAULT);
    H5 type{H5Tcreate(H5T_COMPOUND, 8), H5Tclose};
    H5Tinsert(type.id, "real", 0, H5T_NATIVE_FLOAT);
    H5Tinsert(type.id, "imag", 4, H5T_NATIVE_FLOAT);
    const hsize_t dims[5] = {1, 1, 1, 65536, 65536}, chunk[5] = {1, 1, 1, 64, 64};
    H5 space{H5Screate_simple(5, dims, nullptr), H5Sclose};
    H5 plist{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
    H5Pset_chunk(plist.id, 5, chunk);
    H5 d{H5Dcreate2(f.id, "/dataset/reference", type.id, space.id, H5P_DEFAULT, plist.id, H5P_DEFAULT), H5Dclose};
    ASSERT_GE(d.id, 0);
  }
  expectExportError([&] { io::loadDataset(path); }, "NDArray /dataset/reference claims 4294967296 elements");
}

TEST(IoIsmrmrdHardening, NewerAcquisitionVersion) {
  const std::string dir = exportTestDir("ismrmrd-hardening");
  const std::string path = writeSmallFile(dir);
  {
    H5 f{H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose};
    H5 d{H5Dopen2(f.id, "/dataset/data", H5P_DEFAULT), H5Dclose};
    // Only head.version of record 3 (HDF5 fills the other members from the file).
    H5 head{H5Tcreate(H5T_COMPOUND, 2), H5Tclose};
    H5Tinsert(head.id, "version", 0, H5T_NATIVE_UINT16);
    H5 rec{H5Tcreate(H5T_COMPOUND, 2), H5Tclose};
    H5Tinsert(rec.id, "head", 0, head.id);
    H5 fileSpace{H5Dget_space(d.id), H5Sclose};
    const hsize_t start[1] = {3}, one[1] = {1};
    H5Sselect_hyperslab(fileSpace.id, H5S_SELECT_SET, start, nullptr, one, nullptr);
    H5 memSpace{H5Screate_simple(1, one, nullptr), H5Sclose};
    const std::uint16_t version = 2;
    ASSERT_GE(H5Dwrite(d.id, rec.id, memSpace.id, fileSpace.id, H5P_DEFAULT, &version), 0);
  }
  expectExportError([&] { io::loadDataset(path); }, "acquisition 3 has format version 2; this reader knows ISMRMRD version 1");
}

TEST(IoIsmrmrdHardening, FailedLoadsLeaveNoHdf5ObjectOpen) {
  // fuzz_ismrmrd found libismrmrd leaving /dataset/xml open when reading it failed (the file then stays
  // open in HDF5 for the rest of the session); the reader now uses HDF5 directly and closes everything.
  const std::string dir = exportTestDir("ismrmrd-hardening");
  const std::string path = writeSmallFile(dir);
  {
    H5 f{H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose};
    H5Ldelete(f.id, "/dataset/xml", H5P_DEFAULT);
    const hsize_t one[1] = {1};
    H5 space{H5Screate_simple(1, one, nullptr), H5Sclose};
    H5 d{H5Dcreate2(f.id, "/dataset/xml", H5T_NATIVE_INT, space.id, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose};
    ASSERT_GE(d.id, 0);
  }
  expectExportError([&] { io::loadDataset(path); }, "cannot read the ISMRMRD XML header /dataset/xml (not a string)");
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
  const std::string good = writeSmallFile(dir);
  fs::resize_file(good, fs::file_size(good) * 3 / 4);
  expectExportError([&] { io::loadDataset(good); }, "small.h5");
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

namespace {

// The bytes of `path`, patched at `offset` by `patch`.
void patchFile(const std::string& path, std::size_t offset, const std::string& patch) {
  std::string bytes = slurpFile(path);
  ASSERT_LE(offset + patch.size(), bytes.size());
  bytes.replace(offset, patch.size(), patch);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string le(std::uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  return s;
}

}  // namespace

TEST(IoIsmrmrdHardening, DamagedGlobalHeapIsRefusedNotParsed) {
  // libhdf5 1.10 loops forever on a free-space object of size 0 and over-reads an object larger than
  // its collection (fuzz_ismrmrd found both); the reader walks the collections first.
  const std::string dir = exportTestDir("ismrmrd-hardening");
  const std::string path = writeSmallFile(dir);
  const std::string bytes = slurpFile(path);
  const std::size_t gcol = bytes.find("GCOL");
  ASSERT_NE(gcol, std::string::npos);
  ASSERT_EQ(bytes[gcol + 4], 1);
  const std::string copy = dir + "/heap.h5";
  // The first object claims far more than the collection holds.
  fs::copy_file(path, copy);
  patchFile(copy, gcol + 16 + 8, le(0x7f00000000000000ull, 8));
  expectExportError([&] { io::loadDataset(copy); }, "damaged HDF5 file (global heap at byte " + std::to_string(gcol));
  // Object index 0 (free space) of size 0: the hang. The reserved bytes do not matter (HDF5 ignores them).
  fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
  patchFile(copy, gcol + 5, std::string("\x30", 1));
  patchFile(copy, gcol + 16, le(0, 2) + le(0, 2) + le(0, 4) + le(0, 8));
  expectExportError([&] { io::loadDataset(copy); }, "object 0 claims 0 bytes");
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

TEST(IoIsmrmrdHardening, ChunkDimensionsLargerThanTheStoredChunk) {
  // A damaged chunk-dimensions message: libhdf5 would copy the nominal chunk out of the smaller stored one.
  const std::string dir = exportTestDir("ismrmrd-hardening");
  const std::string path = writeSmallFile(dir);  // coil_maps: HDF5 dims {1, 1, 2, 1, 12, 16}, one chunk
  const std::string bytes = slurpFile(path);
  const std::string layout = le(1, 4) + le(1, 4) + le(2, 4) + le(1, 4) + le(12, 4) + le(16, 4) + le(8, 4);
  const std::size_t at = bytes.find(layout);
  ASSERT_NE(at, std::string::npos) << "the chunk layout message of coil_maps was not found";
  patchFile(path, at + 16, le(40, 4));  // chunk rows 12 -> 40
  expectExportError([&] { io::loadDataset(path); }, "damaged HDF5 file (dataset /dataset/coil_maps: a chunk stores");
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}
