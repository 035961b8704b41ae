#pragma once
// Shared by the ISMRMRD layout and damage tests (test_io_ismrmrd_hardening.cpp, _direct.cpp, _heaps.cpp):
// a small file, HDF5 ids that close themselves, where the bytes to damage lie, copies in other layouts.
// libismrmrd's record on disk: a 340-byte header, the traj descriptor at 344 and the data descriptor at
// 360 (each a 4-byte length, the 8-byte global heap address and a 4-byte object index), 376 bytes in
// all, one record per chunk.
#include <hdf5.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "larmor/io/ismrmrd.hpp"
#include "test_io_export_util.hpp"

namespace larmor::testing {

inline constexpr std::size_t kTrajDescriptor = 344, kDataDescriptor = 360, kRecordBytes = 376;

/// A 16 x 12 Cartesian phantom with 2 coils (12 acquisitions), written by Larmor as DIR/small.h5.
inline std::string writeSmallFile(const std::string& dir) {
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

/// The bytes of `path`, patched at `offset` by `patch`.
inline void patchFile(const std::string& path, std::size_t offset, const std::string& patch) {
  std::string bytes = slurpFile(path);
  ASSERT_LE(offset + patch.size(), bytes.size());
  bytes.replace(offset, patch.size(), patch);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/// `v` as `n` little-endian bytes.
inline std::string le(std::uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  return s;
}

/// The little-endian value of `n` bytes of `bytes` at `at`.
inline std::uint64_t leAt(const std::string& bytes, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = n; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(i)]);
  return v;
}

/// Where acquisition `row`'s record lies in the file (its one-record chunk); 0 when it cannot be found.
inline std::size_t acquisitionRecordAt(const std::string& path, hsize_t row) {
  H5 f{H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  H5 d{H5Dopen2(f.id, "/dataset/data", H5P_DEFAULT), H5Dclose};
  const hsize_t offset[1] = {row};
  unsigned mask = 0;
  haddr_t addr = HADDR_UNDEF;
  hsize_t size = 0;
  if (H5Dget_chunk_info_by_coord(d.id, offset, &mask, &addr, &size) < 0 || addr == HADDR_UNDEF) return 0;
  EXPECT_EQ(size, kRecordBytes);
  return size == kRecordBytes ? static_cast<std::size_t>(addr) : 0;
}

/// Where the XML header's string descriptor lies (libismrmrd writes it contiguous); 0 when not found.
inline std::size_t xmlDescriptorAt(const std::string& path) {
  H5 f{H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  H5 d{H5Dopen2(f.id, "/dataset/xml", H5P_DEFAULT), H5Dclose};
  const haddr_t at = H5Dget_offset(d.id);
  return at == HADDR_UNDEF ? 0 : static_cast<std::size_t>(at);
}

// `src` copied into a file made with `fcpl` (H5Ocopy rewrites the heaps in the new file's geometry).
inline std::string copyWithFileLayout(const std::string& src, const std::string& dst, hid_t fcpl) {
  H5 in{H5Fopen(src.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  H5 out{H5Fcreate(dst.c_str(), H5F_ACC_TRUNC, fcpl, H5P_DEFAULT), H5Fclose};
  EXPECT_GE(H5Ocopy(in.id, "/dataset", out.id, "/dataset", H5P_DEFAULT, H5P_DEFAULT), 0);
  return dst;
}

// /dataset/data of a copy of `src` rewritten in chunks of 4 records, deflated or with every number
// big-endian (the records' header members and the sequences' floats).
inline std::string copyWithRecords(const std::string& src, const std::string& dst, bool deflate, bool bigEndian) {
  std::filesystem::copy_file(src, dst, std::filesystem::copy_options::overwrite_existing);
  H5 f{H5Fopen(dst.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose};
  H5 d{H5Dopen2(f.id, "/dataset/data", H5P_DEFAULT), H5Dclose};
  H5 fileType{H5Dget_type(d.id), H5Tclose};
  H5 mem{H5Tget_native_type(fileType.id, H5T_DIR_ASCEND), H5Tclose};
  H5 space{H5Dget_space(d.id), H5Sclose};
  const auto n = static_cast<hsize_t>(H5Sget_simple_extent_npoints(space.id));
  std::vector<unsigned char> records(n * H5Tget_size(mem.id));
  EXPECT_GE(H5Dread(d.id, mem.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, records.data()), 0);
  H5 stored{H5Tcopy(fileType.id), H5Tclose};
  if (bigEndian) EXPECT_GE(H5Tset_order(stored.id, H5T_ORDER_BE), 0);
  H5Ldelete(f.id, "/dataset/data", H5P_DEFAULT);
  const hsize_t dims[1] = {n}, unlimited[1] = {H5S_UNLIMITED}, chunk[1] = {4};
  H5 newSpace{H5Screate_simple(1, dims, unlimited), H5Sclose};
  H5 dcpl{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
  H5Pset_chunk(dcpl.id, 1, chunk);
  if (deflate) H5Pset_deflate(dcpl.id, 1);
  H5 out{H5Dcreate2(f.id, "/dataset/data", stored.id, newSpace.id, H5P_DEFAULT, dcpl.id, H5P_DEFAULT), H5Dclose};
  EXPECT_GE(H5Dwrite(out.id, mem.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, records.data()), 0);
  H5Dvlen_reclaim(mem.id, space.id, H5P_DEFAULT, records.data());
  return dst;
}

}  // namespace larmor::testing
