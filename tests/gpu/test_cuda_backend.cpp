// CudaBackend against CpuBackend: every Backend operation on the same random inputs (fixed seeds) on both,
// compared within a stated tolerance, plus the GPU-only behaviours (transfers at offsets, out of memory,
// devices that do not exist). The CUDA backend is reached through the registry and its plugin, as the
// program reaches it (support/device.hpp: skipped only on a machine without a GPU). The FFT against its float64
// definition and the centre convention: tests/shared/fft.cpp, run on "cuda" in this binary.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "larmor/backend/backend.hpp"
#include "larmor/backend/registry.hpp"
#include "support/device.hpp"
#include "support/error_norms.hpp"
#include "support/random_data.hpp"

namespace {

using larmor::Backend;
using larmor::CArray;
using larmor::CDeviceArray;
using larmor::cdouble;
using larmor::cfloat;
using larmor::FftDirection;
using larmor::index_t;
using larmor::Shape;
using larmor::test::randomArray;
using larmor::test::relL2Error;

// Tolerances (relative L2 error against the CPU backend unless said otherwise).
constexpr double kFftTol = 1e-5;          // two float FFT libraries; typical 1e-7
constexpr double kElementwiseTol = 1e-6;  // float arithmetic, FMA contraction on the GPU only
constexpr double kReductionTol = 1e-6;    // both accumulate in double; typical 1e-14
constexpr double kSosTol = 1e-6;

bool bitwiseEqual(const CArray& a, const CArray& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(cfloat)) == 0;
}

/// Uploads `input` to `be`, applies `op` to it there, downloads the result.
CArray runOn(Backend& be, const CArray& input, const std::function<void(Backend&, CDeviceArray&)>& op) {
  CDeviceArray x = CDeviceArray::upload(be, input);
  op(be, x);
  return x.download();
}

/// fftGramPadded on `be` of a random image in place (its grid as the allocator gives it), d a random diagonal.
CArray gramPaddedOn(Backend& be, const Shape& image, const Shape& grid, int rank, const CArray& diagonal) {
  return runOn(be, randomArray(image, 22), [&](Backend& b, CDeviceArray& x) {
    CDeviceArray d = CDeviceArray::upload(b, diagonal);
    auto scratch = b.allocate(static_cast<std::size_t>(grid.size()) * sizeof(cfloat));
    b.toeplitzOps().fftGramPadded(x.buffer(), x.buffer(), image, *scratch, grid, rank, d.buffer());
  });
}

class CudaBackendTest : public larmor::test::GpuTest {
 protected:

  Backend& gpu() { return *gpu_; }
  Backend& cpu() { return *cpu_; }

  /// The same op on both backends from the same input; returns {cpu, gpu} results.
  std::pair<CArray, CArray> both(const CArray& input, const std::function<void(Backend&, CDeviceArray&)>& op) {
    return {runOn(cpu(), input, op), runOn(gpu(), input, op)};
  }

};

// --- devices -----------------------------------------------------------------------------------------------

TEST_F(CudaBackendTest, DescribesItsDevice) {
  const larmor::DeviceInfo d = gpu().info();
  EXPECT_EQ(d.id, "cuda:0");
  EXPECT_TRUE(d.gpu);
  EXPECT_FALSE(d.name.empty());
  EXPECT_GT(d.memoryBytes, std::size_t{1} << 30);
  EXPECT_GE(d.computeMajor, 7);
  EXPECT_GT(d.multiprocessors, 0);
  EXPECT_NE(d.library.find("CUDA runtime"), std::string::npos) << d.library;
  EXPECT_NE(d.library.find("cuFFT"), std::string::npos) << d.library;
  std::printf("[ device   ] %s: %s, %zu MiB, sm_%d%d, %d SMs, %s\n", d.id.c_str(), d.name.c_str(),
              d.memoryBytes >> 20, d.computeMajor, d.computeMinor, d.multiprocessors, d.library.c_str());
}

TEST_F(CudaBackendTest, ListsEveryDeviceAndEachCanBeSelected) {
  auto& reg = larmor::BackendRegistry::instance();
  int n = 0;
  for (const auto& d : reg.devices()) {
    if (!d.gpu) continue;
    EXPECT_EQ(d.id, "cuda:" + std::to_string(n));
    auto be = reg.select(d.id).backend;
    ASSERT_TRUE(be);
    EXPECT_EQ(be->info().id, d.id);
    // A small round trip on each device, so that every GPU of a multi-GPU machine is exercised.
    const CArray in = randomArray(Shape{32, 32}, 100 + n);
    const CArray out = runOn(*be, in, [](Backend& b, CDeviceArray& x) {
      b.fft(x.buffer(), x.shape(), 2, FftDirection::Forward);
      b.fft(x.buffer(), x.shape(), 2, FftDirection::Inverse);
    });
    EXPECT_LT(relL2Error(out, in), kFftTol) << d.id;
    ++n;
  }
  EXPECT_GE(n, 1);
}

