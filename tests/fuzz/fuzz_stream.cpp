// libFuzzer target for the streaming server's message parser and slice assembler (larmor/stream/): the input is
// the bytes a client sends. Messages are read until the input ends or one is refused; HEADER starts an assembler,
// ACQUISITION feeds it, CLOSE finishes it (every slice becomes a Dataset, as the server would reconstruct it). The
// limits are small so that an allocation bomb shows as a finding rather than slowness.
#include <cstdint>
#include <optional>

#include "larmor/stream/assembler.hpp"
#include "larmor/stream/protocol.hpp"
#include "larmor/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace larmor;
  stream::Limits limits;
  limits.maxTextBytes = 1 << 20;
  limits.maxAcquisitionBytes = 1 << 20;
  limits.maxImageBytes = 1 << 20;
  limits.maxAttributeBytes = 1 << 16;
  limits.maxWaveformBytes = 1 << 20;
  stream::MemorySource in(data, size);
  std::optional<stream::SliceAssembler> assembler;
  try {
    while (!in.atEnd()) {
      stream::Message m = stream::readMessage(in, limits);
      if (m.id == stream::kHeader) assembler.emplace(m.text, "fuzz stream");
      if (m.id == stream::kAcquisition && assembler) (void)assembler->add(std::move(m.acquisition));
      if (m.id == stream::kClose) {
        if (assembler) (void)assembler->finish();
        break;
      }
    }
  } catch (const Error&) {
    // bad input, reported as it should be
  }
  return 0;
}
