// Siemens twix: the file's layout (twix_format.hpp has the byte map). Every length and offset read from
// the file is checked against the file's size before it is used, and nothing is allocated from a
// header's number that the file's size does not bound: a truncated or lying file gives one Error line
// naming the file, the byte offset and what does not fit.
#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <sys/stat.h>

#include "larmor/util/error.hpp"
#include "twix_format.hpp"

static_assert(std::endian::native == std::endian::little, "the twix reader assumes a little-endian host");

namespace larmor::io::twix {

namespace {

std::uint16_t u16(const unsigned char* p, std::size_t at) {
  std::uint16_t v;
  std::memcpy(&v, p + at, sizeof v);
  return v;
}
std::uint32_t u32(const unsigned char* p, std::size_t at) {
  std::uint32_t v;
  std::memcpy(&v, p + at, sizeof v);
  return v;
}
std::uint64_t u64(const unsigned char* p, std::size_t at) {
  std::uint64_t v;
  std::memcpy(&v, p + at, sizeof v);
  return v;
}

// The header text of a measurement may be a few MB; anything beyond this is not a twix header.
constexpr std::uint64_t kMaxHeaderBytes = 256ull << 20;
constexpr std::uint32_t kMaxBuffers = 64;
constexpr std::size_t kMaxBufferName = 64;

std::string at(std::uint64_t offset) { return " at byte " + std::to_string(offset); }

// Text without control characters, at most 64 bytes (names from the file in messages).
std::string printable(const char* p, std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n && p[i] != '\0'; ++i) s += (p[i] >= 32 && p[i] < 127) ? p[i] : '?';
  return s;
}

Scan parseHeader(const unsigned char* h, bool vd, std::uint64_t offset) {
  const std::size_t mask = vd ? 40 : 20, counters = vd ? 52 : 32, centre = vd ? 84 : 64, lines = vd ? 96 : 76;
  Scan s;
  s.offset = offset;
  s.scanCounter = u32(h, 8);
  s.pmuStamp = u32(h, 16);
  s.mask = u64(h, mask);
  s.samples = u16(h, mask + 8);
  s.channels = u16(h, mask + 10);
  std::uint16_t* c[] = {&s.lin, &s.ave, &s.sli, &s.par, &s.eco, &s.phs, &s.rep, &s.set, &s.seg};
  for (std::size_t i = 0; i < 9; ++i) *c[i] = u16(h, counters + 2 * i);
  s.centreColumn = u16(h, centre);
  s.centreLine = u16(h, lines);
  s.centrePartition = u16(h, lines + 2);
  return s;
}

void readHeaderBuffers(const FileReader& f, Layout& L) {
  unsigned char head[8];
  if (L.measEnd - L.measStart < 8) f.fail("measurement" + at(L.measStart) + " is shorter than its 8-byte header");
  f.read(L.measStart, head, 8, "the measurement header");
  const std::uint64_t hdrLen = u32(head, 0), buffers = u32(head, 4);
  // A VB file starts with its measurement header's length: a first word that cannot be one is no twix file.
  const std::string notTwix = !L.vd && L.measStart == 0 ? "not a Siemens twix file (" : "";
  if (hdrLen < 8 || hdrLen > L.measEnd - L.measStart)
    f.fail(notTwix + "the measurement header" + at(L.measStart) + " claims " + std::to_string(hdrLen) +
           " bytes, but the " + (notTwix.empty() ? "measurement holds " : "file holds ") +
           std::to_string(L.measEnd - L.measStart) + (notTwix.empty() ? "" : ")"));
  if (hdrLen > kMaxHeaderBytes) f.fail("the measurement header claims " + std::to_string(hdrLen) + " bytes (> 256 MiB)");
  if (buffers > kMaxBuffers)
    f.fail("the measurement header claims " + std::to_string(buffers) + " text buffers (at most 64)");
  std::string text(static_cast<std::size_t>(hdrLen), '\0');
  f.read(L.measStart, text.data(), text.size(), "the measurement header");
  std::size_t pos = 8;
  for (std::uint64_t b = 0; b < buffers; ++b) {
    const std::size_t end = text.find('\0', pos);
    if (end == std::string::npos || end - pos > kMaxBufferName || end == pos)
      f.fail("header buffer " + std::to_string(b) + at(L.measStart + pos) + " has no name");
    const std::string name = printable(text.data() + pos, end - pos);
    if (end + 5 > text.size()) f.fail("header buffer '" + name + "' runs past the measurement header");
    const std::uint64_t len = u32(reinterpret_cast<const unsigned char*>(text.data()), end + 1);
    if (len > text.size() - (end + 5))
      f.fail("header buffer '" + name + "' claims " + std::to_string(len) + " bytes, past the end of the " +
             std::to_string(hdrLen) + "-byte measurement header");
    parseProtocolBuffer(name, text.substr(end + 5, static_cast<std::size_t>(len)), L.protocol);
    pos = end + 5 + static_cast<std::size_t>(len);
  }
  L.dataStart = L.measStart + hdrLen;
}

void readScans(const FileReader& f, Layout& L) {
  const std::size_t hdrBytes = L.vd ? kVdScanHeaderBytes : kVbMdhBytes;
  std::vector<unsigned char> h(hdrBytes);
  std::uint64_t pos = L.dataStart;
  for (std::uint64_t n = 0;; ++n) {
    if (pos == L.measEnd) return;  // no ACQEND: an aborted measurement, what was written is read
    const std::string name = "scan " + std::to_string(n) + at(pos);
    if (L.measEnd - pos < hdrBytes)
      f.fail(name + " needs a " + std::to_string(hdrBytes) + "-byte header but the measurement ends at byte " +
             std::to_string(L.measEnd));
    f.read(pos, h.data(), hdrBytes, name);
    Scan s = parseHeader(h.data(), L.vd, pos);
    if (hasBit(s.mask, kAcqEnd)) {
      L.acqEnd = true;
      return;
    }
    if (hasBit(s.mask, kSyncData)) {
      const std::uint64_t dma = u32(h.data(), 0) & 0x01FFFFFFu;
      if (dma < hdrBytes || dma > L.measEnd - pos)
        f.fail(name + " (sync data) claims " + std::to_string(dma) + " bytes; the measurement has " +
               std::to_string(L.measEnd - pos) + " left");
      ++L.syncScans;
      pos += dma;
      continue;
    }
    if (s.channels == 0) f.fail(name + " has no channels");
    if (s.samples == 0) f.fail(name + " has no samples");
    const std::uint64_t block = (L.vd ? kVdChannelHeaderBytes : kVbMdhBytes) + 8ull * s.samples;
    const std::uint64_t bytes = (L.vd ? kVdScanHeaderBytes : 0) + s.channels * block;
    if (bytes > L.measEnd - pos)
      f.fail(name + " needs " + std::to_string(bytes) + " bytes (" + std::to_string(s.channels) + " channels x " +
             std::to_string(s.samples) + " samples) but the measurement ends at byte " + std::to_string(L.measEnd) +
             " (truncated, or the header lies)");
    if (!L.vd)  // VB repeats the sMDH before every channel: they must describe the same readout
      for (std::uint16_t c = 1; c < s.channels; ++c) {
        f.read(pos + c * block, h.data(), hdrBytes, name);
        const Scan sc = parseHeader(h.data(), false, pos + c * block);
        if (sc.samples != s.samples || sc.scanCounter != s.scanCounter || sc.lin != s.lin)
          f.fail(name + ": the header of channel " + std::to_string(c) + " (counter " + std::to_string(sc.scanCounter) +
                 ", " + std::to_string(sc.samples) + " samples) does not match channel 0's (counter " +
                 std::to_string(s.scanCounter) + ", " + std::to_string(s.samples) + " samples)");
      }
    L.scans.push_back(s);
    pos += bytes;
  }
}

}  // namespace