TEST_F(CudaBackendTest, SelectingADeviceThatDoesNotExistThrows) {
  auto& reg = larmor::BackendRegistry::instance();
  EXPECT_THROW(reg.select("cuda:99"), larmor::Error);
}

// --- memory ------------------------------------------------------------------------------------------------

TEST_F(CudaBackendTest, UploadDownloadRoundTrip) {
  // 3 Mi + 5 elements = 24 MiB: several staging chunks, an odd tail.
  for (index_t n : {index_t{1}, index_t{7}, index_t{1000}, (index_t{3} << 20) + 5}) {
    const CArray in = randomArray(Shape{n}, 1);
    CDeviceArray d = CDeviceArray::upload(gpu(), in);
    EXPECT_TRUE(bitwiseEqual(in, d.download())) << n;
  }
}

// Large host arrays (hostAllocate's large path) are pinned on first use and move by one DMA: an upload onto an
// idle stream, a download into one; an upload with work queued ahead is staged. Every path: the same bits,
// and an array freed (unpinned) right after its upload leaves the device copy intact.
TEST_F(CudaBackendTest, PinnedLargeArraysMoveDirectAndStayExact) {
  const index_t n = index_t{1} << 20;  // 8 MiB
  const CArray in = randomArray(Shape{n}, 7);
  auto dev = gpu().allocate(static_cast<std::size_t>(n) * sizeof(cfloat));
  gpu().synchronize();
  gpu().upload(*dev, in.data(), static_cast<std::size_t>(n) * sizeof(cfloat));  // idle stream: direct
  EXPECT_TRUE(larmor::pinHostBlock(in.data(), 64)) << "the large array was not pinned by its upload";
  CArray out(Shape{n});
  gpu().download(out.data(), *dev, static_cast<std::size_t>(n) * sizeof(cfloat));  // into a pinned block
  EXPECT_TRUE(bitwiseEqual(in, out));
  // Work queued ahead (a long fill): the upload is staged, and still lands after that work.
  auto big = gpu().allocate(std::size_t{256} << 20);
  gpu().fill(*big, cfloat(1.f), (index_t{256} << 20) / static_cast<index_t>(sizeof(cfloat)));
  gpu().fill(*dev, cfloat(0.f), n);
  gpu().upload(*dev, in.data(), static_cast<std::size_t>(n) * sizeof(cfloat));
  gpu().download(out.data(), *dev, static_cast<std::size_t>(n) * sizeof(cfloat));
  EXPECT_TRUE(bitwiseEqual(in, out));
  {
    CArray temporary = randomArray(Shape{n}, 8);
    gpu().synchronize();
    gpu().upload(*dev, temporary.data(), static_cast<std::size_t>(n) * sizeof(cfloat));
    out = temporary;
  }  // freed (unpinned and unmapped) as soon as the upload returns
  CArray back(Shape{n});
  gpu().download(back.data(), *dev, static_cast<std::size_t>(n) * sizeof(cfloat));
  EXPECT_TRUE(bitwiseEqual(out, back));
}

TEST_F(CudaBackendTest, UploadDownloadAtOffsets) {
  constexpr std::size_t kBytes = 4096;
  auto buf = gpu().allocate(kBytes);
  std::vector<unsigned char> model(kBytes);
  std::mt19937 rng(2);
  for (auto& b : model) b = static_cast<unsigned char>(rng());
  gpu().upload(*buf, model.data(), kBytes);
  // Writes at odd byte offsets and lengths, including the very end.
  const std::pair<std::size_t, std::size_t> writes[] = {{0, 1}, {1, 13}, {13, 1000}, {2047, 2}, {4000, 96}, {4095, 1}};
  for (auto [off, len] : writes) {
    std::vector<unsigned char> part(len);
    for (auto& b : part) b = static_cast<unsigned char>(rng());
    gpu().upload(*buf, part.data(), len, off);
    std::memcpy(model.data() + off, part.data(), len);
  }
  std::vector<unsigned char> all(kBytes);
  gpu().download(all.data(), *buf, kBytes);
  EXPECT_EQ(all, model);
  for (auto [off, len] : writes) {
    std::vector<unsigned char> part(len);
    gpu().download(part.data(), *buf, len, off);
    EXPECT_EQ(0, std::memcmp(part.data(), model.data() + off, len)) << off;
  }
  unsigned char byte = 0;
  EXPECT_THROW(gpu().upload(*buf, &byte, 1, kBytes), larmor::Error);
  EXPECT_THROW(gpu().download(&byte, *buf, 2, kBytes - 1), larmor::Error);
  // Large transfers at an offset: crosses staging chunks at an unaligned position.
  const std::size_t big = (std::size_t{20} << 20) + 3, off = 12345;
  auto large = gpu().allocate(big + off);
  std::vector<unsigned char> data(big), back(big);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  gpu().upload(*large, data.data(), big, off);
  gpu().download(back.data(), *large, big, off);
  EXPECT_EQ(data, back);
}

