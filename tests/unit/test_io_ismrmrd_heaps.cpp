// Damaged global heaps and variable-length descriptors on the direct read of ISMRMRD acquisitions
// (engine/src/io/hdf5_global_heap.cpp, ismrmrd_direct.cpp): descriptors naming nothing, sizes that lie,
// collections beyond the file, overlapping or holding an object twice; and the fallback, which still
// walks every collection. Each must be one line naming the file, never a crash or a hang; no HDF5 object
// may stay open. The damage sits in the middle records, past what the crash sandbox reads.
#include <gtest/gtest.h>

#include <filesystem>

#include "larmor/io/dataset_io.hpp"
#include "larmor/io/ismrmrd.hpp"
#include "test_io_ismrmrd_patch.hpp"

using namespace larmor;
using namespace larmor::testing;

namespace {

// Object `index`'s header in the collection at `at` (8-byte lengths), as libhdf5 steps; 0 if absent.
std::size_t objectHeaderAt(const std::string& bytes, std::size_t at, std::uint64_t index) {
  const std::size_t end = at + static_cast<std::size_t>(leAt(bytes, at + 8, 8));
  for (std::size_t q = at + 16; q + 16 <= end && end <= bytes.size();) {
    const std::uint64_t i = leAt(bytes, q, 2), size = leAt(bytes, q + 8, 8);
    if (i == index) return q;
    q += static_cast<std::size_t>(i == 0 ? size : 16 + ((size + 7) & ~std::uint64_t{7}));
  }
  return 0;
}

// Where acquisition `row`'s samples lie in the file at `path` (writeSmallFile's: 12 acquisitions).
struct Record {
  std::string path, bytes;
  std::size_t at = 0;                          ///< the record
  std::uint64_t length = 0, heap = 0, index = 0;  ///< its data descriptor
  std::size_t object = 0;                      ///< its samples' object header
  Record(const std::string& file, hsize_t row) : path(file) {
    at = acquisitionRecordAt(path, row);
    bytes = slurpFile(path);
    length = leAt(bytes, at + kDataDescriptor, 4);
    heap = leAt(bytes, at + kDataDescriptor + 4, 8);
    index = leAt(bytes, at + kDataDescriptor + 12, 4);
    object = objectHeaderAt(bytes, static_cast<std::size_t>(heap), index);
  }
};

void expectRefused(const std::string& path, const std::string& needle) {
  const std::string what = expectError([&] { (void)io::loadDataset(path); }, needle);
  EXPECT_EQ(what.rfind(path + ": damaged", 0), 0u) << what;
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}

// A 32-byte collection forged inside acquisition `host`'s samples, holding object 1 of size 0 (twice
// when `twice`, 48 bytes), and acquisition 3's empty trajectory pointed at it. Returns its offset.
std::size_t forgeCollection(const Record& r, hsize_t host, bool twice) {
  const Record h(r.path, host);
  EXPECT_NE(h.object, 0u);
  const std::size_t at = h.object + 16 + 64;
  const std::string object = le(1, 2) + le(0, 2) + le(0, 4) + le(0, 8);
  patchFile(r.path, at, std::string("GCOL\1\0\0\0", 8) + le(twice ? 48 : 32, 8) + object + (twice ? object : ""));
  patchFile(r.path, r.at + kTrajDescriptor, le(0, 4) + le(at, 8) + le(1, 4));
  return at;
}

}  // namespace

TEST(IoIsmrmrdHeaps, TheSmallFileIsReadDirectly) {
  const Record r(writeSmallFile(freshTestDir("ismrmrd-heaps")), 3);
  EXPECT_EQ(io::ismrmrdAcquisitionRead(r.path), "direct");
  ASSERT_NE(r.object, 0u);
  EXPECT_EQ(leAt(r.bytes, r.object + 8, 8), r.length * 4);
}

TEST(IoIsmrmrdHeaps, DescriptorsNamingNothing) {
  const std::string dir = freshTestDir("ismrmrd-heaps");
  {
    Record r(writeSmallFile(dir), 3);  // the free-space object
    patchFile(r.path, r.at + kDataDescriptor + 12, le(0, 4));
    expectRefused(r.path, "acquisition 3's samples names heap object 0 of a collection at " + std::to_string(r.heap) +
                              ", which does not exist");
  }
  {
    Record r(writeSmallFile(dir), 3);
    const std::size_t beyond = r.bytes.size() + 4096;
    patchFile(r.path, r.at + kDataDescriptor + 4, le(beyond, 8));
    expectRefused(r.path, "acquisition 3's samples names a global heap at byte " + std::to_string(beyond) +
                              ", beyond the end of the " + std::to_string(r.bytes.size()) + "-byte file");
  }
  {
    Record r(writeSmallFile(dir), 3);
    patchFile(r.path, r.at + kDataDescriptor + 4, le(8, 8));
    expectRefused(r.path, "acquisition 3's samples names a global heap at byte 8, where there is none");
  }
}

