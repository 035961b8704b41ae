// Shared by the unit (cpu) and GPU (cuda) binaries: queued transfers and streamBatch
// (larmor/backend/streamed_batch.hpp). A batch of uneven chunks through two buffers each way gives exactly the
// chunk-at-a-time result, from host arrays that are pinned (large, CArray) and from ones that cannot be
// (std::vector: the transfers happen at once); a transfer queued behind work sees that work's result.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "larmor/array/array.hpp"
#include "larmor/backend/streamed_batch.hpp"
#include "support/device.hpp"

using namespace larmor;

namespace {
class StreamedBatchTest : public larmor::test::DeviceTest {};

/// x -> 2 x + (c + 1) i for chunk c, chunk sizes n, n / 3, n, n - 5, 7 (uneven, the last tiny).
template <class In, class Out>
void runChunks(Backend& be, const In& in, Out& out, index_t n) {
  const index_t sizes[] = {n, n / 3, n, n - 5, 7};
  std::vector<index_t> first{0};
  for (index_t s : sizes) first.push_back(first.back() + s);
  StreamedBatch b;
  b.chunks = 5;
  b.inBytes = b.outBytes = static_cast<std::size_t>(n) * sizeof(cfloat);
  b.input = [&](index_t c) {
    return HostSpan{in.data() + first[static_cast<std::size_t>(c)], static_cast<std::size_t>(sizes[c]) * sizeof(cfloat)};
  };
  b.output = [&](index_t c) {
    return MutableHostSpan{out.data() + first[static_cast<std::size_t>(c)],
                           static_cast<std::size_t>(sizes[c]) * sizeof(cfloat)};
  };
  std::unique_ptr<Buffer> shift = be.allocate(static_cast<std::size_t>(n) * sizeof(cfloat));
  b.compute = [&](index_t c, Buffer& x, Buffer* y) {
    ASSERT_NE(y, nullptr);
    be.fill(*shift, cfloat(0, static_cast<float>(c + 1)), sizes[c]);
    be.copy(*y, *shift, static_cast<std::size_t>(sizes[c]) * sizeof(cfloat));
    be.axpby(*y, cfloat(2), x, cfloat(1), sizes[c]);
  };
  streamBatch(be, b);
}
}  // namespace

TEST_P(StreamedBatchTest, ChunksThroughTwoBuffersGiveTheChunkAtATimeResult) {
  const index_t n = 300'000;  // 2.4 MB a chunk; the whole array (9.6 MB) is a large, pinnable block
  const index_t total = n + n / 3 + n + n - 5 + 7;
  CArray in(Shape{total}), out(Shape{total});
  for (index_t i = 0; i < total; ++i) in[i] = cfloat(static_cast<float>(i % 1013) - 500.f, static_cast<float>(i % 17));
  runChunks(be(), in, out, n);
  const index_t sizes[] = {n, n / 3, n, n - 5, 7};
  index_t at = 0, bad = 0;
  for (index_t c = 0; c < 5; ++c)
    for (index_t i = 0; i < sizes[c]; ++i, ++at)
      if (out[at] != cfloat(2) * in[at] + cfloat(0, static_cast<float>(c + 1))) ++bad;
  EXPECT_EQ(bad, 0);

  // Host memory that cannot be pinned: the same result.
  std::vector<cfloat> vin(in.data(), in.data() + total), vout(static_cast<std::size_t>(total));
  runChunks(be(), vin, vout, n);
  EXPECT_TRUE(std::equal(vout.begin(), vout.end(), out.data()));
}

TEST_P(StreamedBatchTest, QueuedTransfersFollowTheWorkBeforeThem) {
  const index_t n = 1 << 20;  // 8 MiB: pinned
  CArray host(Shape{n}), back(Shape{n});
  for (index_t i = 0; i < n; ++i) host[i] = cfloat(static_cast<float>(i), 1.f);
  auto buf = be().allocate(static_cast<std::size_t>(n) * sizeof(cfloat));
  be().fill(*buf, cfloat(3), n);
  // The upload starts after the fill, and the scale joined behind it sees the upload.
  ExecutionOps& exec = be().executionOps();
  auto up = exec.uploadQueued(*buf, host.data(), static_cast<std::size_t>(n) * sizeof(cfloat));
  up->join();
  be().scale(*buf, cfloat(2), n);
  auto down = exec.downloadQueued(back.data(), *buf, static_cast<std::size_t>(n) * sizeof(cfloat));
  down->wait();
  index_t bad = 0;
  for (index_t i = 0; i < n; ++i)
    if (back[i] != cfloat(2) * host[i]) ++bad;
  EXPECT_EQ(bad, 0);
  // Out of bounds: one clear error.
  EXPECT_THROW(exec.uploadQueued(*buf, host.data(), static_cast<std::size_t>(n + 1) * sizeof(cfloat)), Error);
  EXPECT_THROW(exec.downloadQueued(back.data(), *buf, 8, static_cast<std::size_t>(n) * sizeof(cfloat)), Error);
}

LARMOR_INSTANTIATE_ON_TEST_DEVICE(StreamedBatchTest);