// ExecutionOps::record: the recorded work (FFTs, the Gram of a diagonal, vector ops) queued again by replay() gives
// the bits that running it directly gives, replay after replay; work that transfers, synchronises, reads a
// result or allocates is refused (null) without running, and the backend stays usable after each refusal.
TEST_F(CudaBackendTest, RecordedWorkReplaysTheSameBitsAndRefusesWhatItCannotReplay) {
  const Shape shape{64, 48, 1, 3};
  const CArray input = randomArray(shape, 301), diag = randomArray(Shape{64, 48}, 302);
  CDeviceArray direct = CDeviceArray::upload(gpu(), input), replayed = CDeviceArray::upload(gpu(), input);
  const CDeviceArray d = CDeviceArray::upload(gpu(), diag), other = CDeviceArray::upload(gpu(), input);
  auto work = [&](CDeviceArray& x) {
    gpu().fft(x.buffer(), shape, 2, FftDirection::Forward);
    gpu().toeplitzOps().fftGram(x.buffer(), shape, 2, d.buffer());
    gpu().axpby(x.buffer(), cfloat(0.5f, -0.25f), other.buffer(), cfloat(0.75f), x.size());
    gpu().fft(x.buffer(), shape, 2, FftDirection::Inverse);
  };
  work(direct);  // the first run makes the plans and work areas, as CG's first iteration does
  work(replayed);
  auto rec = gpu().executionOps().record([&] { work(replayed); });
  ASSERT_NE(rec, nullptr) << "FFTs and vector ops must be recordable";
  for (int i = 0; i < 3; ++i) {
    work(direct);
    rec->replay();
    ASSERT_TRUE(bitwiseEqual(replayed.download(), direct.download())) << "replay " << i;
    if (i == 0) {
      // Between replays, other transforms evict every cached plan (the FFT engine keeps 16) and outgrow its work
      // area: the recording's plans and work area must stay while it lives.
      for (index_t len = 40; len < 40 + 2 * 18; len += 2) {
        CDeviceArray other2(gpu(), Shape{len, 3});
        gpu().fill(other2.buffer(), cfloat(1.f), other2.size());
        gpu().fft(other2.buffer(), other2.shape(), 1, FftDirection::Forward);
      }
      CDeviceArray big(gpu(), Shape{1024, 1024, 1, 8});
      gpu().fill(big.buffer(), cfloat(1.f), big.size());
      gpu().fft(big.buffer(), big.shape(), 2, FftDirection::Forward);
    }
  }
  rec.reset();

  std::vector<cfloat> host(16);
  CDeviceArray small(gpu(), Shape{16});
  const std::vector<std::pair<std::string, std::function<void()>>> refused = {
      {"upload", [&] { gpu().upload(small.buffer(), host.data(), 16 * sizeof(cfloat)); }},
      {"download", [&] { gpu().download(host.data(), small.buffer(), 16 * sizeof(cfloat)); }},
      {"synchronize", [&] { gpu().synchronize(); }},
      {"dot", [&] { (void)gpu().dot(small.buffer(), small.buffer(), 16); }},
      {"allocate", [&] { (void)gpu().allocate(1024); }},
  };
  for (const auto& [name, body] : refused) {
    const CArray before = replayed.download();
    auto r = gpu().executionOps().record([&] {
      gpu().scale(replayed.buffer(), cfloat(2.f), replayed.size());
      body();
    });
    EXPECT_EQ(r, nullptr) << name << " was recorded";
    EXPECT_TRUE(bitwiseEqual(replayed.download(), before)) << name << ": a refused recording ran its work";
    gpu().fill(small.buffer(), cfloat(3.f, 1.f), 16);
    const CArray back = small.download();
    EXPECT_EQ(back[15], cfloat(3.f, 1.f)) << "the backend is unusable after refusing " << name;
  }
}

TEST_F(CudaBackendTest, CopyIsExactAndStaysWithinBytes) {
  const CArray a = randomArray(Shape{1001}, 3), b = randomArray(Shape{1001}, 4);
  CDeviceArray da = CDeviceArray::upload(gpu(), a), db = CDeviceArray::upload(gpu(), b);
  gpu().copy(db.buffer(), da.buffer(), 500 * sizeof(cfloat));
  const CArray got = db.download();
  for (index_t i = 0; i < 1001; ++i) ASSERT_EQ(got[i], i < 500 ? a[i] : b[i]) << i;
  gpu().copy(db.buffer(), da.buffer(), da.bytes());
  EXPECT_TRUE(bitwiseEqual(a, db.download()));
  EXPECT_THROW(gpu().copy(db.buffer(), da.buffer(), da.bytes() + 8), larmor::Error);
}

