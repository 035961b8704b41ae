// ISMRMRD acquisition records read without libhdf5's conversion (ismrmrd_direct.hpp). Format facts
// (libismrmrd 1.x's HDF5 layout; the HDF5 File Format Specification):
// - /group/data is a one-dimensional dataset of compound records {head, traj, data}, chunked by a
//   number of records (libismrmrd: 1) and unfiltered; with 8-byte file addresses a record on disk has
//   the layout of the file datatype as libhdf5 reports it (a variable-length member's 16 bytes equal
//   hvl_t's), so each member lies at the offset the type gives;
// - head's members are little-endian unsigned integers (version, the sizes, the indices in idx) and
//   IEEE 32-bit floats (position, directions), physiology_time_stamp an array of three 32-bit integers;
// - traj and data are sequences of IEEE little-endian 32-bit floats: a 4-byte length in floats, the
//   global heap collection's address and the object's index (hdf5_global_heap.hpp); data holds re/im
//   pairs, [channels][samples];
// - a chunk never written holds the fill value; with the default one, records of zeros.
//
// Why: libhdf5 converts every record's sequences one by one (an allocation and a copy per sequence, a
// heap collection parsed through its metadata cache), and we had to walk every heap of the file first
// to keep its parser safe. Here one pass over the file does all of it: each record's bytes are read,
// its header members taken at the file type's offsets, each descriptor resolved in a collection parsed
// once with every size checked (GlobalHeaps), and the samples handed on from the collection's bytes,
// where the reader checks and places them. libhdf5 is only asked where the chunks lie.
//
// Anything else goes through libhdf5 as before (AcquisitionReader's fallback, directReadRefusal says
// why): filters, other address or length sizes, a user block, a user-defined fill value, header members
// or sequence elements of another type (big-endian, other widths), missing members (libhdf5 leaves
// them 0). LARMOR_ISMRMRD_HDF5_READ=1 forces the fallback (tests compare the two).
#include "ismrmrd_direct.hpp"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "ismrmrd_sample_verifier.hpp"

