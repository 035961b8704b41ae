// ISMRMRD acquisition records (ismrmrd_records.hpp). Format facts (ISMRMRD 1.x, libismrmrd's HDF5 layout):
// /group/data is a one-dimensional dataset of compound records {head, traj, data}: head is the
// acquisition header (ISMRMRD_AcquisitionHeader, members converted by name), traj a variable-length
// sequence of floats (trajectory_dimensions per sample), data one of floats (re/im interleaved,
// [channels][samples]). On disk a sequence is a 4-byte little-endian length, the global heap address and
// a 4-byte object index; with 8-byte file addresses (libismrmrd's files) that equals hvl_t in memory.
//
// Two ways to read them. Files laid out as libismrmrd writes them are read directly, without libhdf5's
// conversion (DirectRecords, ismrmrd_direct.cpp: one pass over the file). The rest (compressed chunks,
// other address sizes, big-endian or other member types; directReadRefusal says which) go through
// libhdf5 as before, with these guards: before HDF5 converts a record's variable-length fields it
// allocates and zeroes a buffer as long as the sequence length stored in the record's descriptor,
// whatever the data hold: one damaged length made libhdf5 1.10 zero 7 GB for a 12 KB file (fuzz_ismrmrd).
// So the records are first read raw (a chunk with H5Dread_chunk, or contiguous data from the file) and
// every descriptor's length compared with the record's own header (RawRecordCheck): data must hold
// 2 * samples * channels floats, traj samples * trajectory_dimensions, and name a sound heap object of
// that size (GlobalHeaps). Files with other address sizes, and compressed chunks (not readable raw), go
// without that check but have every heap collection walked first (checkGlobalHeaps); the converted
// records are checked the same way after the read (get). Chunked data also get every chunk's stored size
// checked against the chunk dimensions (ChunkCheck). Either way the members the reader needs must exist
// (HDF5 would leave missing ones 0) and every member must lie inside the record.
#include "ismrmrd_records.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <utility>

#include "hdf5_global_heap.hpp"
#include "ismrmrd_direct.hpp"

namespace larmor::io::detail {

void requireAcquisitionSizes(const std::string& path, std::uint64_t i, std::uint64_t samples, std::uint64_t channels,
                             std::uint64_t trajDims, std::uint64_t dataFloats, std::uint64_t trajValues) {
  const std::string says = path + ": acquisition " + std::to_string(i) + " is corrupt (its header says " +
                           std::to_string(samples) + " samples x ";
  if (dataFloats != 2 * samples * channels)
    throw Error(says + std::to_string(channels) + " channels, it stores " + std::to_string(dataFloats) + " floats)");
  if (trajValues != samples * trajDims)
    throw Error(says + std::to_string(trajDims) + " trajectory dimensions, it stores " + std::to_string(trajValues) +
                " values)");
}

// Scans that carry no imaging k-space for this reconstruction.
bool isAuxiliaryScan(std::uint64_t flags) {
  using namespace ISMRMRD;
  for (auto f : {ISMRMRD_ACQ_IS_NAVIGATION_DATA, ISMRMRD_ACQ_IS_PHASECORR_DATA, ISMRMRD_ACQ_IS_HPFEEDBACK_DATA,
                 ISMRMRD_ACQ_IS_DUMMYSCAN_DATA, ISMRMRD_ACQ_IS_RTFEEDBACK_DATA,
                 ISMRMRD_ACQ_IS_SURFACECOILCORRECTIONSCAN_DATA, ISMRMRD_ACQ_IS_PHASE_STABILIZATION_REFERENCE,
                 ISMRMRD_ACQ_IS_PHASE_STABILIZATION})
    if (isFlag(flags, f)) return true;
  return false;
}

AcquisitionInfo infoOf(const AcqHead& ah) {
  AcquisitionInfo info;
  info.scanCounter = ah.scan_counter;
  info.flags = ah.flags;
  info.samples = ah.number_of_samples;
  info.channels = ah.active_channels;
  info.trajectoryDims = ah.trajectory_dimensions;
  info.pe1 = ah.idx.kspace_encode_step_1;
  info.pe2 = ah.idx.kspace_encode_step_2;
  info.slice = ah.idx.slice;
  info.repetition = ah.idx.repetition;
  info.contrast = ah.idx.contrast, info.phase = ah.idx.phase, info.set = ah.idx.set, info.average = ah.idx.average;
  return info;
}

// Checks acquisition records against what the file stores, raw, before HDF5 converts them (see above).
class RawRecordCheck {
 public:
  RawRecordCheck(hid_t dset, const std::string& path, const std::string& name) : dset_(dset), path_(path), name_(name) {
    inspect();
    H5Eclear2(H5E_DEFAULT);
  }
  bool usable() const { return mode_ != Mode::None; }