FileReader::FileReader(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw Error(path_ + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw Error(path_ + ": not a regular file");
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);
}

void FileReader::fail(const std::string& what) const { throw Error(path_ + ": " + what); }

void FileReader::read(std::uint64_t offset, void* dst, std::size_t n, const std::string& what) const {
  if (offset > size_ || n > size_ - offset)
    fail(what + at(offset) + " needs " + std::to_string(n) + " bytes but the file ends at byte " +
         std::to_string(size_));
  auto* p = static_cast<char*>(dst);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd_, p + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) fail("reading " + what + at(offset + done) + " failed" + (r < 0 ? ": " + std::string(std::strerror(errno)) : ""));
    done += static_cast<std::size_t>(r);
  }
}

Layout readLayout(const FileReader& f) {
  Layout L;
  L.fileBytes = f.size();
  if (L.fileBytes < 8) f.fail("only " + std::to_string(L.fileBytes) + " bytes: not a twix file");
  unsigned char first[8];
  f.read(0, first, 8, "the file header");
  const std::uint32_t a = u32(first, 0), count = u32(first, 4);
  L.vd = a == 0;
  if (L.vd) {
    if (count == 0 || count > kMaxRaidEntries)
      f.fail("the VD/VE raid header lists " + std::to_string(count) + " measurements (expected 1..64)");
    L.measurements = count;
    unsigned char e[kRaidEntryBytes];
    const std::uint64_t entryAt = kRaidHeaderBytes + (count - 1) * kRaidEntryBytes;
    f.read(entryAt, e, kRaidEntryBytes, "raid entry " + std::to_string(count - 1));
    std::uint64_t off = u64(e, 8), len = u64(e, 16);
    L.raidPatient = printable(reinterpret_cast<const char*>(e) + 24, 64);
    L.raidProtocol = printable(reinterpret_cast<const char*>(e) + 88, 64);
    const std::string meas = "measurement " + std::to_string(count) + " of " + std::to_string(count);
    if (off < kRaidHeaderBytes + count * kRaidEntryBytes || off >= L.fileBytes)
      f.fail(meas + " starts at byte " + std::to_string(off) + ", outside the file's " +
             std::to_string(L.fileBytes) + " bytes after the raid header");
    if (len == 0) len = L.fileBytes - off;  // an unfinished raid entry: the measurement runs to the end
    if (len > L.fileBytes - off)
      f.fail(meas + " at byte " + std::to_string(off) + " claims " + std::to_string(len) +
             " bytes but the file ends at byte " + std::to_string(L.fileBytes) + " (truncated?)");
    L.measStart = off;
    L.measEnd = off + len;
  } else {
    L.measStart = 0;
    L.measEnd = L.fileBytes;
  }
  readHeaderBuffers(f, L);
  readScans(f, L);
  return L;
}

