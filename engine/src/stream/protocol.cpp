// The ISMRMRD streaming protocol's messages (larmor/stream/protocol.hpp): read with every length checked
// before anything is allocated, written as Gadgetron and the MRD clients write them. The wire is
// little-endian, as are the machines Larmor runs on (a static_assert below); the fixed headers travel as the
// packed ISMRMRD C structs.
#include "larmor/stream/protocol.hpp"

#include <ismrmrd/version.h>
#include <ismrmrd/waveform.h>

#include <bit>
#include <cstring>

#include "larmor/util/error.hpp"

namespace larmor::stream {

static_assert(std::endian::native == std::endian::little, "the MRD wire format is little-endian");
static_assert(sizeof(ISMRMRD::ISMRMRD_AcquisitionHeader) == kAcquisitionHeaderBytes);
static_assert(sizeof(ISMRMRD::ISMRMRD_ImageHeader) == kImageHeaderBytes);
static_assert(sizeof(ISMRMRD::ISMRMRD_WaveformHeader) == kWaveformHeaderBytes);

namespace {

template <class T>
T readValue(ByteSource& in) {
  T v;
  in.read(&v, sizeof v);
  return v;
}

template <class T>
void writeValue(ByteSink& out, const T& v) {
  out.write(&v, sizeof v);
}

// CONFIG_TEXT, HEADER, TEXT: a uint32 length, then that many bytes.
std::string readLengthText(ByteSource& in, const char* what, std::uint32_t limit) {
  const auto n = readValue<std::uint32_t>(in);
  if (n > limit)
    throw Error(std::string(what) + " message: length " + std::to_string(n) + " exceeds the limit of " +
                std::to_string(limit) + " bytes");
  std::string s(n, '\0');
  if (n > 0) in.read(s.data(), n);
  // A sender may count a terminating NUL (Gadgetron's clients do for the header): not part of the text.
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string readConfigName(ByteSource& in) {
  char name[kConfigNameBytes];
  in.read(name, sizeof name);
  if (std::memchr(name, '\0', sizeof name) == nullptr)
    throw Error("CONFIG_FILE message: the 1024-byte name has no terminating NUL");
  return std::string(name);
}

Acquisition readAcquisition(ByteSource& in, const Limits& limits) {
  Acquisition a;
  in.read(&a.head, sizeof a.head);
  const auto& h = a.head;
  if (h.version > ISMRMRD_VERSION_MAJOR)
    throw Error("ACQUISITION message: header version " + std::to_string(h.version) + "; this server knows " +
                std::to_string(ISMRMRD_VERSION_MAJOR));
  if (h.trajectory_dimensions > 3)
    throw Error("ACQUISITION message: trajectory_dimensions " + std::to_string(h.trajectory_dimensions) +
                " (at most 3)");
  if (h.active_channels > ISMRMRD::ISMRMRD_CHANNEL_MASKS * 64)
    throw Error("ACQUISITION message: active_channels " + std::to_string(h.active_channels) + " (at most " +
                std::to_string(ISMRMRD::ISMRMRD_CHANNEL_MASKS * 64) + ")");
  const std::uint64_t trajValues = std::uint64_t{h.number_of_samples} * h.trajectory_dimensions;
  const std::uint64_t samples = std::uint64_t{h.number_of_samples} * h.active_channels;
  const std::uint64_t bytes = trajValues * sizeof(float) + samples * sizeof(cfloat);
  if (bytes > limits.maxAcquisitionBytes)
    throw Error("ACQUISITION message: " + std::to_string(h.number_of_samples) + " samples x " +
                std::to_string(h.active_channels) + " channels need " + std::to_string(bytes) +
                " bytes, beyond the limit of " + std::to_string(limits.maxAcquisitionBytes));
  a.trajectory.resize(trajValues);
  a.data.resize(samples);
  if (trajValues > 0) in.read(a.trajectory.data(), trajValues * sizeof(float));
  if (samples > 0) in.read(a.data.data(), samples * sizeof(cfloat));
  return a;
}

Image readImage(ByteSource& in, const Limits& limits) {
  Image image;
  in.read(&image.head, sizeof image.head);
  if (image.head.version > ISMRMRD_VERSION_MAJOR)
    throw Error("IMAGE message: header version " + std::to_string(image.head.version) + "; this reader knows " +
                std::to_string(ISMRMRD_VERSION_MAJOR));
  const std::uint64_t pixels = imagePixelBytes(image.head, limits.maxImageBytes);
  const auto n = readValue<std::uint64_t>(in);
  if (n > limits.maxAttributeBytes)
    throw Error("IMAGE message: attribute length " + std::to_string(n) + " exceeds the limit of " +
                std::to_string(limits.maxAttributeBytes) + " bytes");
  image.attributes.assign(n, '\0');
  if (n > 0) in.read(image.attributes.data(), n);
  while (!image.attributes.empty() && image.attributes.back() == '\0') image.attributes.pop_back();
  image.pixels.resize(pixels);
  in.read(image.pixels.data(), pixels);
  return image;
}

// A waveform (physiology, gradients): checked and dropped (no Larmor method uses one yet).
void skipWaveform(ByteSource& in, const Limits& limits) {
  ISMRMRD::ISMRMRD_WaveformHeader h;
  in.read(&h, sizeof h);
  const std::uint64_t bytes = std::uint64_t{h.channels} * h.number_of_samples * sizeof(std::uint32_t);
  if (bytes > limits.maxWaveformBytes)
    throw Error("WAVEFORM message: " + std::to_string(h.channels) + " channels x " +
                std::to_string(h.number_of_samples) + " samples exceed the limit of " +
                std::to_string(limits.maxWaveformBytes) + " bytes");
  unsigned char buf[4096];
  for (std::uint64_t left = bytes; left > 0;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, sizeof buf));
    in.read(buf, n);
    left -= n;
  }
}

}  // namespace

