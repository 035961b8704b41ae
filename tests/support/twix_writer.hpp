#pragma once
// A writer of minimal Siemens twix files for the tests and the fuzz seeds: VB (sMDH of 128 bytes before
// every channel) or VD/VE (raid header of 10240 bytes, scan header 192 + channel header 32 bytes), the
// protocol as an ASCCONV "MeasYaps" buffer and an XProtocol "Meas" buffer, scans with the fields the
// reader uses, SYNCDATA blocks and the closing ACQEND. Offsets as in engine/src/io/twix_format.hpp,
// written independently of the reader (byte by byte, from the format description).
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "larmor/array/array.hpp"

namespace larmor::test {

struct TwixScanSpec {
  std::uint64_t mask = 0;
  std::uint16_t lin = 0, ave = 0, sli = 0, par = 0, eco = 0, phs = 0, rep = 0;
  std::uint32_t pmuStamp = 0;  ///< ulPMUTimeStamp (2.5 ms ticks), at byte 16 of the VB and VD header
  std::uint16_t centreColumn = 0, centreLine = 0, centrePartition = 0;
  std::uint16_t samples = 0, channels = 0;
  std::vector<cfloat> data;  ///< [channels][samples]
  std::uint32_t syncBytes = 0;  ///< > 0: a SYNCDATA block of this many payload bytes instead of samples
};

struct TwixSpec {
  bool vd = true;
  std::string measYaps;  ///< ASCCONV lines (without BEGIN/END)
  std::string meas;      ///< XProtocol text
  std::vector<TwixScanSpec> scans;
  bool acqEnd = true;
  std::uint32_t measurements = 1;  ///< VD: the first measurements - 1 hold only an ACQEND
};

/// The ASCCONV lines of a 2D (or 3D) Cartesian protocol.
inline std::string twixProtocol(int base, int lines, int partitions = 1, bool threeD = false, double fovMm = 200) {
  return "tProtocolName = \"synthetic\"\nsKSpace.lBaseResolution = " + std::to_string(base) +
         "\nsKSpace.lPhaseEncodingLines = " + std::to_string(lines) + "\nsKSpace.lPartitions = " +
         std::to_string(partitions) + "\nsKSpace.ucDimension = " + (threeD ? "0x4" : "0x2") +
         "\nsSliceArray.asSlice[0].dReadoutFOV = " + std::to_string(fovMm) +
         "\nsSliceArray.asSlice[0].dPhaseFOV = " + std::to_string(fovMm) + "\nsSliceArray.asSlice[0].dThickness = 5\n";
}

inline std::string twixXprot(double readoutOs) {
  return "<XProtocol> { <ParamDouble.\"flReadoutOSFactor\">  { <Precision> 6  " + std::to_string(readoutOs) +
         "  }\n<ParamString.\"ManufacturersModelName\">  { \"Testra\"  }\n"
         "<ParamString.\"tPatientName\">  { \"Doe^Jane\"  } }";
}

namespace twix_detail {
inline void put16(std::string& b, std::size_t at, std::uint16_t v) { std::memcpy(&b[at], &v, 2); }
inline void put32(std::string& b, std::size_t at, std::uint32_t v) { std::memcpy(&b[at], &v, 4); }
inline void put64(std::string& b, std::size_t at, std::uint64_t v) { std::memcpy(&b[at], &v, 8); }

// The scan-header fields at their VB or VD offsets.
inline std::string header(const TwixScanSpec& s, bool vd, std::uint32_t counter, std::uint32_t dma) {
  std::string h(vd ? 192 : 128, '\0');
  const std::size_t mask = vd ? 40 : 20, counters = vd ? 52 : 32, centre = vd ? 84 : 64, lines = vd ? 96 : 76;
  put32(h, 0, dma);
  put32(h, 8, counter);
  put32(h, 16, s.pmuStamp);
  put64(h, mask, s.mask);
  put16(h, mask + 8, s.samples);
  put16(h, mask + 10, s.channels);
  const std::uint16_t c[] = {s.lin, s.ave, s.sli, s.par, s.eco, s.phs, s.rep};
  for (std::size_t i = 0; i < 7; ++i) put16(h, counters + 2 * i, c[i]);
  put16(h, centre, s.centreColumn);
  put16(h, lines, s.centreLine);
  put16(h, lines + 2, s.centrePartition);
  return h;
}

inline std::string measurement(const TwixSpec& spec, bool withScans) {
  std::string head(8, '\0');
  auto buffer = [&](const std::string& name, const std::string& text) {
    head += name;
    head += '\0';
    std::string len(4, '\0');
    put32(len, 0, static_cast<std::uint32_t>(text.size()));
    head += len + text;
  };
  buffer("Meas", spec.meas);
  buffer("MeasYaps", "### ASCCONV BEGIN ###\n" + spec.measYaps + "### ASCCONV END ###\n");
  head.resize((head.size() + 31) / 32 * 32, '\0');
  put32(head, 0, static_cast<std::uint32_t>(head.size()));
  put32(head, 4, 2);
  std::string m = head;
  std::uint32_t counter = 1;
  for (const TwixScanSpec& s : withScans ? spec.scans : std::vector<TwixScanSpec>{}) {
    if (s.syncBytes > 0) {
      const std::uint32_t dma = (spec.vd ? 192 : 128) + s.syncBytes;
      m += header(s, spec.vd, counter, dma) + std::string(s.syncBytes, '\x5a');
      continue;
    }
    const std::uint32_t dma = spec.vd ? 192 + s.channels * (32u + 8u * s.samples) : s.channels * (128u + 8u * s.samples);
    if (spec.vd) m += header(s, true, counter, dma);
    for (std::uint16_t c = 0; c < s.channels; ++c) {
      if (spec.vd) {
        std::string ch(32, '\0');
        put32(ch, 8, counter);
        put16(ch, 24, c);
        m += ch;
      } else {
        std::string h = header(s, false, counter, dma);
        put16(h, 124, c);
        m += h;
      }
      const std::size_t at = m.size();
      m.resize(at + 8u * s.samples);
      if (s.data.size() >= static_cast<std::size_t>(c + 1) * s.samples)
        std::memcpy(&m[at], s.data.data() + static_cast<std::size_t>(c) * s.samples, 8u * s.samples);
    }
    ++counter;
  }
  if (spec.acqEnd || !withScans) {
    TwixScanSpec end;
    end.mask = 1;
    m += header(end, spec.vd, counter, spec.vd ? 192 : 128);
  }
  m.resize((m.size() + 511) / 512 * 512, '\0');
  return m;
}
}  // namespace twix_detail

/// The bytes of a twix file.
inline std::string twixBytes(const TwixSpec& spec) {
  using namespace twix_detail;
  if (!spec.vd) return measurement(spec, true);
  std::string file(10240, '\0');
  put32(file, 4, spec.measurements);
  for (std::uint32_t k = 0; k < spec.measurements; ++k) {
    const bool last = k + 1 == spec.measurements;
    const std::string m = measurement(spec, last);
    const std::size_t entry = 8 + 152 * k;
    put32(file, entry, 100 + k);
    put64(file, entry + 8, file.size());
    put64(file, entry + 16, m.size());
    std::memcpy(&file[entry + 24], "Doe^Jane", 8);
    std::memcpy(&file[entry + 88], last ? "synthetic" : "AdjCoilSens", last ? 9 : 11);
    file += m;
  }
  return file;
}

}  // namespace larmor::test
