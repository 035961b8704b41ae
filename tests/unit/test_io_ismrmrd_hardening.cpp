// ISMRMRD files whose HDF5 structure lies: dimensions without storage (allocation bombs), a newer
// acquisition format version. Built only with LARMOR_IO (the file name's prefix).
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>
#include <hdf5.h>

#include "larmor/io/dataset_io.hpp"
#include "larmor/io/ismrmrd.hpp"
#include "test_io_export_util.hpp"
#include "test_io_ismrmrd_patch.hpp"

using namespace larmor;
using namespace larmor::testing;

namespace {

/// Replaces dataset `name` of the file by a new, empty one of `type` and shape `dims` (`maxDims` null: fixed
/// size), chunked by `chunk` (null: contiguous). True when it was created.
bool replaceDataset(const std::string& path, const char* name, hid_t type, int rank, const hsize_t* dims,
                    const hsize_t* maxDims = nullptr, const hsize_t* chunk = nullptr) {
  H5 f{H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose};
  H5Ldelete(f.id, name, H5P_DEFAULT);
  H5 space{H5Screate_simple(rank, dims, maxDims), H5Sclose};
  H5 dcpl{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
  if (chunk) H5Pset_chunk(dcpl.id, rank, chunk);
  H5 d{H5Dcreate2(f.id, name, type, space.id, H5P_DEFAULT, dcpl.id, H5P_DEFAULT), H5Dclose};
  return d.id >= 0;
}

}  // namespace

TEST(IoIsmrmrdHardening, AcquisitionCountWithoutStorage) {
  const std::string dir = freshTestDir("ismrmrd-hardening");
  const std::string path = writeSmallFile(dir);
  {
    H5 f{H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose};
    H5 d{H5Dopen2(f.id, "/dataset/data", H5P_DEFAULT), H5Dclose};
    ASSERT_GE(d.id, 0);
    const hsize_t huge[1] = {1000000000000ull};  // chunked and unlimited: costs nothing on disk
    ASSERT_GE(H5Dset_extent(d.id, huge), 0);
  }
  expectError([&] { io::loadDataset(path); }, "claims 1000000000000 acquisitions but stores only");
}

TEST(IoIsmrmrdHardening, NDArrayDimensionsWithoutStorage) {
  const std::string dir = freshTestDir("ismrmrd-hardening");
  const std::string path = writeSmallFile(dir);
  {
    H5 type{H5Tcreate(H5T_COMPOUND, 8), H5Tclose};
    H5Tinsert(type.id, "real", 0, H5T_NATIVE_FLOAT);
    H5Tinsert(type.id, "imag", 4, H5T_NATIVE_FLOAT);
    const hsize_t dims[5] = {1, 1, 1, 65536, 65536}, chunk[5] = {1, 1, 1, 64, 64};
    ASSERT_TRUE(replaceDataset(path, "/dataset/reference", type.id, 5, dims, nullptr, chunk));
  }
  // The reference is optional: refused as an array, with a warning, and the data read.
  const Dataset d = io::loadDataset(path);
  EXPECT_FALSE(d.reference.has_value());
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("NDArray /dataset/reference claims 4294967296 elements"), std::string::npos)
      << d.warnings[0];
  const std::string maps = writeSmallFile(dir);
  {
    H5 type{H5Tcreate(H5T_COMPOUND, 8), H5Tclose};
    H5Tinsert(type.id, "real", 0, H5T_NATIVE_FLOAT);
    H5Tinsert(type.id, "imag", 4, H5T_NATIVE_FLOAT);
    const hsize_t dims[5] = {1, 1, 1, 65536, 65536}, chunk[5] = {1, 1, 1, 64, 64};
    ASSERT_TRUE(replaceDataset(maps, "/dataset/coil_maps", type.id, 5, dims, nullptr, chunk));
  }
  expectError([&] { io::loadDataset(maps); }, "NDArray /dataset/coil_maps claims 4294967296 elements");
}

TEST(IoIsmrmrdHardening, NewerAcquisitionVersion) {
  const std::string dir = freshTestDir("ismrmrd-hardening");
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
  expectError([&] { io::loadDataset(path); }, "acquisition 3 has format version 2; this reader knows ISMRMRD version 1");
}