void MemorySource::read(void* into, std::size_t n) {
  if (n > size_ - pos_)
    throw Error("the stream ended inside a message (" + std::to_string(n) + " bytes wanted, " +
                std::to_string(size_ - pos_) + " left)");
  std::memcpy(into, data_ + pos_, n);
  pos_ += n;
}

void MemorySink::write(const void* from, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(from);
  bytes.insert(bytes.end(), p, p + n);
}

std::uint64_t imagePixelBytes(const ISMRMRD::ISMRMRD_ImageHeader& h, std::uint64_t limit) {
  static constexpr std::uint64_t kSize[] = {0, 2, 2, 4, 4, 4, 8, 8, 16};  // by MRD_DataTypes 1..8
  if (h.data_type < 1 || h.data_type > 8)
    throw Error("IMAGE message: data_type " + std::to_string(h.data_type) + " (MRD knows 1..8)");
  std::uint64_t values = h.channels;
  for (int k = 0; k < 3; ++k) values *= h.matrix_size[k];
  if (values == 0)
    throw Error("IMAGE message: an empty image (matrix " + std::to_string(h.matrix_size[0]) + " x " +
                std::to_string(h.matrix_size[1]) + " x " + std::to_string(h.matrix_size[2]) + ", " +
                std::to_string(h.channels) + " channels)");
  // Each factor is below 2^16, so the product of four stays below 2^64; compared before it is scaled.
  if (values > limit / kSize[h.data_type])
    throw Error("IMAGE message: " + std::to_string(values) + " pixels of " + std::to_string(kSize[h.data_type]) +
                " bytes exceed the limit of " + std::to_string(limit) + " bytes");
  return values * kSize[h.data_type];
}

Message readMessage(ByteSource& in, const Limits& limits) {
  Message m;
  m.id = readValue<std::uint16_t>(in);
  switch (m.id) {
    case kConfigFile: m.text = readConfigName(in); break;
    case kConfigText: m.text = readLengthText(in, "CONFIG_TEXT", limits.maxTextBytes); break;
    case kHeader: m.text = readLengthText(in, "HEADER", limits.maxTextBytes); break;
    case kText: m.text = readLengthText(in, "TEXT", limits.maxTextBytes); break;
    case kClose: break;
    case kAcquisition: m.acquisition = readAcquisition(in, limits); break;
    case kImage: m.image = readImage(in, limits); break;
    case kWaveform: skipWaveform(in, limits); break;
    default: throw Error("unknown message id " + std::to_string(m.id));
  }
  return m;
}

void writeConfigFile(ByteSink& out, const std::string& name) {
  require(name.size() < kConfigNameBytes, "CONFIG_FILE: the name " + name.substr(0, 64) + "... is longer than 1023 bytes");
  char buf[kConfigNameBytes] = {};
  std::memcpy(buf, name.data(), name.size());
  writeValue(out, std::uint16_t{kConfigFile});
  out.write(buf, sizeof buf);
}

void writeText(ByteSink& out, std::uint16_t id, const std::string& text) {
  require(text.size() <= 0xffffffffu, "message text longer than 4 GiB");
  writeValue(out, id);
  writeValue(out, static_cast<std::uint32_t>(text.size()));
  out.write(text.data(), text.size());
}

void writeClose(ByteSink& out) { writeValue(out, std::uint16_t{kClose}); }

void writeAcquisition(ByteSink& out, const Acquisition& a) {
  const auto& h = a.head;
  require(a.trajectory.size() == std::size_t{h.number_of_samples} * h.trajectory_dimensions &&
              a.data.size() == std::size_t{h.number_of_samples} * h.active_channels,
          "ACQUISITION: the trajectory or samples do not match the header's sizes");
  writeValue(out, std::uint16_t{kAcquisition});
  out.write(&h, sizeof h);
  out.write(a.trajectory.data(), a.trajectory.size() * sizeof(float));
  out.write(a.data.data(), a.data.size() * sizeof(cfloat));
}

void writeImage(ByteSink& out, const Image& image) {
  require(image.pixels.size() == imagePixelBytes(image.head, ~std::uint64_t{0}),
          "IMAGE: the pixels do not match the header's matrix, channels and data type");
  writeValue(out, std::uint16_t{kImage});
  out.write(&image.head, sizeof image.head);
  writeValue(out, static_cast<std::uint64_t>(image.attributes.size()));
  out.write(image.attributes.data(), image.attributes.size());
  out.write(image.pixels.data(), image.pixels.size());
}

}  // namespace larmor::stream