TEST(IoIsmrmrdHeaps, SizesThatLie) {
  const std::string dir = freshTestDir("ismrmrd-heaps");
  {
    Record r(writeSmallFile(dir), 3);  // the object holds 4 bytes fewer than the descriptor says (same padding)
    patchFile(r.path, r.object + 8, le(r.length * 4 - 4, 8));
    expectRefused(r.path, "acquisition 3's samples holds " + std::to_string(r.length) + " values, its heap object " +
                              std::to_string(r.length * 4 - 4) + " bytes");
  }
  {
    Record r(writeSmallFile(dir), 3);  // the object claims more than its collection holds: libhdf5 would read past it
    patchFile(r.path, r.object + 8, le(std::uint64_t{1} << 40, 8));
    expectRefused(r.path, "object " + std::to_string(r.index) + " claims 1099511627776 bytes");
  }
  {
    Record r(writeSmallFile(dir), 3);  // a collection cut short by the end of the file
    patchFile(r.path, r.heap + 8, le(r.bytes.size(), 8));
    expectRefused(r.path, "global heap at byte " + std::to_string(r.heap) + " claims " +
                              std::to_string(r.bytes.size()) +
                              " bytes, " + std::to_string(r.bytes.size() - r.heap) + " are left in the file");
  }
  {
    Record r(writeSmallFile(dir), 3);
    patchFile(r.path, r.heap + 8, le(8, 8));
    expectRefused(r.path,
                  "global heap at byte " + std::to_string(r.heap) + " claims 8 bytes, less than its 16-byte header");
  }
}

TEST(IoIsmrmrdHeaps, ForgedCollections) {
  const std::string dir = freshTestDir("ismrmrd-heaps");
  {
    // Inside the collection acquisition 0's samples lie in, which is parsed before acquisition 3.
    Record r(writeSmallFile(dir), 3);
    const Record first(r.path, 0);
    const std::size_t forged = forgeCollection(r, 0, false);
    expectRefused(r.path, "global heap at byte " + std::to_string(forged) + " overlaps the one at byte " +
                              std::to_string(first.heap));
  }
  {
    // Inside a collection not parsed yet (the last acquisition's): found when that one is parsed.
    Record r(writeSmallFile(dir), 3);
    const Record last(r.path, 11);
    ASSERT_NE(last.heap, r.heap) << "the small file's records fit one collection; the test needs two";
    (void)forgeCollection(r, 11, false);
    expectRefused(r.path, "global heap at byte " + std::to_string(last.heap) + " overlaps the one at byte ");
  }
  {
    Record r(writeSmallFile(dir), 3);
    const std::size_t forged = forgeCollection(r, 11, true);
    expectRefused(r.path, "global heap at byte " + std::to_string(forged) + " holds object 1 twice");
  }
}

TEST(IoIsmrmrdHeaps, FreeSpaceOfSizeZero) {
  // The hang of libhdf5's parser (an endless loop on a free-space object of size 0), in the collection
  // of the last acquisitions.
  const Record r(writeSmallFile(freshTestDir("ismrmrd-heaps")), 11);
  const std::size_t free = objectHeaderAt(r.bytes, static_cast<std::size_t>(r.heap), 0);
  if (free == 0) GTEST_SKIP() << "the last collection has no free space";
  patchFile(r.path, free + 8, le(0, 8));
  expectRefused(r.path, "global heap at byte " + std::to_string(r.heap) + ": object 0 claims 0 bytes");
}

TEST(IoIsmrmrdHeaps, TheFallbackStillWalksEveryCollection) {
  // Compressed records hide their descriptors, so libhdf5 converts them; every collection of the file is
  // walked first. The newest collection (the rewritten records' samples) is damaged.
  const std::string dir = freshTestDir("ismrmrd-heaps");
  const std::string path = copyWithRecords(writeSmallFile(dir), dir + "/deflate.h5", true, false);
  EXPECT_EQ(io::ismrmrdAcquisitionRead(path), "libhdf5: filters (compressed chunks)");
  const std::string bytes = slurpFile(path);
  const std::size_t last = bytes.rfind("GCOL");
  ASSERT_NE(last, std::string::npos);
  patchFile(path, last + 16 + 8, le(std::uint64_t{1} << 40, 8));
  expectRefused(path, "global heap at byte " + std::to_string(last) + ": object");
}

TEST(IoIsmrmrdHeaps, ChunksNeverWrittenEndTheRead) {
  // An extent 1000 times the records stored (within what compression could explain): the chunks never
  // written hold zeros, so the first of them is a record without channels; neither the helper nor the
  // read looks further.
  const std::string path = writeSmallFile(freshTestDir("ismrmrd-heaps"));
  {
    H5 f{H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose};
    H5 d{H5Dopen2(f.id, "/dataset/data", H5P_DEFAULT), H5Dclose};
    const hsize_t extent[1] = {12000};
    ASSERT_GE(H5Dset_extent(d.id, extent), 0);
  }
  EXPECT_EQ(io::ismrmrdAcquisitionRead(path), "direct");
  expectError([&] { (void)io::loadDataset(path); }, "acquisition 12 has no channels");
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL), 0);
}