namespace larmor::io::detail {

struct RecordLayout {
  std::size_t record = 0;
  std::size_t version = 0, flags = 0, scanCounter = 0, samples = 0, channels = 0, pre = 0, post = 0, center = 0,
              trajDims = 0, physio = 0, position = 0, readDir = 0, phaseDir = 0, sliceDir = 0;
  std::size_t idx[8] = {0};
  std::size_t traj = 0, data = 0;
};

namespace {

constexpr std::uint64_t kBlock = 256;  // records per read when chunks are small

// Member `name` of compound `type` (at `base` in the record) must have exactly the file type `want`, or
// be a one-dimensional array of `arrayLength` of it; its offset goes to `at`. Else `why` says which.
bool exactMember(hid_t type, const char* name, std::size_t base, hid_t want, hsize_t arrayLength, std::size_t& at,
                 std::string& why, const char* prefix = "head.") {
  if (!why.empty()) return false;
  const int i = H5Tget_member_index(type, name);
  if (i < 0) {
    why = std::string("member ") + prefix + name + " is missing";
    return false;
  }
  H5Id m(H5Tget_member_type(type, static_cast<unsigned>(i)), H5Tclose);
  bool ok = m.id >= 0;
  if (ok && arrayLength > 0) {
    hsize_t dims[H5S_MAX_RANK] = {0};
    ok = H5Tget_class(m.id) == H5T_ARRAY && H5Tget_array_ndims(m.id) == 1 && H5Tget_array_dims2(m.id, dims) == 1 &&
         dims[0] == arrayLength;
    H5Id super(ok ? H5Tget_super(m.id) : -1, H5Tclose);
    ok = ok && super.id >= 0 && H5Tequal(super.id, want) > 0;
  } else {
    ok = ok && H5Tequal(m.id, want) > 0;
  }
  if (!ok) {
    why = std::string("member ") + prefix + name + " is not stored as libismrmrd writes it";
    return false;
  }
  at = base + H5Tget_member_offset(type, static_cast<unsigned>(i));
  return true;
}

// The record layout of `dset`'s type into `l`; "" or why it is not the one read directly.
std::string readLayout(hid_t dset, RecordLayout& l) {
  H5Id type(H5Dget_type(dset), H5Tclose);
  std::string why;
  const int head = type.id >= 0 ? H5Tget_member_index(type.id, "head") : -1;
  H5Id headType(head >= 0 ? H5Tget_member_type(type.id, static_cast<unsigned>(head)) : -1, H5Tclose);
  if (headType.id < 0 || H5Tget_class(headType.id) != H5T_COMPOUND) return "no compound member head";
  l.record = H5Tget_size(type.id);
  const std::size_t h = H5Tget_member_offset(type.id, static_cast<unsigned>(head));
  const hid_t t = headType.id;
  exactMember(t, "version", h, H5T_STD_U16LE, 0, l.version, why);
  exactMember(t, "flags", h, H5T_STD_U64LE, 0, l.flags, why);
  exactMember(t, "scan_counter", h, H5T_STD_U32LE, 0, l.scanCounter, why);
  exactMember(t, "number_of_samples", h, H5T_STD_U16LE, 0, l.samples, why);
  exactMember(t, "active_channels", h, H5T_STD_U16LE, 0, l.channels, why);
  exactMember(t, "discard_pre", h, H5T_STD_U16LE, 0, l.pre, why);
  exactMember(t, "discard_post", h, H5T_STD_U16LE, 0, l.post, why);
  exactMember(t, "center_sample", h, H5T_STD_U16LE, 0, l.center, why);
  exactMember(t, "trajectory_dimensions", h, H5T_STD_U16LE, 0, l.trajDims, why);
  exactMember(t, "physiology_time_stamp", h, H5T_STD_U32LE, 3, l.physio, why);
  exactMember(t, "position", h, H5T_IEEE_F32LE, 3, l.position, why);
  exactMember(t, "read_dir", h, H5T_IEEE_F32LE, 3, l.readDir, why);
  exactMember(t, "phase_dir", h, H5T_IEEE_F32LE, 3, l.phaseDir, why);
  exactMember(t, "slice_dir", h, H5T_IEEE_F32LE, 3, l.sliceDir, why);
  const int idx = H5Tget_member_index(t, "idx");
  H5Id idxType(idx >= 0 ? H5Tget_member_type(t, static_cast<unsigned>(idx)) : -1, H5Tclose);
  if (why.empty() && (idxType.id < 0 || H5Tget_class(idxType.id) != H5T_COMPOUND)) why = "no compound member head.idx";
  if (!why.empty()) return why;
  const std::size_t ib = h + H5Tget_member_offset(t, static_cast<unsigned>(idx));
  const char* names[8] = {"kspace_encode_step_1", "kspace_encode_step_2", "average", "slice",
                          "contrast",             "phase",                "repetition", "set"};
  for (int k = 0; k < 8; ++k) exactMember(idxType.id, names[k], ib, H5T_STD_U16LE, 0, l.idx[k], why, "head.idx.");
  for (auto [member, at] : {std::pair<const char*, std::size_t*>{"traj", &l.traj}, {"data", &l.data}}) {
    if (!why.empty()) break;
    const int i = H5Tget_member_index(type.id, member);
    H5Id vlen(i >= 0 ? H5Tget_member_type(type.id, static_cast<unsigned>(i)) : -1, H5Tclose);
    H5Id super(vlen.id >= 0 && H5Tget_class(vlen.id) == H5T_VLEN ? H5Tget_super(vlen.id) : -1, H5Tclose);
    if (super.id < 0 || H5Tequal(super.id, H5T_IEEE_F32LE) <= 0)
      why = std::string("member ") + member + " is not a sequence of little-endian 32-bit floats";
    else
      *at = H5Tget_member_offset(type.id, static_cast<unsigned>(i));
  }
  H5Eclear2(H5E_DEFAULT);
  return why;
}

}  // namespace

std::string directReadRefusal(hid_t dset) {
  if (const char* env = std::getenv("LARMOR_ISMRMRD_HDF5_READ"); env && *env && std::string(env) != "0")
    return "LARMOR_ISMRMRD_HDF5_READ is set";
  if constexpr (std::endian::native != std::endian::little) return "a big-endian host";
  H5Id file(H5Iget_file_id(dset), H5Fclose);
  H5Id fcpl(file.id >= 0 ? H5Fget_create_plist(file.id) : -1, H5Pclose);
  std::size_t addr = 0, len = 0;
  hsize_t userblock = 0;
  if (fcpl.id < 0 || H5Pget_sizes(fcpl.id, &addr, &len) < 0 || H5Pget_userblock(fcpl.id, &userblock) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return "the file's address sizes cannot be read";
  }
  if (addr != 8 || len != 8)
    return std::to_string(addr) + "-byte addresses and " + std::to_string(len) + "-byte lengths (not 8 and 8)";
  if (userblock != 0) return "a user block";
  H5Id dcpl(H5Dget_create_plist(dset), H5Pclose);
  const H5D_layout_t layout = dcpl.id >= 0 ? H5Pget_layout(dcpl.id) : H5D_LAYOUT_ERROR;
  H5D_fill_value_t fill = H5D_FILL_VALUE_ERROR;
  hsize_t chunk[1] = {0};
  std::string why;
  if (layout == H5D_CHUNKED) {
    if (H5Pget_nfilters(dcpl.id) != 0) why = "filters (compressed chunks)";
    else if (H5Pget_chunk(dcpl.id, 1, chunk) != 1 || chunk[0] == 0 || chunk[0] > (1u << 20)) why = "its chunk shape";
  } else if (layout == H5D_CONTIGUOUS) {
    if (H5Dget_offset(dset) == HADDR_UNDEF) why = "contiguous storage never written";
  } else {
    why = "its storage layout";
  }
  if (why.empty() && (H5Pfill_value_defined(dcpl.id, &fill) < 0 || fill == H5D_FILL_VALUE_USER_DEFINED))
    why = "a user-defined fill value";
  H5Eclear2(H5E_DEFAULT);
  if (!why.empty()) return why;
  RecordLayout l;
  return readLayout(dset, l);
}

DirectRecords::DirectRecords(hid_t dset, const std::string& path, const std::string& name, std::uint64_t count)
    : dset_(dset), path_(path), name_(name), layout_(std::make_unique<RecordLayout>()), heaps_(path, dset),
      count_(count) {
  if (const std::string why = readLayout(dset, *layout_); !why.empty())
    throw Error(path + ": " + name + " cannot be read directly (" + why + ")");
  if (!heaps_.usable()) throw Error(path + ": cannot open the file (" + std::strerror(errno) + ")");
  recordBytes_ = layout_->record;
  H5Id dcpl(H5Dget_create_plist(dset), H5Pclose);
  hsize_t chunk[1] = {0};
  if (H5Pget_layout(dcpl.id) == H5D_CHUNKED && H5Pget_chunk(dcpl.id, 1, chunk) == 1) {
    chunkRecords_ = chunk[0];
  } else {
    contiguousAt_ = H5Dget_offset(dset);
    const std::uint64_t file = heaps_.fileBytes();
    if (contiguousAt_ > file || (file - contiguousAt_) / recordBytes_ < count_)
      throw Error(path + ": damaged or truncated HDF5 file (" + name + ": " + std::to_string(count_) + " records of " +
                  std::to_string(recordBytes_) + " bytes from byte " + std::to_string(contiguousAt_) +
                  " run past the end of the " + std::to_string(file) + "-byte file)");
  }
  H5Eclear2(H5E_DEFAULT);
}

// H5Dget_chunk_storage_size and H5Dread_chunk look a chunk up in the index (microseconds);
// H5Dget_chunk_info_by_coord, which also gives its address, took 14 s for the 32,768 chunks of the 3.3 GB
// file (libhdf5 1.10.8), so the chunk is read through libhdf5, raw, after its size is checked.
bool DirectRecords::chunkStored(std::uint64_t first) const {
  const hsize_t offset[1] = {first};
  hsize_t size = 0;
  if (H5Dget_chunk_storage_size(dset_, offset, &size) < 0 || size == 0) {
    H5Eclear2(H5E_DEFAULT);
    return false;  // never written: the default fill value
  }
  const std::uint64_t nominal = chunkRecords_ * recordBytes_;
  // H5Dread_chunk copies the stored size into our buffer of the nominal one.
  if (size != nominal)
    throw Error(path_ + ": damaged HDF5 file (dataset " + name_ + ": a chunk stores " + std::to_string(size) +
                " bytes, its dimensions need " + std::to_string(nominal) + ")");
  return true;
}

void DirectRecords::lookUpEveryChunk() const {
  if (chunkRecords_ == 0) return;  // contiguous: its extent was checked when opened
  // Up to the first chunk never written: its records are zeros, and a record without channels ends the
  // read there (a damaged extent may claim a thousand times the records stored: no lookups for those).
  for (std::uint64_t first = 0; first < count_; first += chunkRecords_)
    if (!chunkStored(first)) break;
}

void DirectRecords::verifySamplesOnly() {
  const int threads = std::min(omp_get_max_threads(), kMaxHelpers);
  if (verifier_ || threads < 2) return;  // one thread: the helper's reads would be the reader's own
  try {
    verifier_ = std::make_unique<SampleVerifier>(path_, heaps_, recordBytes_, layout_->data, threads);
  } catch (const std::exception&) {
    return;  // no threads or file descriptors to spare: read as before
  }
  block_.raw.clear();  // a block already read is read again, with its samples checked
}

void DirectRecords::readBlock(std::uint64_t i) {
  if (!verifier_) {
    readRecords(i, block_);
    return;
  }
  if (!verifier_->first(blockStart(i))) {  // the first block, or a jump
    verifier_->clear();
    RecordBlock b;
    readRecords(i, b);
    verifier_->post(std::move(b));
  }
  verifier_->take(block_, prefetched_);
  // The blocks ahead are read (their chunks, through libhdf5: here, on this thread) and checked meanwhile.
  for (std::uint64_t next = std::max(verifier_->end(), block_.start + block_.count);
       verifier_->queued() < SampleVerifier::kAhead && next < count_;) {
    RecordBlock ahead;
    try {
      readRecords(next, ahead);
    } catch (const Error&) {
      return;  // reported when the caller gets there (after what the blocks before may have to say)
    }
    next = ahead.start + ahead.count;
    verifier_->post(std::move(ahead));
  }
}

DirectRecords::~DirectRecords() = default;

std::uint64_t DirectRecords::blockStart(std::uint64_t i) const {
  return chunkRecords_ == 0 ? i / kBlock * kBlock : i / chunkRecords_ * chunkRecords_;
}

void DirectRecords::readRecords(std::uint64_t i, RecordBlock& b) const {
  b.start = blockStart(i);
  if (chunkRecords_ == 0) {
    b.count = std::min(kBlock, count_ - b.start);
    b.raw.resize(b.count * recordBytes_);
    b.stored.assign(b.count, 1);
    if (!heaps_.readAt(contiguousAt_ + b.start * recordBytes_, b.raw.data(), b.raw.size()))
      throw Error(path_ + ": truncated HDF5 file (" + name_ + " ends before acquisition " + std::to_string(i) + ")");
    return;
  }
  const std::uint64_t chunks = std::max<std::uint64_t>(1, kBlock / chunkRecords_);
  b.count = std::min(chunks * chunkRecords_, count_ - b.start);
  const std::uint64_t nominal = chunkRecords_ * recordBytes_;
  const std::uint64_t used = (b.count + chunkRecords_ - 1) / chunkRecords_;
  b.raw.resize(used * nominal);
  b.stored.assign(b.count, 0);
  for (std::uint64_t c = 0; c < used; ++c) {
    const hsize_t offset[1] = {b.start + c * chunkRecords_};
    if (!chunkStored(offset[0])) continue;
    std::uint32_t filters = 0;
    if (H5Dread_chunk(dset_, H5P_DEFAULT, offset, &filters, b.raw.data() + c * nominal) < 0)
      throw Error(path_ + ": damaged or truncated HDF5 file (" + name_ + ": the chunk of acquisition " +
                  std::to_string(offset[0]) + " cannot be read: " + hdf5Reason() + ")");
    if (filters != 0)
      throw Error(path_ + ": damaged HDF5 file (dataset " + name_ +
                  ": a chunk is marked filtered, the dataset has no filters)");
    const std::uint64_t lo = c * chunkRecords_, hi = std::min(b.count, lo + chunkRecords_);
    std::fill(b.stored.begin() + static_cast<std::ptrdiff_t>(lo), b.stored.begin() + static_cast<std::ptrdiff_t>(hi), 1);
  }
}

const AcqRecord& DirectRecords::get(std::uint64_t i) {
  if (block_.raw.empty() || i < block_.start || i >= block_.start + block_.count) readBlock(i);
  std::memset(static_cast<void*>(&record_), 0, sizeof record_);
  verified_ = false;
  const std::uint64_t k = i - block_.start;
  if (!block_.stored[k]) return record_;  // the default fill value: zeros, empty sequences (as libhdf5 gives)
  const unsigned char* r = block_.raw.data() + k * recordBytes_;
  const RecordLayout& l = *layout_;
  AcqHead& h = record_.head;
  const auto u16 = [r](std::size_t at) {
    std::uint16_t v;
    std::memcpy(&v, r + at, sizeof v);
    return v;
  };
  h.version = u16(l.version);
  std::memcpy(&h.flags, r + l.flags, sizeof h.flags);
  std::memcpy(&h.scan_counter, r + l.scanCounter, sizeof h.scan_counter);
  h.number_of_samples = u16(l.samples), h.active_channels = u16(l.channels);
  h.discard_pre = u16(l.pre), h.discard_post = u16(l.post), h.center_sample = u16(l.center);
  h.trajectory_dimensions = u16(l.trajDims);
  std::memcpy(h.physiology_time_stamp, r + l.physio, sizeof h.physiology_time_stamp);
  std::memcpy(h.position, r + l.position, sizeof h.position);
  std::memcpy(h.read_dir, r + l.readDir, sizeof h.read_dir);
  std::memcpy(h.phase_dir, r + l.phaseDir, sizeof h.phase_dir);
  std::memcpy(h.slice_dir, r + l.sliceDir, sizeof h.slice_dir);
  std::uint16_t* idx[8] = {&h.idx.kspace_encode_step_1, &h.idx.kspace_encode_step_2, &h.idx.average, &h.idx.slice,
                           &h.idx.contrast, &h.idx.phase, &h.idx.repetition, &h.idx.set};
  for (int q = 0; q < 8; ++q) *idx[q] = u16(l.idx[q]);
  const VlenDescriptor t = decodeDescriptor(r + l.traj), d = decodeDescriptor(r + l.data);
  requireAcquisitionSizes(path_, i, h.number_of_samples, h.active_channels, h.trajectory_dimensions, d.length,
                          t.length);
  const std::string name = "acquisition " + std::to_string(i);
  // The trajectory is copied out first: the samples' collection may replace the bytes it lies in.
  const HeapObject to = heaps_.object(t, sizeof(float), name + "'s trajectory");
  traj_.resize(t.length);
  if (t.length > 0) std::memcpy(traj_.data(), heaps_.bytes(to), to.size);
  record_.traj.len = t.length;
  record_.traj.p = t.length > 0 ? traj_.data() : nullptr;
  record_.data.len = d.length;
  if (verifier_ && !isFlag(h.flags, ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT)) {
    const SampleCheck& p = prefetched_[static_cast<std::size_t>(k)];
    if (p.ok && p.finite) {
      if (p.collection.size > 0) heaps_.adopt(d.address, p.collection, name + "'s samples");
      (void)heaps_.object(d, sizeof(float), name + "'s samples");  // the index and size, checked here again
      record_.data.p = nullptr;
      verified_ = true;
      return record_;
    }
  }
  const HeapObject dobj = heaps_.object(d, sizeof(float), name + "'s samples");
  record_.data.p = d.length > 0 ? const_cast<unsigned char*>(heaps_.bytes(dobj)) : nullptr;
  return record_;
}

}  // namespace larmor::io::detail