  /// Checks records [first, first + n) of the `count` in the dataset.
  void check(hsize_t first, hsize_t n, hsize_t count) const {
    if (mode_ == Mode::None || n == 0) return;
    if (mode_ == Mode::Contiguous) {
      std::vector<unsigned char> raw(static_cast<std::size_t>(n * record_));
      std::ifstream in(path_, std::ios::binary);
      if (!in.seekg(static_cast<std::streamoff>(address_ + first * record_)) ||
          !in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size())))
        return;  // beyond the end of the file: HDF5's read fails on its own
      checkRecords(raw.data(), first, first, first + n);
      return;
    }
    std::vector<unsigned char> raw(static_cast<std::size_t>(nominal_));
    for (hsize_t chunk = first / chunk_; chunk <= (first + n - 1) / chunk_; ++chunk) {
      hsize_t offset[1] = {chunk * chunk_};
      hsize_t stored = 0;
      if (H5Dget_chunk_storage_size(dset_, offset, &stored) < 0 || stored == 0) {
        H5Eclear2(H5E_DEFAULT);  // unallocated: fill values, which hold empty sequences
        continue;
      }
      if (stored != nominal_)
        throw Error(path_ + ": damaged HDF5 file (dataset " + name_ + ": a chunk stores " + std::to_string(stored) +
                    " bytes, its dimensions need " + std::to_string(nominal_) + ")");
      std::uint32_t filters = 0;
      if (H5Dread_chunk(dset_, H5P_DEFAULT, offset, &filters, raw.data()) < 0) {
        H5Eclear2(H5E_DEFAULT);
        continue;  // HDF5's own read reports it
      }
      checkRecords(raw.data(), offset[0], std::max(first, offset[0]), std::min({first + n, offset[0] + chunk_, count}));
    }
  }

 private:
  enum class Mode { None, Chunked, Contiguous };
  struct Field {
    std::size_t at = 0, size = 0;
    bool bigEndian = false;
  };

  static std::uint64_t read(const unsigned char* r, const Field& f) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < f.size; ++i) v |= static_cast<std::uint64_t>(r[f.at + i]) << (8 * (f.bigEndian ? f.size - 1 - i : i));
    return v;
  }

  // Records [lo, hi) from `raw`, which starts with record `base`.
  void checkRecords(const unsigned char* raw, hsize_t base, hsize_t lo, hsize_t hi) const {
    if (!heaps_) heaps_ = std::make_unique<GlobalHeaps>(path_, dset_);
    if (!heaps_->usable()) return;  // HDF5's own read reports an unreadable file
    for (hsize_t i = lo; i < hi; ++i) {
      const unsigned char* r = raw + (i - base) * record_;
      if (headerIntegers_) {
        const std::uint64_t ns = read(r, samples_), nc = read(r, channels_), td = read(r, trajDims_);
        const std::uint64_t dataLen = read(r, data_), trajLen = read(r, traj_);
        requireAcquisitionSizes(path_, i, ns, nc, td, dataLen, trajLen);
      }
      // Every descriptor must name a heap object of its length (whatever the header's member types).
      const std::string name = "acquisition " + std::to_string(i);
      (void)heaps_->object(decodeDescriptor(r + traj_.at), trajElement_, name + "'s trajectory");
      (void)heaps_->object(decodeDescriptor(r + data_.at), dataElement_, name + "'s samples");
    }
  }

  // An unsigned or signed integer member of compound `type` (at `base`), as it lies on disk.
  bool integerMember(hid_t type, const char* member, std::size_t base, Field& f) const {
    const int idx = H5Tget_member_index(type, member);
    if (idx < 0) throw Error(path_ + ": " + name_ + " is not an ISMRMRD acquisition list (no member head." + member + ")");
    H5Id t(H5Tget_member_type(type, static_cast<unsigned>(idx)), H5Tclose);
    if (t.id < 0 || H5Tget_class(t.id) != H5T_INTEGER || H5Tget_size(t.id) > 8) return false;
    f.at = base + H5Tget_member_offset(type, static_cast<unsigned>(idx));
    f.size = H5Tget_size(t.id);
    f.bigEndian = H5Tget_order(t.id) == H5T_ORDER_BE;
    return f.at + f.size <= record_;
  }

  // Every member of a compound type (nested compounds and arrays too) must lie inside it: libhdf5 1.10
  // converts members by their offsets and sizes without checking them against the element, so a damaged
  // type reads past its conversion buffer (fuzz_ismrmrd, through the sandbox's sanitizer).
  void requireMembersInside(hid_t type, const std::string& what, int depth = 0) const {
    if (depth > 8) throw Error(path_ + ": " + name_ + " has a record type nested too deeply (" + what + ")");
    const H5T_class_t cls = H5Tget_class(type);
    if (cls == H5T_ARRAY) {
      H5Id base(H5Tget_super(type), H5Tclose);
      if (base.id >= 0) requireMembersInside(base.id, what, depth + 1);
      return;
    }
    if (cls != H5T_COMPOUND) return;
    const std::size_t size = H5Tget_size(type);
    const int n = H5Tget_nmembers(type);
    for (int i = 0; i < n; ++i) {
      H5Id member(H5Tget_member_type(type, static_cast<unsigned>(i)), H5Tclose);
      const std::size_t at = H5Tget_member_offset(type, static_cast<unsigned>(i));
      const std::size_t bytes = member.id >= 0 ? H5Tget_size(member.id) : 0;
      char* raw = H5Tget_member_name(type, static_cast<unsigned>(i));
      const std::string name = raw ? raw : "?";
      H5free_memory(raw);
      if (member.id < 0 || bytes == 0 || at > size || bytes > size - at)
        throw Error(path_ + ": damaged HDF5 file (" + name_ + ": member " + what + name + " at byte " + std::to_string(at) +
                    " with " + std::to_string(bytes) + " bytes does not fit in its " + std::to_string(size) +
                    "-byte record)");
      requireMembersInside(member.id, what + name + ".", depth + 1);
    }
  }

  void inspect() {
    // The members the reader needs must exist whatever the layout: HDF5 would quietly leave missing ones 0.
    H5Id type(H5Dget_type(dset_), H5Tclose);
    if (type.id < 0 || H5Tget_class(type.id) != H5T_COMPOUND)
      throw Error(path_ + ": " + name_ + " is not an ISMRMRD acquisition list (not a compound type)");
    requireMembersInside(type.id, "");
    H5Eclear2(H5E_DEFAULT);
    record_ = H5Tget_size(type.id);
    const int head = H5Tget_member_index(type.id, "head");
    H5Id headType(head >= 0 ? H5Tget_member_type(type.id, static_cast<unsigned>(head)) : -1, H5Tclose);
    if (headType.id < 0 || H5Tget_class(headType.id) != H5T_COMPOUND)
      throw Error(path_ + ": " + name_ + " is not an ISMRMRD acquisition list (no acquisition header)");
    const std::size_t headAt = H5Tget_member_offset(type.id, static_cast<unsigned>(head));
    // The header members give the consistency check; the descriptors (and the heap objects they name)
    // are checked even when a damaged type makes the members something else than integers.
    bool descriptorsOk = true;
    bool fieldsOk = integerMember(headType.id, "number_of_samples", headAt, samples_);
    fieldsOk = integerMember(headType.id, "active_channels", headAt, channels_) && fieldsOk;
    fieldsOk = integerMember(headType.id, "trajectory_dimensions", headAt, trajDims_) && fieldsOk;
    for (auto [member, field] : {std::pair<const char*, Field*>{"traj", &traj_}, {"data", &data_}}) {
      const int idx = H5Tget_member_index(type.id, member);
      if (idx < 0 || H5Tget_member_class(type.id, static_cast<unsigned>(idx)) != H5T_VLEN)
        throw Error(path_ + ": " + name_ + " is not an ISMRMRD acquisition list (no variable-length member " +
                    member + ")");
      // On disk a sequence is a 4-byte little-endian length, the heap address and an index.
      field->at = H5Tget_member_offset(type.id, static_cast<unsigned>(idx));
      field->size = 4;
      descriptorsOk = descriptorsOk && field->at + 16 <= record_;
      H5Id vlen(H5Tget_member_type(type.id, static_cast<unsigned>(idx)), H5Tclose);
      H5Id super(vlen.id >= 0 ? H5Tget_super(vlen.id) : -1, H5Tclose);
      const std::size_t element = super.id >= 0 ? H5Tget_size(super.id) : 0;
      if (element == 0) descriptorsOk = false;
      (field == &traj_ ? trajElement_ : dataElement_) = element;
    }
    headerIntegers_ = fieldsOk;
    // The disk layout equals the memory one only with 8-byte file addresses (a sequence: 4 + 8 + 4 bytes,
    // like hvl_t); other files, and fields HDF5 must convert, go unchecked.
    if (!descriptorsOk || record_ == 0 || !hasEightByteAddresses(dset_)) return;
    H5Id dcpl(H5Dget_create_plist(dset_), H5Pclose);
    const H5D_layout_t layout = dcpl.id >= 0 ? H5Pget_layout(dcpl.id) : H5D_LAYOUT_ERROR;
    if (layout == H5D_COMPACT)
      throw Error(path_ + ": " + name_ + " uses HDF5's compact layout, which Larmor does not read (ISMRMRD writes it chunked)");
    if (layout == H5D_CONTIGUOUS) {
      address_ = H5Dget_offset(dset_);
      if (address_ != HADDR_UNDEF) mode_ = Mode::Contiguous;
      return;
    }
    hsize_t chunk[1] = {0};
    if (layout != H5D_CHUNKED || H5Pget_nfilters(dcpl.id) != 0 || H5Pget_chunk(dcpl.id, 1, chunk) != 1 ||
        chunk[0] == 0 || chunk[0] > (1u << 20))
      return;  // compressed chunks cannot be read raw
    chunk_ = chunk[0];
    nominal_ = chunk_ * record_;
    mode_ = Mode::Chunked;
    requireChunkTotalFits(dset_, static_cast<double>(nominal_), path_, name_);
  }

  hid_t dset_;
  std::string path_, name_;
  Mode mode_ = Mode::None;
  hsize_t chunk_ = 1, nominal_ = 0;
  haddr_t address_ = HADDR_UNDEF;
  std::size_t record_ = 0;
  Field samples_, channels_, trajDims_, traj_, data_;
  bool headerIntegers_ = false;                   ///< the header's size members are integers (checkable)
  std::size_t trajElement_ = 4, dataElement_ = 4;  ///< bytes of one element of each sequence
  mutable std::unique_ptr<GlobalHeaps> heaps_;      ///< the collections the descriptors name
};

