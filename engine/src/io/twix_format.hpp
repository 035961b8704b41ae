#pragma once
// Siemens twix (.dat) byte layout, as Larmor reads it (all little-endian). Written from the format
// descriptions in twixtools (pehses/twixtools: hdr_def.py, mdh_def.py) and BART's twixread.c; no code
// taken from them.
//
// File level
//   VB (syngo MR B17/B19): one measurement that starts at byte 0.
//   VD/VE (syngo MR D11, E11, ...): MrParcRaidFileHeader { u32 hdSize = 0, u32 count } followed by 64
//     MrParcRaidFileEntry of 152 bytes { u32 measId, u32 fileId, u64 offset, u64 length, char
//     patientName[64], char protocolName[64] }. Each entry is one measurement (adjustments first, the
//     imaging scan last). A file whose first u32 is 0 and whose second is 1..64 is VD/VE.
// Measurement
//   u32 headerLength (from the measurement's start, padded), u32 bufferCount, then bufferCount times
//   { NUL-terminated name ("Config", "Dicom", "Meas", "MeasYaps", "Phoenix", "Spice"), u32 length,
//   length bytes of text }. The scans start at measurement start + headerLength.
// Scans (one readout of all channels)
//   VB: per channel a 128-byte sMDH followed by samples x complex float32; the sMDH is repeated
//     for every channel. VD/VE: one 192-byte scan header, then per channel a 32-byte channel header
//     and samples x complex float32.
//   Field offsets (VB | VD): u32 FlagsAndDMALength 0|0 (low 25 bits: bytes of the whole scan),
//   u32 ScanCounter 8|8, u32 PMUTimeStamp 16|16 (physiology clock, 2.5 ms ticks), u64 EvalInfoMask 20|40, u16 SamplesInScan 28|48, u16 UsedChannels 30|50,
//   u16 loop counters Lin Ave Sli Par Eco Phs Rep Set Seg Ida..Ide 32|52, u16 CutOff pre/post 60|80,
//   u16 KSpaceCentreColumn 64|84, u16 KSpaceCentreLineNo 76|96, u16 KSpaceCentrePartitionNo 78|98;
//   VB's ChannelId at 124, VD's channel header ChannelId at 24.
//   An imaging scan takes VB: channels x (128 + 8 samples), VD: 192 + channels x (32 + 8 samples)
//   bytes (the DMA length may carry a pack bit, so it is computed, as twixtools does); SYNCDATA scans
//   (physiology, not k-space) take their DMA length; ACQEND ends the measurement.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/io/twix.hpp"

namespace larmor::io::twix {

// EvalInfoMask bits (Siemens MDH_* names).
enum EvalBit : int {
  kAcqEnd = 0,
  kRtFeedback = 1,
  kHpFeedback = 2,
  kSyncData = 5,
  kLastScanInMeas = 11,
  kRefPhaseStabScan = 14,
  kPhaseStabScan = 15,
  kPhasCor = 21,
  kPatRefScan = 22,
  kPatRefAndImaScan = 23,
  kReflect = 24,
  kNoiseAdjScan = 25,
  kFirstScanInSlice = 28,
  kLastScanInSlice = 29,
  kSliceAccelRefScan = 38,
  kSliceAccelPhasCor = 39,
  kRetroDummyScan = 51,
};
inline bool hasBit(std::uint64_t mask, int bit) { return (mask >> bit) & 1u; }

inline constexpr std::size_t kRaidHeaderBytes = 8;
inline constexpr std::size_t kRaidEntryBytes = 152;
inline constexpr std::uint32_t kMaxRaidEntries = 64;
inline constexpr std::size_t kVbMdhBytes = 128;
inline constexpr std::size_t kVdScanHeaderBytes = 192;
inline constexpr std::size_t kVdChannelHeaderBytes = 32;

/// One scan header, the fields Larmor uses.
struct Scan {
  std::uint64_t offset = 0;  ///< file offset of the scan's first header
  std::uint32_t scanCounter = 0;
  std::uint32_t pmuStamp = 0;  ///< ulPMUTimeStamp, 2.5 ms ticks (0: none)
  std::uint64_t mask = 0;
  std::uint16_t samples = 0, channels = 0;
  std::uint16_t lin = 0, ave = 0, sli = 0, par = 0, eco = 0, phs = 0, rep = 0, set = 0, seg = 0;
  std::uint16_t centreColumn = 0, centreLine = 0, centrePartition = 0;
};

/// What kind of readout a scan is, from its EvalInfoMask.
enum class ScanRole { Image, Reference, Noise, Skipped };
ScanRole scanRole(std::uint64_t mask);

/// The ISMRMRD flag bits (bit n-1 for flag n) that say the same as a twix EvalInfoMask.
std::uint64_t ismrmrdFlags(std::uint64_t mask);

/// The protocol text of a measurement: ASCCONV ("MeasYaps") entries and a few XProtocol parameters.
struct Protocol {
  std::map<std::string, std::string> ascconv;  ///< "sKSpace.lBaseResolution" -> "256" (quotes removed)
  std::map<std::string, std::string> xprot;    ///< "flReadoutOSFactor" -> "2.000000" (first found)
  std::vector<std::string> bufferNames;
};

/// ASCCONV integer (decimal, or 0x hex) in [lo, hi]; nullopt when absent, unreadable or out of range.
std::optional<long> ascInt(const Protocol& p, const std::string& key, long lo, long hi);
/// Number from ASCCONV (`xprot` false) or XProtocol (true) in [lo, hi]; nullopt otherwise.
std::optional<double> protReal(const Protocol& p, const std::string& key, double lo, double hi, bool xprot);
/// Text from ASCCONV or else XProtocol ("" when absent), at most 64 printable characters.
std::string protText(const Protocol& p, const std::string& key);

/// The layout of a file: version, measurements, the scans of the last one.
struct Layout {
  bool vd = false;
  std::uint64_t fileBytes = 0;
  std::uint32_t measurements = 1;
  std::uint64_t measStart = 0, measEnd = 0, dataStart = 0;
  std::string raidPatient, raidProtocol;  ///< VD/VE raid entry of the chosen measurement
  Protocol protocol;
  std::vector<Scan> scans;  ///< every scan but SYNCDATA and ACQEND, in file order
  std::uint64_t syncScans = 0;
  bool acqEnd = false;  ///< the measurement ended with an ACQEND scan
};

/// An open file read at offsets; every read is checked against the file's size first.
class FileReader {
 public:
  explicit FileReader(std::string path);
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;
  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }
  /// Reads n bytes at `offset`; Error "PATH: WHAT at byte OFFSET needs N bytes but the file ends at SIZE".
  void read(std::uint64_t offset, void* dst, std::size_t n, const std::string& what) const;
  [[noreturn]] void fail(const std::string& what) const;

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

/// Reads the raid header, the chosen (last) measurement's header buffers and its scan headers, checking
/// every length and offset against the file. Throws Error("PATH: ...").
Layout readLayout(const FileReader& file);

/// Parses ASCCONV and XProtocol text into `p` (bounded, never throws on odd text).
void parseProtocolBuffer(const std::string& name, const std::string& text, Protocol& p);

/// The summary of a layout (counts by role, counter ranges, protocol names).
TwixSummary summarize(const Layout& layout);

/// Samples of one scan, [channels][samples] complex float, read from the file.
void readScanSamples(const FileReader& file, const Layout& layout, const Scan& scan, std::vector<cfloat>& out);

}  // namespace larmor::io::twix