TEST_F(CudaBackendTest, OutOfMemoryIsAnErrorAndTheBackendStaysUsable) {
  try {
    auto huge = gpu().allocate(std::size_t{1} << 50);  // 1 PiB
    FAIL() << "allocating 1 PiB succeeded";
  } catch (const larmor::Error& e) {
    EXPECT_NE(std::string(e.what()).find("GPU out of memory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
  }
  const CArray in = randomArray(Shape{257}, 5);
  const CArray out = runOn(gpu(), in, [](Backend& b, CDeviceArray& x) { b.scale(x.buffer(), cfloat(2.f), x.size()); });
  for (index_t i = 0; i < in.size(); ++i) ASSERT_EQ(out[i], in[i] * 2.f);
}

TEST_F(CudaBackendTest, RejectsCountsPastTheBufferAndForeignBuffers) {
  CDeviceArray x(gpu(), Shape{10});
  EXPECT_THROW(gpu().fill(x.buffer(), cfloat(1.f), 11), larmor::Error);
  EXPECT_THROW(gpu().fill(x.buffer(), cfloat(1.f), -1), larmor::Error);
  EXPECT_THROW(gpu().fft(x.buffer(), Shape{4, 4}, 2, FftDirection::Forward), larmor::Error);
  EXPECT_THROW(gpu().fft(x.buffer(), Shape{10}, 0, FftDirection::Forward), larmor::Error);
  EXPECT_THROW(gpu().fft(x.buffer(), Shape{10}, 2, FftDirection::Forward), larmor::Error);
  CDeviceArray h(cpu(), Shape{10});
  EXPECT_THROW(gpu().fill(h.buffer(), cfloat(1.f), 10), larmor::Error);
  EXPECT_THROW(gpu().copy(x.buffer(), h.buffer(), 8), larmor::Error);
}

TEST_F(CudaBackendTest, ABufferMayOutliveItsBackend) {
  auto be = larmor::BackendRegistry::instance().select("cuda").backend;
  auto buf = be->allocate(1 << 20);
  be->fill(*buf, cfloat(1.f), 1 << 17);
  be.reset();  // the backend goes first; the buffer frees its memory itself afterwards
  buf.reset();
  SUCCEED();
}

TEST_F(CudaBackendTest, ManyAllocationsReuseMemoryCorrectly) {
  // Freed blocks come back from the cache; values must never leak from one array into the next op.
  std::mt19937 rng(6);
  for (int i = 0; i < 200; ++i) {
    const index_t n = 1 + static_cast<index_t>(rng() % 5000);
    CDeviceArray x(gpu(), Shape{n});
    gpu().fill(x.buffer(), cfloat(static_cast<float>(i), -1.f), n);
    const CArray h = x.download();
    ASSERT_EQ(h[0], cfloat(static_cast<float>(i), -1.f));
    ASSERT_EQ(h[n - 1], cfloat(static_cast<float>(i), -1.f));
  }
}

// --- complex vectors ---------------------------------------------------------------------------------------

const index_t kSizes[] = {1, 2, 3, 1000, 4097, (index_t{1} << 20) + 3};

TEST_F(CudaBackendTest, FillMatchesCpu) {
  for (index_t n : kSizes) {
    const CArray in = randomArray(Shape{n + 3}, 10);
    auto [c, g] = both(in, [n](Backend& b, CDeviceArray& x) { b.fill(x.buffer(), cfloat(0.5f, -2.f), n); });
    EXPECT_TRUE(bitwiseEqual(c, g)) << n;  // the elements past n are untouched on both
  }
  // n = 0 does nothing
  const CArray in = randomArray(Shape{5}, 11);
  auto [c, g] = both(in, [](Backend& b, CDeviceArray& x) { b.fill(x.buffer(), cfloat(1.f), 0); });
  EXPECT_TRUE(bitwiseEqual(in, g));
}

TEST_F(CudaBackendTest, ScaleMatchesCpu) {
  for (index_t n : kSizes) {
    const CArray in = randomArray(Shape{n}, 12);
    auto [c, g] = both(in, [n](Backend& b, CDeviceArray& x) { b.scale(x.buffer(), cfloat(0.3f, -1.7f), n); });
    EXPECT_LT(relL2Error(g, c), kElementwiseTol) << n;
  }
}

TEST_F(CudaBackendTest, AxpbyMatchesCpu) {
  for (index_t n : kSizes) {
    const CArray xs = randomArray(Shape{n}, 13), ys = randomArray(Shape{n}, 14);
    for (cfloat beta : {cfloat(0.25f, 1.5f), cfloat(0.f)}) {
      auto op = [&](Backend& b, CDeviceArray& y) {
        CDeviceArray x = CDeviceArray::upload(b, xs);
        b.axpby(y.buffer(), cfloat(-1.1f, 0.4f), x.buffer(), beta, n);
      };
      auto [c, g] = both(ys, op);
      EXPECT_LT(relL2Error(g, c), kElementwiseTol) << n << " beta " << beta;
    }
    // x and y the same buffer: y = (a + b) y
    auto [c, g] = both(ys, [n](Backend& b, CDeviceArray& y) {
      b.axpby(y.buffer(), cfloat(2.f, 1.f), y.buffer(), cfloat(-0.5f, 0.25f), n);
    });
    EXPECT_LT(relL2Error(g, c), kElementwiseTol) << n << " aliased";
  }
}

TEST_F(CudaBackendTest, MultiplyMatchesCpuWithBroadcastAndConj) {
  struct Case {
    index_t na, nb;
  };
  for (Case k : {Case{1, 1}, Case{7, 7}, Case{1, 1000}, Case{64 * 64, 64 * 64 * 8}, Case{1000, 1000 * 13},
                 Case{33 * 31, 33 * 31 * 5}, Case{(index_t{1} << 20) + 3, (index_t{1} << 20) + 3}}) {
    const CArray as = randomArray(Shape{k.na}, 15), bs = randomArray(Shape{k.nb}, 16);
    for (bool conj : {false, true}) {
      // out separate from b
      auto sep = [&](Backend& be, CDeviceArray& out) {
        CDeviceArray a = CDeviceArray::upload(be, as), b = CDeviceArray::upload(be, bs);
        be.multiply(out.buffer(), a.buffer(), k.na, b.buffer(), k.nb, conj);
      };
      auto [c1, g1] = both(randomArray(Shape{k.nb}, 17), sep);
      EXPECT_LT(relL2Error(g1, c1), kElementwiseTol) << k.na << "/" << k.nb << " conj " << conj;
      // out aliasing b
      auto alias = [&](Backend& be, CDeviceArray& b) {
        CDeviceArray a = CDeviceArray::upload(be, as);
        be.multiply(b.buffer(), a.buffer(), k.na, b.buffer(), k.nb, conj);
      };
      auto [c2, g2] = both(bs, alias);
      EXPECT_LT(relL2Error(g2, c2), kElementwiseTol) << k.na << "/" << k.nb << " conj " << conj << " aliased";
    }
  }
  CDeviceArray a(gpu(), Shape{3}), b(gpu(), Shape{10});
  EXPECT_THROW(gpu().multiply(b.buffer(), a.buffer(), 3, b.buffer(), 10, false), larmor::Error);  // 3 does not divide 10
}

TEST_F(CudaBackendTest, DotAndNorm2MatchCpuAndAreDeterministic) {
  for (index_t n : {index_t{1}, index_t{5}, index_t{2048}, index_t{2049}, index_t{1000003}, index_t{10} << 20}) {
    const CArray as = randomArray(Shape{n}, 18), bs = randomArray(Shape{n}, 19);
    CDeviceArray ca = CDeviceArray::upload(cpu(), as), cb = CDeviceArray::upload(cpu(), bs);
    CDeviceArray ga = CDeviceArray::upload(gpu(), as), gb = CDeviceArray::upload(gpu(), bs);
    const cdouble dc = cpu().dot(ca.buffer(), cb.buffer(), n), dg = gpu().dot(ga.buffer(), gb.buffer(), n);
    EXPECT_LT(std::abs(dg - dc) / std::abs(dc), kReductionTol) << n << ": cpu " << dc << " gpu " << dg;
    const double nc = cpu().norm2(ca.buffer(), n), ng = gpu().norm2(ga.buffer(), n);
    EXPECT_LT(std::abs(ng - nc) / nc, kReductionTol) << n << ": cpu " << nc << " gpu " << ng;
    // The same input gives the same bits (fixed partition and summation order).
    const cdouble dg2 = gpu().dot(ga.buffer(), gb.buffer(), n);
    EXPECT_EQ(std::memcmp(&dg, &dg2, sizeof dg), 0) << n;
    const double ng2 = gpu().norm2(ga.buffer(), n);
    EXPECT_EQ(std::memcmp(&ng, &ng2, sizeof ng), 0) << n;
    // dot(a, a) = norm2(a)^2 with a real result
    const cdouble aa = gpu().dot(ga.buffer(), ga.buffer(), n);
    EXPECT_NEAR(aa.real(), ng * ng, 1e-12 * ng * ng);
    EXPECT_EQ(aa.imag(), 0.0);
  }
  CDeviceArray e(gpu(), Shape{4});
  EXPECT_EQ(gpu().dot(e.buffer(), e.buffer(), 0), cdouble(0.0));
  EXPECT_EQ(gpu().norm2(e.buffer(), 0), 0.0);
}

// --- FFT ---------------------------------------------------------------------------------------------------

struct FftCase {
  std::vector<index_t> dims;
  int rank;
};

void PrintTo(const FftCase& c, std::ostream* os) {
  *os << Shape(c.dims).str() << " rank " << c.rank;
}

std::string fftCaseName(const ::testing::TestParamInfo<FftCase>& info) {
  std::string s = "r" + std::to_string(info.param.rank) + "_";
  for (std::size_t i = 0; i < info.param.dims.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(info.param.dims[i]);
  }
  return s;
}

class CudaFft : public CudaBackendTest, public ::testing::WithParamInterface<FftCase> {};

TEST_P(CudaFft, ForwardInverseRoundTripAndGramMatchCpu) {
  const Shape shape(GetParam().dims);
  const int rank = GetParam().rank;
  const CArray in = randomArray(shape, 20);
  for (FftDirection dir : {FftDirection::Forward, FftDirection::Inverse}) {
    auto [c, g] = both(in, [&](Backend& b, CDeviceArray& x) { b.fft(x.buffer(), shape, rank, dir); });
    EXPECT_LT(relL2Error(g, c), kFftTol) << (dir == FftDirection::Forward ? "forward" : "inverse");
  }
  const CArray back = runOn(gpu(), in, [&](Backend& b, CDeviceArray& x) {
    b.fft(x.buffer(), shape, rank, FftDirection::Forward);
    b.fft(x.buffer(), shape, rank, FftDirection::Inverse);
  });
  EXPECT_LT(relL2Error(back, in), kFftTol) << "round trip";
  // fftGram = F^H diag(d) F, d one transform's elements (cuda/fft_last.cu's fused pass where the shape allows)
  const CArray diagonal = randomArray(Shape{shape.span(0, static_cast<std::size_t>(rank))}, 21);
  auto [cg, gg] = both(in, [&](Backend& b, CDeviceArray& x) {
    CDeviceArray d = CDeviceArray::upload(b, diagonal);
    b.toeplitzOps().fftGram(x.buffer(), shape, rank, d.buffer());
  });
  EXPECT_LT(relL2Error(gg, cg), kFftTol) << "gram";
  // fftGramInBox: the input zero outside the centred box of half the transformed lengths, the results compared
  // inside it (outside it they are unspecified): the fused pass's planes of the box only
  std::vector<index_t> boxDims(GetParam().dims);
  for (int d = 0; d < rank; ++d) boxDims[static_cast<std::size_t>(d)] = std::max<index_t>(1, shape[static_cast<std::size_t>(d)] / 2);
  const Shape box(boxDims);
  auto inBox = [&](index_t i) {
    for (int d = 0; d < rank; ++d) {
      const index_t n = shape[static_cast<std::size_t>(d)], c = i % n, begin = n / 2 - box[static_cast<std::size_t>(d)] / 2;
      if (c < begin || c >= begin + box[static_cast<std::size_t>(d)]) return false;
      i /= n;
    }
    return true;
  };
  CArray boxed = in;
  for (index_t i = 0; i < boxed.size(); ++i)
    if (!inBox(i)) boxed[i] = cfloat(0.f);
  CArray cb = runOn(cpu(), boxed, [&](Backend& b, CDeviceArray& x) {
    CDeviceArray d = CDeviceArray::upload(b, diagonal);
    b.toeplitzOps().fftGram(x.buffer(), shape, rank, d.buffer());
  });
  CArray gb = runOn(gpu(), boxed, [&](Backend& b, CDeviceArray& x) {
    CDeviceArray d = CDeviceArray::upload(b, diagonal);
    b.toeplitzOps().fftGramInBox(x.buffer(), shape, rank, d.buffer(), box);
  });
  for (index_t i = 0; i < cb.size(); ++i)
    if (!inBox(i)) cb[i] = gb[i] = cfloat(0.f);
  EXPECT_LT(relL2Error(gb, cb), kFftTol) << "gram in the box " << box.str();
  // fftGramPadded: the box as an image of its own, padded, the Gram, cropped (the Toeplitz operator's product; on 3D
  // grids cuda/fft_last.cu's padded passes, the grid left as the allocator gives it), in place (out = image)
  EXPECT_LT(relL2Error(gramPaddedOn(gpu(), box, shape, rank, diagonal), gramPaddedOn(cpu(), box, shape, rank, diagonal)),
            kFftTol)
      << "gram padded from " << box.str();
}

TEST_F(CudaBackendTest, FftGramPaddedMatchesCpuForOddAndWholeBoxes) {
  // The padded passes' box offsets g / 2 - n / 2 for odd and even n, a box as large as the grid, batches (the
  // Toeplitz operator's [x, y, z, 1, batch] layout among them), every split of x and y (32..512); in 3D a z that
  // falls back to the planes-only padding (16: no Gram pass), in 2D a y that falls back (48) and x of 512.
  struct Case {
    Shape grid, image;
    int rank;
  };
  const std::vector<Case> cases{
      {Shape{64, 64, 64, 2}, Shape{31, 17, 20, 2}, 3},       {Shape{32, 128, 64}, Shape{32, 128, 64}, 3},
      {Shape{512, 32, 32}, Shape{301, 16, 1}, 3},            {Shape{64, 512, 32}, Shape{40, 255, 31}, 3},
      {Shape{256, 256, 64}, Shape{128, 128, 32}, 3},         {Shape{64, 64, 16}, Shape{32, 32, 8}, 3},
      {Shape{256, 256, 1, 1, 8}, Shape{128, 128, 1, 1, 8}, 2}, {Shape{512, 64, 3}, Shape{301, 33, 3}, 2},
      {Shape{32, 32}, Shape{32, 32}, 2},                     {Shape{64, 48, 2}, Shape{31, 17, 2}, 2}};
  for (const Case& c : cases) {
    const CArray diagonal = randomArray(Shape{c.grid.span(0, static_cast<std::size_t>(c.rank))}, 23);
    EXPECT_LT(relL2Error(gramPaddedOn(gpu(), c.image, c.grid, c.rank, diagonal),
                         gramPaddedOn(cpu(), c.image, c.grid, c.rank, diagonal)),
              kFftTol)
        << c.image.str() << " in " << c.grid.str() << " rank " << c.rank;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaFft,
    ::testing::Values(
        // 1D: even, odd, lengths 1..3, primes (cuFFT's Bluestein path), mixed radix, long, batched
        FftCase{{64}, 1}, FftCase{{63}, 1}, FftCase{{1}, 1}, FftCase{{2}, 1}, FftCase{{3}, 1}, FftCase{{1021}, 1},
        FftCase{{2310}, 1}, FftCase{{1 << 20}, 1}, FftCase{{128, 10}, 1}, FftCase{{127, 9}, 1},
        // 2D: even, odd, mixed, a length-1 dimension first or batched behind, coil batches, lengths 2 mod 4
        // (even lengths take the one-pass half swap of cuda/fft.cu, the others the two modulation passes)
        FftCase{{64, 64}, 2}, FftCase{{65, 63}, 2}, FftCase{{64, 63}, 2}, FftCase{{1, 64}, 2}, FftCase{{64, 1, 5}, 2},
        FftCase{{17, 12, 10}, 2}, FftCase{{256, 256, 8}, 2}, FftCase{{96, 80, 4, 3}, 2}, FftCase{{6, 10, 3}, 2},
        // 3D: even, odd, mixed, a length-1 dimension in the middle, all length 1, batched
        FftCase{{32, 32, 32}, 3}, FftCase{{33, 31, 29}, 3}, FftCase{{30, 14, 6}, 3}, FftCase{{2, 1, 6, 2}, 3},
        FftCase{{10, 1, 1, 4}, 3}, FftCase{{30, 31, 7}, 3}, FftCase{{16, 1, 9, 3}, 3},
        FftCase{{1, 1, 1}, 3}, FftCase{{64, 64, 64, 2}, 3}, FftCase{{5, 4, 3, 2, 2}, 3}, FftCase{{128, 128, 128}, 3},
        // the fused last-dimension pass (cuda/fft_last.cu: last length a power of two 32..512, x's half a multiple
        // of the tile) with every tile width, a length-1 dimension between, y not a power of two, batches; and
        // shapes just outside it (x too short for the tile, last length 1024 or 16) that keep the swap pass
        FftCase{{64, 1, 128}, 3}, FftCase{{32, 512, 2}, 2}, FftCase{{128, 48, 32}, 3}, FftCase{{256, 6, 64, 3}, 3},
        FftCase{{512, 256, 3}, 2}, FftCase{{16, 256, 256}, 3}, FftCase{{1, 32, 32}, 3}, FftCase{{16, 64}, 2},
        FftCase{{48, 64}, 2}, FftCase{{64, 1024}, 2}, FftCase{{64, 16}, 2},
        // one contiguous transformed dimension of 32..512 (the row pass, no cuFFT): rows not a multiple of a
        // block's, a length-1 dimension first, GRAPPA's readout over many rows
        FftCase{{256, 33}, 1}, FftCase{{512, 9}, 1}, FftCase{{32, 7, 3}, 1}, FftCase{{1, 256, 5}, 2},
        FftCase{{512, 256, 2}, 1}, FftCase{{1024, 64}, 2}),
    fftCaseName);

TEST_F(CudaBackendTest, FftPlanCacheEvictionKeepsResultsRight) {
  // More distinct shapes than the cache holds, then the first ones again.
  std::vector<FftCase> cases;
  for (index_t n = 20; n < 60; n += 2) cases.push_back({{n, n + 1}, 2});
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& k : cases) {
      const Shape shape(k.dims);
      const CArray in = randomArray(shape, 22);
      auto [c, g] = both(in, [&](Backend& b, CDeviceArray& x) { b.fft(x.buffer(), shape, k.rank, FftDirection::Forward); });
      ASSERT_LT(relL2Error(g, c), kFftTol) << shape.str() << " pass " << pass;
    }
}

TEST_F(CudaBackendTest, FftOfAnEmptyArrayDoesNothing) {
  CDeviceArray x(gpu(), Shape{4});
  EXPECT_NO_THROW(gpu().fft(x.buffer(), Shape{0, 4}, 2, FftDirection::Forward));
  gpu().synchronize();
}

// --- resize and coil combination ---------------------------------------------------------------------------

TEST_F(CudaBackendTest, ResizeCentredCropAndPadAreExact) {
  struct Case {
    std::vector<index_t> dst, src;
  };
  const Case cases[] = {
      {{8}, {5}},                              // pad, odd into even
      {{5}, {8}},                              // crop
      {{7}, {7}},                              // same
      {{128, 128}, {256, 256}},                // crop 2D (readout oversampling)
      {{256, 256}, {100, 101}},                // pad 2D, odd and even
      {{64, 48}, {50, 60}},                    // crop one dim, pad the other
      {{33, 32, 31}, {30, 35, 31}},            // 3D mixed
      {{9, 8, 7, 6}, {6, 7, 8, 9}},            // rank 4, every dim changes
      {{16, 16, 1, 1, 8}, {20, 12, 1, 1, 8}},  // batch of 8 coils behind dims 0..3
      {{6, 5, 4, 3, 2, 3}, {3, 6, 5, 2, 2, 3}},  // rank 6: batch = 2 x 3
      {{1, 1}, {5, 5}},                        // down to the centre sample
      {{5, 5}, {1, 1}},                        // a single sample into the centre
  };
  for (const auto& k : cases) {
    const Shape ds(k.dst), ss(k.src);
    const CArray src = randomArray(ss, 23);
    auto run = [&](Backend& be) {
      CDeviceArray s = CDeviceArray::upload(be, src);
      CDeviceArray d = CDeviceArray::upload(be, randomArray(ds, 24));  // non-zero garbage: the pad must clear it
      be.resizeCentred(d.buffer(), ds, s.buffer(), ss);
      return d.download();
    };
    const CArray c = run(cpu()), g = run(gpu());
    EXPECT_TRUE(bitwiseEqual(c, g)) << ds.str() << " from " << ss.str();
  }
  CDeviceArray a(gpu(), Shape{4, 4, 1, 1, 2}), b(gpu(), Shape{4, 4, 1, 1, 3});
  EXPECT_THROW(gpu().resizeCentred(a.buffer(), a.shape(), b.buffer(), b.shape()), larmor::Error);
}

TEST_F(CudaBackendTest, SumOfSquaresMatchesCpu) {
  struct Case {
    index_t voxels, coils, batch;
  };
  for (Case k : {Case{1, 1, 1}, Case{1000, 1, 1}, Case{64 * 64, 8, 1}, Case{33 * 31, 5, 3}, Case{256 * 256, 32, 2},
                 Case{17, 0, 2}}) {
    const CArray in = randomArray(Shape{k.voxels, std::max<index_t>(k.coils, 1), k.batch}, 25);
    auto run = [&](Backend& be) {
      CDeviceArray i = CDeviceArray::upload(be, in);
      CDeviceArray o(be, Shape{k.voxels, k.batch});
      be.sumOfSquares(o.buffer(), i.buffer(), k.voxels, k.coils, k.batch);
      return o.download();
    };
    const CArray c = run(cpu()), g = run(gpu());
    if (k.coils == 0) {
      EXPECT_TRUE(bitwiseEqual(c, g));
      continue;
    }
    EXPECT_LT(relL2Error(g, c), kSosTol) << k.voxels << "x" << k.coils << "x" << k.batch;
    for (index_t i = 0; i < g.size(); ++i) ASSERT_EQ(g[i].imag(), 0.f);
  }
}

// --- arrays past 2^32 elements (the 64-bit index paths); needs about 40 GB of device memory -----------------

TEST_F(CudaBackendTest, HugeArraysUse64BitIndices) {
  const index_t transform = 1024, batch = (index_t{1} << 22) + 1;  // 2^32 + 1024 elements, 32 GiB
  const index_t n = transform * batch;
  if (gpu().info().memoryBytes < (std::size_t{40} << 30)) GTEST_SKIP() << "needs 40 GB of device memory";
  CDeviceArray x(gpu(), Shape{transform, batch});
  gpu().fill(x.buffer(), cfloat(1.f, 2.f), n);
  gpu().scale(x.buffer(), cfloat(0.f, 1.f), n);  // (-2, 1)
  EXPECT_NEAR(gpu().norm2(x.buffer(), n), std::sqrt(5.0 * static_cast<double>(n)), 1e-9 * std::sqrt(5.0 * n));
  // Broadcast of a 1024-element pattern over every batch, in place.
  CArray pattern(Shape{transform});
  for (index_t i = 0; i < transform; ++i) pattern[i] = cfloat(static_cast<float>(i % 7), 0.f);
  CDeviceArray p = CDeviceArray::upload(gpu(), pattern);
  gpu().multiply(x.buffer(), p.buffer(), transform, x.buffer(), n, false);
  CArray last(Shape{transform});
  gpu().download(last.data(), x.buffer(), transform * sizeof(cfloat), static_cast<std::size_t>(n - transform) * sizeof(cfloat));
  for (index_t i = 0; i < transform; ++i) ASSERT_EQ(last[i], pattern[i] * cfloat(-2.f, 1.f)) << i;
  // Forward FFT of a constant in every batch: all energy at the centre, sqrt(N) * value.
  gpu().fill(x.buffer(), cfloat(1.f, 0.f), n);
  gpu().fft(x.buffer(), x.shape(), 1, FftDirection::Forward);
  gpu().download(last.data(), x.buffer(), transform * sizeof(cfloat), static_cast<std::size_t>(n - transform) * sizeof(cfloat));
  for (index_t i = 0; i < transform; ++i) {
    const double expect = i == transform / 2 ? std::sqrt(static_cast<double>(transform)) : 0.0;
    ASSERT_NEAR(last[i].real(), expect, 1e-4) << i;
    ASSERT_NEAR(last[i].imag(), 0.0, 1e-4) << i;
  }
  gpu().sumOfSquares(x.buffer(), x.buffer(), n, 1, 1);  // in place with one coil: |value|
  const double expectNorm = std::sqrt(static_cast<double>(n));
  EXPECT_NEAR(gpu().norm2(x.buffer(), n), expectNorm, 1e-5 * expectNorm);
}

}  // namespace
