#pragma once
// The ISMRMRD (MRD) streaming protocol, the subset Larmor speaks (docs/streaming.md). Every message starts
// with a little-endian uint16 id:
//   CONFIG_FILE 1    1024 bytes: a NUL-terminated configuration name
//   CONFIG_TEXT 2    uint32 length + text (a configuration script)
//   HEADER 3         uint32 length + the XML header
//   CLOSE 4          nothing: the sender has sent everything
//   TEXT 5           uint32 length + text (log or error text)
//   ACQUISITION 1008 the 340-byte AcquisitionHeader + number_of_samples * trajectory_dimensions floats
//                    + active_channels * number_of_samples complex floats
//   IMAGE 1022       the 198-byte ImageHeader + uint64 attribute length + the MetaContainer XML + pixels
//                    (matrix_size[0..2] * channels values of data_type)
//   WAVEFORM 1026    the 40-byte WaveformHeader + channels * number_of_samples uint32 (read and dropped)
// Every length and header field is checked against Limits before anything is allocated: a lying length is one
// Error line, not an allocation.
#include <ismrmrd/ismrmrd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "larmor/array/array.hpp"

namespace larmor::stream {

enum MessageId : std::uint16_t {
  kConfigFile = 1,
  kConfigText = 2,
  kHeader = 3,
  kClose = 4,
  kText = 5,
  kAcquisition = 1008,
  kImage = 1022,
  kWaveform = 1026,
};

inline constexpr std::size_t kConfigNameBytes = 1024;
inline constexpr std::size_t kAcquisitionHeaderBytes = 340;
inline constexpr std::size_t kImageHeaderBytes = 198;
inline constexpr std::size_t kWaveformHeaderBytes = 40;

/// What a message may claim before it is refused (nothing is allocated beyond these).
struct Limits {
  std::uint32_t maxTextBytes = 16u << 20;          ///< CONFIG_TEXT, HEADER, TEXT
  std::uint64_t maxAcquisitionBytes = 256u << 20;  ///< one acquisition's trajectory + samples
  std::uint64_t maxImageBytes = std::uint64_t{2} << 30;  ///< one image's pixels
  std::uint64_t maxAttributeBytes = 16u << 20;     ///< an image's MetaContainer XML
  std::uint64_t maxWaveformBytes = 64u << 20;
};

/// One acquisition: its header, trajectory (trajectory_dimensions per sample) and samples [channels][samples].
struct Acquisition {
  ISMRMRD::ISMRMRD_AcquisitionHeader head{};
  std::vector<float> trajectory;
  std::vector<cfloat> data;
};

/// One image: its header, the MetaContainer XML and the pixels as sent (data_type's bytes, little-endian).
struct Image {
  ISMRMRD::ISMRMRD_ImageHeader head{};
  std::string attributes;
  std::vector<unsigned char> pixels;
};

struct Message {
  std::uint16_t id = 0;
  std::string text;  ///< CONFIG_FILE's name, CONFIG_TEXT, HEADER, TEXT
  Acquisition acquisition;
  Image image;
};

/// Where messages are read from: read() fills `n` bytes or throws Error (the end of the stream, a timeout).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual void read(void* into, std::size_t n) = 0;
};

/// Where messages are written: write() sends `n` bytes or throws Error.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual void write(const void* from, std::size_t n) = 0;
};

/// A ByteSource over bytes in memory (tests, the fuzz target).
class MemorySource : public ByteSource {
 public:
  MemorySource(const unsigned char* data, std::size_t size) : data_(data), size_(size) {}
  void read(void* into, std::size_t n) override;
  bool atEnd() const { return pos_ == size_; }

 private:
  const unsigned char* data_;
  std::size_t size_, pos_ = 0;
};

/// A ByteSink that appends to a byte vector.
class MemorySink : public ByteSink {
 public:
  void write(const void* from, std::size_t n) override;
  std::vector<unsigned char> bytes;
};

/// The bytes an image's pixels take: matrix_size[0..2] * channels * the size of data_type; Error("...") for an
/// unknown data type, a zero size, or more than `limit`.
std::uint64_t imagePixelBytes(const ISMRMRD::ISMRMRD_ImageHeader& h, std::uint64_t limit);

/// The next message; Error (one line, naming the message and the field) for an unknown id or a field beyond
/// `limits`. An end of the stream before the id is Error("end of stream").
Message readMessage(ByteSource& in, const Limits& limits = {});

void writeConfigFile(ByteSink& out, const std::string& name);
/// CONFIG_TEXT, HEADER or TEXT: the id, the uint32 length, the text.
void writeText(ByteSink& out, std::uint16_t id, const std::string& text);
void writeClose(ByteSink& out);
void writeAcquisition(ByteSink& out, const Acquisition& a);
void writeImage(ByteSink& out, const Image& image);

}  // namespace larmor::stream