TEST(IoIsmrmrdHardening, FailedLoadsLeaveNoHdf5ObjectOpen) {
  // fuzz_ismrmrd found libismrmrd leaving /dataset/xml open when reading it failed (the file then stays
  // open in HDF5 for the rest of the session); the reader now uses HDF5 directly and closes everything.
  const std::string dir = freshTestDir("ismrmrd-hardening");
  const std::string path = writeSmallFile(dir);
  const hsize_t one[1] = {1};
  ASSERT_TRUE(replaceDataset(path, "/dataset/xml", H5T_NATIVE_INT, 1, one));
  expectError([&] { io::loadDataset(path); }, "cannot read the ISMRMRD XML header /dataset/xml (not a string)");
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
  const std::string good = writeSmallFile(dir);
  fs::resize_file(good, fs::file_size(good) * 3 / 4);
  expectError([&] { io::loadDataset(good); }, "small.h5");
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

TEST(IoIsmrmrdHardening, DamagedGlobalHeapIsRefusedNotParsed) {
  // libhdf5 1.10 loops forever on a free-space object of size 0 and over-reads an object larger than
  // its collection (fuzz_ismrmrd found both); the reader walks the collections first.
  const std::string dir = freshTestDir("ismrmrd-hardening");
  const std::string path = writeSmallFile(dir);
  const std::string bytes = slurpFile(path);
  const std::size_t gcol = bytes.find("GCOL");
  ASSERT_NE(gcol, std::string::npos);
  ASSERT_EQ(bytes[gcol + 4], 1);
  const std::string copy = dir + "/heap.h5";
  // The first object claims far more than the collection holds.
  fs::copy_file(path, copy);
  patchFile(copy, gcol + 16 + 8, le(0x7f00000000000000ull, 8));
  expectError([&] { io::loadDataset(copy); }, "damaged HDF5 file (global heap at byte " + std::to_string(gcol));
  // Object index 0 (free space) of size 0: the hang. The reserved bytes do not matter (HDF5 ignores them).
  fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
  patchFile(copy, gcol + 5, std::string("\x30", 1));
  patchFile(copy, gcol + 16, le(0, 2) + le(0, 2) + le(0, 4) + le(0, 8));
  expectError([&] { io::loadDataset(copy); }, "object 0 claims 0 bytes");
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

TEST(IoIsmrmrdHardening, ChunkDimensionsLargerThanTheStoredChunk) {
  // A damaged chunk-dimensions message: libhdf5 would copy the nominal chunk out of the smaller stored one.
  const std::string dir = freshTestDir("ismrmrd-hardening");
  const std::string path = writeSmallFile(dir);  // coil_maps: HDF5 dims {1, 1, 2, 1, 12, 16}, one chunk
  const std::string bytes = slurpFile(path);
  const std::string layout = le(1, 4) + le(1, 4) + le(2, 4) + le(1, 4) + le(12, 4) + le(16, 4) + le(8, 4);
  const std::size_t at = bytes.find(layout);
  ASSERT_NE(at, std::string::npos) << "the chunk layout message of coil_maps was not found";
  patchFile(path, at + 16, le(40, 4));  // chunk rows 12 -> 40
  expectError([&] { io::loadDataset(path); }, "damaged HDF5 file (dataset /dataset/coil_maps: 1 chunks store 3072 bytes");
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

TEST(IoIsmrmrdHardening, SequenceLengthThatDisagreesWithTheHeader) {
  // A record whose data descriptor claims far more floats than its header (and the file) account for:
  // libhdf5 would zero a buffer that long before reading (7 GB for a 12 KB file, found by fuzz_ismrmrd).
  const std::string dir = freshTestDir("ismrmrd-hardening");
  const std::string path = writeSmallFile(dir);
  const std::size_t chunkAt = acquisitionRecordAt(path, 2);
  ASSERT_NE(chunkAt, 0u);
  patchFile(path, chunkAt + kDataDescriptor, le(0x70000000u, 4));  // data's sequence length
  expectError([&] { io::loadDataset(path); }, "acquisition 2 is corrupt");
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

TEST(IoIsmrmrdHardening, HeaderStringLengthBeyondTheFile) {
  // The XML header's descriptor claiming a 3 GB string in a small file (fuzz_ismrmrd).
  const std::string dir = freshTestDir("ismrmrd-hardening");
  const std::string path = writeSmallFile(dir);
  const std::size_t at = xmlDescriptorAt(path);
  ASSERT_NE(at, 0u);
  patchFile(path, at, le(0xbd972ae4u, 4));
  expectError([&] { io::loadDataset(path); }, "/dataset/xml claims a 3180800740-byte string");
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

TEST(IoIsmrmrdHardening, AcquisitionTypeWithoutTheNeededMembers) {
  // HDF5 converts compound members by name and leaves missing ones 0; a record type without
  // active_channels (a damaged member name, found by fuzz_ismrmrd) must be refused, not read as 0 coils.
  const std::string dir = freshTestDir("ismrmrd-hardening");
  const std::string path = writeSmallFile(dir);
  {
    H5 head{H5Tcreate(H5T_COMPOUND, 4), H5Tclose};
    H5Tinsert(head.id, "number_of_samples", 0, H5T_NATIVE_UINT16);
    H5Tinsert(head.id, "trajectory_dimensions", 2, H5T_NATIVE_UINT16);
    H5 vfloat{H5Tvlen_create(H5T_NATIVE_FLOAT), H5Tclose};
    H5 rec{H5Tcreate(H5T_COMPOUND, 4 + 2 * sizeof(hvl_t)), H5Tclose};
    H5Tinsert(rec.id, "head", 0, head.id);
    H5Tinsert(rec.id, "traj", 4, vfloat.id);
    H5Tinsert(rec.id, "data", 4 + sizeof(hvl_t), vfloat.id);
    const hsize_t one[1] = {1}, unlimited[1] = {H5S_UNLIMITED};
    ASSERT_TRUE(replaceDataset(path, "/dataset/data", rec.id, 1, one, unlimited, one));
  }
  expectError([&] { io::loadDataset(path); }, "is not an ISMRMRD acquisition list (no member head.active_channels)");
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

TEST(IoIsmrmrdHardening, RecordTypeLargerThanItsChunks) {
  // A damaged array length inside the record type (physiology_time_stamp [3] -> [768], fuzz_ismrmrd):
  // the type no longer matches the chunks the index records, which libhdf5 would over-read.
  const std::string dir = freshTestDir("ismrmrd-hardening");
  const std::string path = writeSmallFile(dir);
  const std::string bytes = slurpFile(path);
  // The array datatype message of physiology_time_stamp: its dimension 3 follows the member's name.
  const std::string name = "physiology_time_stamp";
  const std::size_t at = bytes.find(name);
  ASSERT_NE(at, std::string::npos);
  const std::size_t dim = bytes.find(le(3, 4), at + name.size());
  ASSERT_NE(dim, std::string::npos);
  ASSERT_LT(dim - at, 64u);
  patchFile(path, dim, le(768, 4));
  expectError([&] { io::loadDataset(path); }, "damaged HDF5 file (dataset /dataset/data:");
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

TEST(IoIsmrmrdHardening, DescriptorNamingAMissingHeapObject) {
  // libhdf5 1.10 reads the global heap object a variable-length descriptor names without checking that
  // it exists (a damaged index read past the collection's table: a crash found by fuzz_ismrmrd).
  const std::string dir = freshTestDir("ismrmrd-hardening");
  std::string path = writeSmallFile(dir);
  const std::size_t chunkAt = acquisitionRecordAt(path, 1);
  ASSERT_NE(chunkAt, 0u);
  patchFile(path, chunkAt + kDataDescriptor + 12, le(0x7fffu, 4));  // data's heap object index
  expectError([&] { io::loadDataset(path); }, "acquisition 1's samples names heap object 32767");
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);

  // The same for the XML header's descriptor (contiguous: length, collection address, index).
  path = writeSmallFile(dir);
  const std::size_t at = xmlDescriptorAt(path);
  ASSERT_NE(at, 0u);
  patchFile(path, at + 12, le(0x7fffu, 4));
  expectError([&] { io::loadDataset(path); }, "/dataset/xml names heap object 32767");
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

TEST(IoIsmrmrdHardening, FuzzFindingsAreRefusedCleanly) {
  // Every file fuzz_ismrmrd made libhdf5 crash on (tests/unit/data/fuzz-ismrmrd-*.h5): one clear error.
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(LARMOR_TEST_DATA)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("fuzz-ismrmrd-", 0) != 0) continue;
    ++n;
    EXPECT_THROW(io::loadDataset(e.path().string()), Error) << name;
    EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0) << name;
  }
  EXPECT_GE(n, 3u);
}

TEST(IoIsmrmrdHardening, CrashInsideLibhdf5IsCaughtBySandbox) {
  // A damaged local heap that makes libhdf5 1.10 dereference a failed allocation (found by fuzz_ismrmrd):
  // in-process it would end the program; read first by larmor-h5check, it is one Error.
  const std::string path = std::string(LARMOR_TEST_DATA) + "/fuzz-ismrmrd-local-heap.h5";
  expectError([&] { io::loadDataset(path); }, "damaged HDF5 file (libhdf5 crashed reading it");
  // A good file passes the sandbox and loads.
  const std::string dir = freshTestDir("ismrmrd-hardening");
  EXPECT_NO_THROW(io::loadDataset(writeSmallFile(dir)));
}

TEST(IoIsmrmrdHardening, ComplexArrayTypeWithAMemberOutsideIt) {
  // The coil maps' compound {real, imag} with "imag" at byte 16,775,428 of an 8-byte type (fuzz_ismrmrd,
  // tests/unit/data/fuzz-ismrmrd-complex-offset.h5): libhdf5's conversion copied from far outside its buffer,
  // in this process (the sandbox reads no values). The type is refused before anything is read.
  const std::string dir = freshTestDir("ismrmrd-hardening");
  const std::string path = writeSmallFile(dir);
  const std::string bytes = slurpFile(path);
  const std::string member = std::string("imag\0\0\0\0", 8) + le(4, 4);
  std::size_t patched = 0;
  for (std::size_t at = bytes.find(member); at != std::string::npos; at = bytes.find(member, at + 1), ++patched)
    patchFile(path, at + 8, le(16775428u, 4));
  ASSERT_GE(patched, 1u) << "no complex type found in the file";
  expectError([&] { io::loadDataset(path); },
              "cannot read NDArray 'coil_maps' (its complex type is not two little-endian 32- or 64-bit floats");
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

TEST(IoIsmrmrdHardening, ComplexDoubleArraysAreRead) {
  // libismrmrd's complex double NDArrays (ISMRMRD_CXDOUBLE: two little-endian doubles) are converted to float.
  const std::string dir = freshTestDir("ismrmrd-hardening");
  const std::string path = writeSmallFile(dir);
  const Dataset before = io::loadDataset(path);
  ASSERT_TRUE(before.coilMaps.has_value());
  {
    H5 f{H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose};
    H5 old{H5Dopen2(f.id, "/dataset/coil_maps", H5P_DEFAULT), H5Dclose};
    H5 space{H5Dget_space(old.id), H5Sclose};
    hsize_t dims[8] = {0};
    const int rank = H5Sget_simple_extent_dims(space.id, dims, nullptr);
    ASSERT_GE(rank, 2);
    H5 type{H5Tcreate(H5T_COMPOUND, 16), H5Tclose};
    H5Tinsert(type.id, "real", 0, H5T_IEEE_F64LE);
    H5Tinsert(type.id, "imag", 8, H5T_IEEE_F64LE);
    std::vector<double> values(static_cast<std::size_t>(2 * before.coilMaps->size()));
    for (std::size_t i = 0; i < values.size(); i += 2) {
      values[i] = before.coilMaps->data()[i / 2].real();
      values[i + 1] = before.coilMaps->data()[i / 2].imag();
    }
    H5Ldelete(f.id, "/dataset/coil_maps", H5P_DEFAULT);
    H5 dcpl{H5Dget_create_plist(old.id), H5Pclose};  // chunked, as the extendible dataspace needs
    H5 d{H5Dcreate2(f.id, "/dataset/coil_maps", type.id, space.id, H5P_DEFAULT, dcpl.id, H5P_DEFAULT), H5Dclose};
    ASSERT_GE(d.id, 0);
    ASSERT_GE(H5Dwrite(d.id, type.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  }
  const Dataset after = io::loadDataset(path);
  ASSERT_TRUE(after.coilMaps.has_value());
  EXPECT_EQ(before.coilMaps->vec(), after.coilMaps->vec());
}