AcquisitionReader::AcquisitionReader(const std::string& path, const std::string& group) : path_(path) {
  file_ = H5Id(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (file_.id < 0) throw Error(path + ": damaged or truncated HDF5 file (" + hdf5Reason() + ")");
  const std::string data = "/" + group + "/data";
  if (H5Lexists(file_.id, data.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return;  // a header without acquisitions
  }
  dset_ = H5Id(H5Dopen2(file_.id, data.c_str(), H5P_DEFAULT), H5Dclose);
  if (dset_.id < 0) throw Error(path + ": cannot open " + data + " (" + hdf5Reason() + ")");
  requireCompactStorageFits(dset_.id, path, data);
  records_ = std::make_unique<RawRecordCheck>(dset_.id, path, data);
  fileSpace_ = H5Id(H5Dget_space(dset_.id), H5Sclose);
  hsize_t dims[1] = {0};
  if (fileSpace_.id < 0 || H5Sget_simple_extent_ndims(fileSpace_.id) != 1 ||
      H5Sget_simple_extent_dims(fileSpace_.id, dims, nullptr) < 0)
    throw Error(path + ": " + data + " is not a list of acquisitions");
  count_ = dims[0];
  // The count comes from the dataspace; records must be stored to exist (see kMaxCompression).
  H5Id fileType(H5Dget_type(dset_.id), H5Tclose);
  const double recordBytes = fileType.id >= 0 ? std::max<double>(1, static_cast<double>(H5Tget_size(fileType.id))) : 1;
  const double stored = storedBytes(dset_.id, path);
  H5Eclear2(H5E_DEFAULT);
  if (static_cast<double>(count_) * recordBytes > kMaxCompression * stored + recordBytes)
    throw Error(path + ": " + data + " claims " + std::to_string(count_) + " acquisitions but stores only " +
                countText(stored) + " bytes");
  fallback_ = directReadRefusal(dset_.id);
  if (fallback_.empty()) {
    direct_ = std::make_unique<DirectRecords>(dset_.id, path, data, count_);
    return;
  }
  // The fallback: libhdf5 converts the records, parsing every heap collection they name; where their
  // descriptors cannot be read first (compressed chunks, other address sizes) only a walk of all
  // collections keeps that safe, so every fallback walks them (once per file).
  checkGlobalHeaps(path);
  if (!records_->usable()) chunks_ = std::make_unique<ChunkCheck>(dset_.id, path, data);
  xfer_ = std::make_unique<VlenTransfer>(path);
  buildMemType();
}

void AcquisitionReader::lookUpEveryChunk() const {
  if (direct_) direct_->lookUpEveryChunk();
}

AcquisitionReader::~AcquisitionReader() { releaseBlock(); }

void AcquisitionReader::verifySamplesOnly() {
  if (direct_) direct_->verifySamplesOnly();
}

bool AcquisitionReader::samplesVerified() const { return direct_ && direct_->samplesVerified(); }

const AcqRecord& AcquisitionReader::get(std::uint64_t i) {
  if (direct_) return direct_->get(i);
  if (block_.empty() || i < blockStart_ || i >= blockStart_ + block_.size()) readBlock(i);
  const AcqRecord& r = block_[i - blockStart_];
  requireAcquisitionSizes(path_, i, r.head.number_of_samples, r.head.active_channels, r.head.trajectory_dimensions,
                          r.data.len, r.traj.len);
  return r;
}

void AcquisitionReader::buildMemType() {
  const hsize_t three[1] = {3};
  H5Id f3(H5Tarray_create2(H5T_NATIVE_FLOAT, 1, three), H5Tclose);
  H5Id u3(H5Tarray_create2(H5T_NATIVE_UINT32, 1, three), H5Tclose);
  H5Id idx(H5Tcreate(H5T_COMPOUND, sizeof(AcqHead::idx)), H5Tclose);
  H5Tinsert(idx.id, "kspace_encode_step_1", offsetof(decltype(AcqHead::idx), kspace_encode_step_1), H5T_NATIVE_UINT16);
  H5Tinsert(idx.id, "kspace_encode_step_2", offsetof(decltype(AcqHead::idx), kspace_encode_step_2), H5T_NATIVE_UINT16);
  H5Tinsert(idx.id, "average", offsetof(decltype(AcqHead::idx), average), H5T_NATIVE_UINT16);
  H5Tinsert(idx.id, "slice", offsetof(decltype(AcqHead::idx), slice), H5T_NATIVE_UINT16);
  H5Tinsert(idx.id, "contrast", offsetof(decltype(AcqHead::idx), contrast), H5T_NATIVE_UINT16);
  H5Tinsert(idx.id, "phase", offsetof(decltype(AcqHead::idx), phase), H5T_NATIVE_UINT16);
  H5Tinsert(idx.id, "repetition", offsetof(decltype(AcqHead::idx), repetition), H5T_NATIVE_UINT16);
  H5Tinsert(idx.id, "set", offsetof(decltype(AcqHead::idx), set), H5T_NATIVE_UINT16);
  H5Id head(H5Tcreate(H5T_COMPOUND, sizeof(AcqHead)), H5Tclose);
  H5Tinsert(head.id, "version", offsetof(AcqHead, version), H5T_NATIVE_UINT16);
  H5Tinsert(head.id, "flags", offsetof(AcqHead, flags), H5T_NATIVE_UINT64);
  H5Tinsert(head.id, "scan_counter", offsetof(AcqHead, scan_counter), H5T_NATIVE_UINT32);
  H5Tinsert(head.id, "number_of_samples", offsetof(AcqHead, number_of_samples), H5T_NATIVE_UINT16);
  H5Tinsert(head.id, "active_channels", offsetof(AcqHead, active_channels), H5T_NATIVE_UINT16);
  H5Tinsert(head.id, "discard_pre", offsetof(AcqHead, discard_pre), H5T_NATIVE_UINT16);
  H5Tinsert(head.id, "discard_post", offsetof(AcqHead, discard_post), H5T_NATIVE_UINT16);
  H5Tinsert(head.id, "center_sample", offsetof(AcqHead, center_sample), H5T_NATIVE_UINT16);
  H5Tinsert(head.id, "trajectory_dimensions", offsetof(AcqHead, trajectory_dimensions), H5T_NATIVE_UINT16);
  H5Tinsert(head.id, "physiology_time_stamp", offsetof(AcqHead, physiology_time_stamp), u3.id);
  H5Tinsert(head.id, "position", offsetof(AcqHead, position), f3.id);
  H5Tinsert(head.id, "read_dir", offsetof(AcqHead, read_dir), f3.id);
  H5Tinsert(head.id, "phase_dir", offsetof(AcqHead, phase_dir), f3.id);
  H5Tinsert(head.id, "slice_dir", offsetof(AcqHead, slice_dir), f3.id);
  H5Tinsert(head.id, "idx", offsetof(AcqHead, idx), idx.id);
  H5Id vfloat(H5Tvlen_create(H5T_NATIVE_FLOAT), H5Tclose);
  memType_ = H5Id(H5Tcreate(H5T_COMPOUND, sizeof(AcqRecord)), H5Tclose);
  H5Tinsert(memType_.id, "head", offsetof(AcqRecord, head), head.id);
  H5Tinsert(memType_.id, "traj", offsetof(AcqRecord, traj), vfloat.id);
  H5Tinsert(memType_.id, "data", offsetof(AcqRecord, data), vfloat.id);
}

void AcquisitionReader::releaseBlock() {
  if (block_.empty()) return;
  const hsize_t n[1] = {block_.size()};
  H5Id space(H5Screate_simple(1, n, nullptr), H5Sclose);
  H5Dvlen_reclaim(memType_.id, space.id, xfer_->id(), block_.data());
  block_.clear();
}

void AcquisitionReader::readBlock(std::uint64_t first) {
  releaseBlock();
  const hsize_t start[1] = {first};
  const hsize_t n[1] = {std::min<hsize_t>(kBlock, count_ - first)};
  if (chunks_) chunks_->check(first, n[0]);
  records_->check(first, n[0], count_);
  H5Id memSpace(H5Screate_simple(1, n, nullptr), H5Sclose);
  std::vector<AcqRecord> buf(n[0]);
  std::memset(static_cast<void*>(buf.data()), 0, buf.size() * sizeof(AcqRecord));
  if (H5Sselect_hyperslab(fileSpace_.id, H5S_SELECT_SET, start, nullptr, n, nullptr) < 0 ||
      H5Dread(dset_.id, memType_.id, memSpace.id, fileSpace_.id, xfer_->id(), buf.data()) < 0) {
    const std::string why = hdf5Reason();
    // A failed read may leave some variable-length buffers allocated.
    H5Dvlen_reclaim(memType_.id, memSpace.id, xfer_->id(), buf.data());
    throw Error(path_ + ": cannot read acquisitions " + std::to_string(first) + " to " +
                std::to_string(first + n[0] - 1) + " (" + why + ")");
  }
  block_ = std::move(buf);
  blockStart_ = first;
}

}  // namespace larmor::io::detail