void readScanSamples(const FileReader& f, const Layout& L, const Scan& s, std::vector<cfloat>& out) {
  const std::uint64_t head = L.vd ? kVdChannelHeaderBytes : kVbMdhBytes;
  const std::uint64_t block = head + 8ull * s.samples;
  const std::uint64_t first = s.offset + (L.vd ? kVdScanHeaderBytes : 0);
  out.resize(static_cast<std::size_t>(s.channels) * s.samples);
  for (std::uint16_t c = 0; c < s.channels; ++c)
    f.read(first + c * block + head, out.data() + static_cast<std::size_t>(c) * s.samples, 8u * s.samples,
           "scan counter " + std::to_string(s.scanCounter) + " channel " + std::to_string(c));
}

ScanRole scanRole(std::uint64_t m) {
  if (hasBit(m, kNoiseAdjScan)) return ScanRole::Noise;
  for (int b : {kRtFeedback, kHpFeedback, kRefPhaseStabScan, kPhaseStabScan, kPhasCor, kSliceAccelRefScan,
                kSliceAccelPhasCor, kRetroDummyScan})
    if (hasBit(m, b)) return ScanRole::Skipped;
  if (hasBit(m, kPatRefScan) && !hasBit(m, kPatRefAndImaScan)) return ScanRole::Reference;
  return ScanRole::Image;
}

std::uint64_t ismrmrdFlags(std::uint64_t m) {
  // twix bit -> ISMRMRD flag number (docs: ismrmrd.readthedocs.io, "Acquisition flags").
  static const std::pair<int, int> map[] = {
      {kFirstScanInSlice, 7}, {kLastScanInSlice, 8},   {kNoiseAdjScan, 19},    {kPatRefScan, 20},
      {kPatRefAndImaScan, 21}, {kReflect, 22},         {kRefPhaseStabScan, 30}, {kPhaseStabScan, 31},
      {kPhasCor, 24},          {kLastScanInMeas, 25}, {kHpFeedback, 26},      {kRetroDummyScan, 27},
      {kRtFeedback, 28}};
  std::uint64_t flags = 0;
  for (auto [bit, flag] : map)
    if (hasBit(m, bit)) flags |= std::uint64_t{1} << (flag - 1);
  if (hasBit(m, kPatRefAndImaScan)) flags &= ~(std::uint64_t{1} << 19);  // calibration and imaging, not both
  return flags;
}

}  // namespace larmor::io::twix
