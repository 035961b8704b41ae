// The transform workloads of `larmor-cli bench --suite seeds` (docs/benchmarks.md):
//  - copy: 256 MiB device to device (read + write), and host -> device -> host: the bandwidth every
//    memory-bound floor below uses, and the link's;
//  - fft3d-128 / fft3d-256: the centred unitary FFT (backend.hpp's convention) in place, against cuFFT alone;
//  - fhd-exact: Stone et al. 2008's F^H d (Kirk & Hwu ch. 14), 128^3 voxels x 284,592 samples, phase
//    recurrence (GPU.md), uniform random k in the band; its error against float64 sums at 64 voxels;
//  - nufft2d-adjoint(-sector): golden-angle radial 512 readout x 512 spokes -> 256^2, 8 coils, W 4, sigma 2
//    (TRON's output-parallel spreader on CUDA, Gregerson's sector spreader as the -sector variant);
//  - nufft2d-adjoint-batch64: the same over 64 slices, host to host streamed (uploads, gridding and downloads
//    overlapped: streamBatch);
//  - nufft3d-adjoint: 128^3 image, 2 M uniform random samples (cuFINUFFT's benchmark case).
// Floors (docs/benchmarks.md "How limits are derived"): bytes that must be read and written once at the memory
// bandwidth, or FMAs at the FP32 FMA rate; host-to-host floors add what crosses the link at its rate.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <memory>
#include <numbers>
#include <random>
#include <string>

#include "bench_internal.hpp"
#include "larmor/backend/streamed_batch.hpp"
#include "larmor/ops/nufft.hpp"
#include "larmor/traj/radial.hpp"

namespace larmor::recon::bench {

namespace {

constexpr double kC = sizeof(cfloat);  // bytes of one complex float


/// Uniform random k in the band [-N/2, N/2) of each dimension, [3, m].
RArray uniformTrajectory(int dims, const index_t n[3], index_t m, unsigned seed) {
  RArray k(Shape{3, m}, 0.f);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  for (index_t j = 0; j < m; ++j)
    for (int d = 0; d < dims; ++d) k[3 * j + d] = static_cast<float>(u(rng) * static_cast<double>(n[d]));
  return k;
}

/// Upload, run, download: the host-to-host body of a transform from `in` (host) to `out` (host).
struct HostRoundTrip {
  Backend& be;
  const CArray& in;
  CArray& out;
  Buffer& inBuf;
  Buffer& outBuf;
  void operator()(const std::function<void()>& compute) const {
    be.upload(inBuf, in.data(), static_cast<std::size_t>(in.size()) * sizeof(cfloat));
    compute();
    be.download(out.data(), outBuf, static_cast<std::size_t>(out.size()) * sizeof(cfloat));
  }
};

Prepared copyWorkload(const Context& c) {
  const index_t fullMiB = 256, mib = c.quick && !c.gpu ? 32 : fullMiB;
  const index_t n = mib << 17;  // complex floats: 8 bytes each
  struct State {
    CArray host, back;
    std::unique_ptr<Buffer> a, b;
    double upMs = 0, downMs = 0;
  };
  auto s = std::make_shared<State>();
  s->host = randomComplex(Shape{n}, 1);
  s->back = CArray(Shape{n});
  const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(cfloat);
  s->a = c.be.allocate(bytes);
  s->b = c.be.allocate(bytes);
  c.be.upload(*s->a, s->host.data(), bytes);
  Prepared p;
  p.size = std::to_string(mib) + " MiB";
  p.scaled = scaledNote(c.gpu, c.quick, p.size, std::to_string(fullMiB) + " MiB");
  p.reps = c.gpu ? 20 : (c.quick ? 3 : 5);
  Backend& be = c.be;
  p.device = [s, &be, bytes] { be.copy(*s->b, *s->a, bytes); };
  p.host = [s, &be, bytes] {
    using Clock = std::chrono::steady_clock;
    auto t0 = Clock::now();
    be.upload(*s->a, s->host.data(), bytes);
    be.synchronize();
    s->upMs = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    be.copy(*s->b, *s->a, bytes);
    be.synchronize();
    t0 = Clock::now();
    be.download(s->back.data(), *s->b, bytes);
    s->downMs = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return kNaN;
  };
  p.hostBytesIn = p.hostBytesOut = static_cast<double>(bytes);
  p.deviceLimitMs = bytesMs(2.0 * static_cast<double>(bytes), c.limits.memoryBandwidth);
  p.hostLimitMs = p.deviceLimitMs + bytesMs(2.0 * static_cast<double>(bytes), c.limits.linkBandwidth);
  p.limitBasis = "device: the buffer read and written once at the memory bandwidth; host to host: plus upload and "
                 "download at the link rate";
  p.report = [s, bytes](nlohmann::json& e, double deviceMs, double) {
    e["device_to_device_gb_per_s"] = 2.0 * static_cast<double>(bytes) / deviceMs * 1e-6;  // read + write
    e["host_to_device_gb_per_s"] = static_cast<double>(bytes) / s->upMs * 1e-6;             // last run
    e["device_to_host_gb_per_s"] = static_cast<double>(bytes) / s->downMs * 1e-6;
  };
  return p;
}

Prepared fftWorkload(const Context& c, index_t full) {
  const index_t n = c.gpu ? full : (c.quick ? full / 2 : full);
  const Shape shape{n, n, n};
  struct State {
    CArray in, out;
    std::unique_ptr<Buffer> x;
  };
  auto s = std::make_shared<State>();
  s->in = randomComplex(shape, 2);
  s->out = CArray(shape);
  const double bytes = static_cast<double>(shape.size()) * kC;
  s->x = c.be.allocate(static_cast<std::size_t>(bytes));
  c.be.upload(*s->x, s->in.data(), static_cast<std::size_t>(bytes));
  Prepared p;
  p.size = cube(n) + " complex, in place";
  p.scaled = scaledNote(c.gpu, c.quick, cube(n), cube(full));
  p.reps = c.gpu ? 20 : (c.quick ? 3 : 5);
  Backend& be = c.be;
  p.device = [s, &be, shape] { be.fft(*s->x, shape, 3, FftDirection::Forward); };
  p.host = [s, &be, shape] {
    HostRoundTrip{be, s->in, s->out, *s->x, *s->x}([&] { be.fft(*s->x, shape, 3, FftDirection::Forward); });
    return kNaN;
  };
  p.hostBytesIn = p.hostBytesOut = bytes;
  p.deviceLimitMs = bytesMs(fftBytes(static_cast<double>(shape.size())), c.limits.memoryBandwidth);
  p.hostLimitMs = p.deviceLimitMs + bytesMs(2 * bytes, c.limits.linkBandwidth);
  p.limitBasis = "device: the array read and written once at the memory bandwidth; host to host: plus the array up "
                 "and down the link";
  return p;
}

/// Relative error of an adjoint's image against the exact sums rho_r = sum_j d_j exp(+2 pi i k_j . r / N) in
/// float64 (ops/nufft.hpp's convention, r = index - floor(N/2)) at 64 fixed voxels of the n^3 image: what the
/// issue's accuracy figures measure, for the last host-to-host run's image.
double adjointErrorAt64Voxels(const RArray& k, const CArray& samples, const CArray& image, index_t n) {
  constexpr int kVoxels = 64;
  const index_t m = samples.size();
  std::mt19937 rng(11);
  std::uniform_int_distribution<index_t> pick(0, n * n * n - 1);
  std::vector<index_t> at(kVoxels);
  for (auto& v : at) v = pick(rng);
  std::vector<std::complex<double>> exact(kVoxels);
#pragma omp parallel for schedule(dynamic, 1)
  for (int i = 0; i < kVoxels; ++i) {
    const index_t v = at[static_cast<std::size_t>(i)];
    const double r[3] = {static_cast<double>(v % n - n / 2), static_cast<double>((v / n) % n - n / 2),
                         static_cast<double>(v / (n * n) - n / 2)};
    std::complex<double> sum = 0;
    for (index_t j = 0; j < m; ++j) {
      double cycles = 0;
      for (int d = 0; d < 3; ++d) cycles += static_cast<double>(k[3 * j + d]) / static_cast<double>(n) * r[d];
      const double turn = 2 * std::numbers::pi * (cycles - std::nearbyint(cycles));
      sum += std::complex<double>(samples[j]) * std::complex<double>(std::cos(turn), std::sin(turn));
    }
    exact[static_cast<std::size_t>(i)] = sum;
  }
  double err = 0, norm = 0;
  for (int i = 0; i < kVoxels; ++i) {
    err += std::norm(std::complex<double>(image[at[static_cast<std::size_t>(i)]]) - exact[static_cast<std::size_t>(i)]);
    norm += std::norm(exact[static_cast<std::size_t>(i)]);
  }
  return std::sqrt(err / norm);
}

/// One plan's 3D adjoint of m random samples at `k` into an n^3 image, as a workload: the samples and image
/// buffers on the device (device-resident run) and the host round trip around the same call (host to host);
/// `report` adds the image's error at 64 voxels (`rel_error_64_voxels`).
void bindAdjoint3D(Prepared& p, const Context& c, std::unique_ptr<NufftPlan> plan, const RArray& k, index_t m,
                   index_t n, unsigned seed) {
  struct State {
    std::unique_ptr<NufftPlan> plan;
    RArray k;
    CArray samples, image;
    std::unique_ptr<Buffer> d, rho;
  };
  auto s = std::make_shared<State>();
  s->plan = std::move(plan);
  s->k = k;
  s->samples = randomComplex(Shape{m}, seed);
  s->image = CArray(Shape{n, n, n});
  s->d = c.be.allocate(static_cast<std::size_t>(m) * sizeof(cfloat));
  s->rho = c.be.allocate(static_cast<std::size_t>(s->image.size()) * sizeof(cfloat));
  c.be.upload(*s->d, s->samples.data(), static_cast<std::size_t>(m) * sizeof(cfloat));
  Backend& be = c.be;
  p.device = [s] { s->plan->adjoint(*s->d, *s->rho, 1); };
  p.host = [s, &be] {
    HostRoundTrip{be, s->samples, s->image, *s->d, *s->rho}([&] { s->plan->adjoint(*s->d, *s->rho, 1); });
    return kNaN;
  };
  p.report = [s, n](nlohmann::json& e, double, double) {
    e["rel_error_64_voxels"] = adjointErrorAt64Voxels(s->k, s->samples, s->image, n);
  };
}

Prepared fhdWorkload(const Context& c) {
  // Stone et al.'s size on a GPU; on the CPU the paper data's proportions at 32^3 (16^3 quick): samples
  // scale with N^3 (readout 132 N/128 x 2156 (N/128)^2 spokes in bench_iterative's 3D radial).
  const index_t n = c.gpu ? 128 : (c.quick ? 16 : 32);
  const index_t m = c.gpu ? 284'592 : (c.quick ? 578 : 4'455);
  NufftGeometry g;
  g.dims = 3;
  g.image[0] = g.image[1] = g.image[2] = n;
  g.trajectory = uniformTrajectory(3, g.image, m, 5);
  DftOptions o;
  o.trig = TrigMode::Recurrence;
  Prepared p;
  bindAdjoint3D(p, c, c.be.makeDftPlan(g, o), g.trajectory, m, n, 6);
  p.size = cube(n) + " x " + grouped(m) + " samples, phase recurrence";
  p.scaled = scaledNote(c.gpu, c.quick, cube(n) + " x " + grouped(m), "128^3 x 284,592");
  p.reps = c.gpu ? 5 : 3;
  const double pairs = static_cast<double>(n * n * n) * static_cast<double>(m);
  p.hostBytesIn = static_cast<double>(m) * kC;
  p.hostBytesOut = static_cast<double>(n * n * n) * kC;
  p.deviceLimitMs = fmaMs(kFhdOpsPerPair * pairs, c.limits);
  p.hostLimitMs = p.deviceLimitMs + bytesMs(p.hostBytesIn + p.hostBytesOut, c.limits.linkBandwidth);
  p.limitBasis = "4 FP32 operations per voxel-sample pair (the next phasor by the three-term recurrence, 2 FMA, and a "
                 "complex accumulate, 2) at the FP32 FMA rate; host to host: plus samples up and image down the link";
  p.report = [pairs, error = p.report](nlohmann::json& e, double deviceMs, double hostMs) {
    error(e, deviceMs, hostMs);
    e["g_pairs_per_s"] = pairs / deviceMs * 1e-6;
  };
  return p;
}

/// The NUFFT floor: samples read once, the oversampled grid written by the spreading, read and written by the
/// FFT and read by the crop (4 passes), the image written once; bytes at the memory bandwidth.
double nufftAdjointBytes(double samples, double gridPoints, double imagePoints) {
  return kC * (samples + 4 * gridPoints + imagePoints);
}

/// The radial case's geometry: golden-angle, `readout` samples x `readout` spokes -> (readout / 2)^2.
NufftGeometry goldenRadial(index_t readout) {
  const auto t = traj::radial2D(readout, readout, readout / 2, traj::RadialOrder::GoldenAngle);
  NufftGeometry g;
  g.dims = 2;
  g.image[0] = g.image[1] = readout / 2;
  g.image[2] = 1;
  g.trajectory = t.k;
  g.radial = t.radial;
  return g;
}

Prepared radialWorkload(const Context& c, Spreader spreader) {
  const index_t readout = c.quick && !c.gpu ? 256 : 512, spokes = readout, matrix = readout / 2, coils = 8;
  const NufftGeometry g = goldenRadial(readout);
  NufftOptions o;  // W 4, sigma 2, table
  o.spreader = spreader;
  struct State {
    std::unique_ptr<NufftPlan> plan;
    CArray samples, image;
    std::unique_ptr<Buffer> d, rho;
  };
  auto s = std::make_shared<State>();
  s->plan = c.be.makeNufftPlan(g, o);
  const index_t m = s->plan->samples();
  s->samples = randomComplex(Shape{m, coils}, 1);
  s->image = CArray(Shape{matrix, matrix, 1, coils});
  s->d = c.be.allocate(static_cast<std::size_t>(s->samples.size()) * sizeof(cfloat));
  s->rho = c.be.allocate(static_cast<std::size_t>(s->image.size()) * sizeof(cfloat));
  c.be.upload(*s->d, s->samples.data(), static_cast<std::size_t>(s->samples.size()) * sizeof(cfloat));
  Prepared p;
  const std::string what = "golden " + std::to_string(readout) + " x " + std::to_string(spokes) + " -> " + square(matrix);
  p.size = what + ", " + std::to_string(coils) + " coils, W 4" +
           (c.gpu ? (spreader == Spreader::Sector ? ", sector spreader" : ", TRON spreader") : "");
  p.scaled = scaledNote(c.gpu, c.quick, what, "golden 512 x 512 -> 256^2");
  p.reps = c.gpu ? 20 : (c.quick ? 3 : 5);
  Backend& be = c.be;
  p.device = [s, coils] { s->plan->adjoint(*s->d, *s->rho, coils); };
  p.host = [s, &be, coils] {
    HostRoundTrip{be, s->samples, s->image, *s->d, *s->rho}([&] { s->plan->adjoint(*s->d, *s->rho, coils); });
    return kNaN;
  };
  const double grid = 4.0 * static_cast<double>(matrix * matrix) * coils, img = static_cast<double>(s->image.size());
  p.hostBytesIn = static_cast<double>(s->samples.size()) * kC;
  p.hostBytesOut = img * kC;
  p.deviceLimitMs = bytesMs(nufftAdjointBytes(static_cast<double>(s->samples.size()), grid, img), c.limits.memoryBandwidth);
  p.hostLimitMs = p.deviceLimitMs + bytesMs(p.hostBytesIn + p.hostBytesOut, c.limits.linkBandwidth);
  p.limitBasis = "samples read once, the 2x grid written, FFT-ed (read+write) and read once, the image written, at "
                 "the memory bandwidth; host to host: plus samples up and images down the link";
  p.report = [coils](nlohmann::json& e, double deviceMs, double hostMs) {
    e["device_us_per_coil_image"] = 1e3 * deviceMs / coils;
    e["host_to_host_us_per_coil_image"] = 1e3 * hostMs / coils;
  };
  return p;
}

/// The radial case over a batch of slices (the target: ≤ 60 µs per coil image host to host over 64 slices):
/// device-resident, the adjoint of every slice's coils in one call; host to host, the slices streamed through
/// the device (streamBatch: slice s + 1 uploaded while s is gridded and s - 1's coil images come down).
Prepared radialBatchWorkload(const Context& c) {
  const index_t readout = c.quick && !c.gpu ? 256 : 512, spokes = readout, matrix = readout / 2, coils = 8;
  const index_t slices = c.gpu ? 64 : (c.quick ? 2 : 4);
  const NufftGeometry g = goldenRadial(readout);
  struct State {
    std::unique_ptr<NufftPlan> plan;
    CArray samples, images;
    std::unique_ptr<Buffer> d, rho;
  };
  auto s = std::make_shared<State>();
  s->plan = c.be.makeNufftPlan(g, NufftOptions{});
  const index_t m = s->plan->samples(), perSlice = m * coils, imagePerSlice = matrix * matrix * coils;
  s->samples = randomComplex(Shape{m, coils, slices}, 2);
  s->images = CArray(Shape{matrix, matrix, 1, coils * slices});
  s->d = c.be.allocate(static_cast<std::size_t>(s->samples.size()) * sizeof(cfloat));
  s->rho = c.be.allocate(static_cast<std::size_t>(s->images.size()) * sizeof(cfloat));
  c.be.upload(*s->d, s->samples.data(), static_cast<std::size_t>(s->samples.size()) * sizeof(cfloat));
  Prepared p;
  const std::string what = "golden " + std::to_string(readout) + " x " + std::to_string(spokes) + " -> " +
                           square(matrix) + ", " + std::to_string(coils) + " coils x " + std::to_string(slices) +
                           " slices";
  p.size = what + ", W 4" + (c.gpu ? ", TRON spreader, slices streamed host to host" : "");
  p.scaled = scaledNote(c.gpu, c.quick, what, "golden 512 x 512 -> 256^2, 8 coils x 64 slices");
  p.reps = c.gpu ? 10 : 2;
  Backend& be = c.be;
  const index_t batch = coils * slices;
  p.device = [s, batch] { s->plan->adjoint(*s->d, *s->rho, batch); };
  p.host = [s, &be, slices, coils, perSlice, imagePerSlice] {
    StreamedBatch b;
    b.chunks = slices;
    b.inBytes = static_cast<std::size_t>(perSlice) * sizeof(cfloat);
    b.outBytes = static_cast<std::size_t>(imagePerSlice) * sizeof(cfloat);
    b.input = [&](index_t i) { return HostSpan{s->samples.data() + i * perSlice, b.inBytes}; };
    b.compute = [&](index_t, Buffer& in, Buffer* out) { s->plan->adjoint(in, *out, coils); };
    b.output = [&](index_t i) { return MutableHostSpan{s->images.data() + i * imagePerSlice, b.outBytes}; };
    streamBatch(be, b);
    return kNaN;
  };
  const double grid = 4.0 * static_cast<double>(matrix * matrix) * static_cast<double>(batch);
  const double img = static_cast<double>(s->images.size());
  p.hostBytesIn = static_cast<double>(s->samples.size()) * kC;
  p.hostBytesOut = img * kC;
  p.deviceLimitMs = bytesMs(nufftAdjointBytes(static_cast<double>(s->samples.size()), grid, img), c.limits.memoryBandwidth);
  // Streamed, the link's two directions and the device work side by side: the slowest of the three bounds it.
  p.hostLimitMs = std::max({p.deviceLimitMs, bytesMs(p.hostBytesIn, c.limits.linkBandwidth),
                            bytesMs(p.hostBytesOut, c.limits.linkBandwidth)});
  p.limitBasis = "device: samples read once, the 2x grids written, FFT-ed and read once, the images written, at the "
                 "memory bandwidth; host to host (streamed): the largest of that, the samples up and the images "
                 "down the link";
  p.report = [batch](nlohmann::json& e, double deviceMs, double hostMs) {
    e["device_us_per_coil_image"] = 1e3 * deviceMs / static_cast<double>(batch);
    e["host_to_host_us_per_coil_image"] = 1e3 * hostMs / static_cast<double>(batch);
  };
  return p;
}

Prepared nufft3dWorkload(const Context& c) {
  const index_t n = c.gpu ? 128 : (c.quick ? 32 : 64);
  const index_t m = c.gpu ? 2'000'000 : (c.quick ? 31'250 : 250'000);  // 2 M x (n/128)^3
  NufftGeometry g;
  g.dims = 3;
  g.image[0] = g.image[1] = g.image[2] = n;
  g.trajectory = uniformTrajectory(3, g.image, m, 3);
  Prepared p;
  bindAdjoint3D(p, c, c.be.makeNufftPlan(g, NufftOptions{}), g.trajectory, m, n, 4);
  p.size = cube(n) + ", " + grouped(m) + " uniform random samples, W 4";
  p.scaled = scaledNote(c.gpu, c.quick, cube(n) + " x " + grouped(m), "128^3 x 2,000,000");
  p.reps = c.gpu ? 20 : 3;
  const double img = static_cast<double>(n * n * n);
  p.hostBytesIn = static_cast<double>(m) * kC;
  p.hostBytesOut = img * kC;
  p.deviceLimitMs = bytesMs(nufftAdjointBytes(static_cast<double>(m), 8 * img, img), c.limits.memoryBandwidth);
  p.hostLimitMs = p.deviceLimitMs + bytesMs(p.hostBytesIn + p.hostBytesOut, c.limits.linkBandwidth);
  p.limitBasis = "samples read once, the 2x grid written, FFT-ed (read+write) and read once, the image written, at "
                 "the memory bandwidth; host to host: plus samples up and the image down the link";
  return p;
}

}  // namespace

void addTransformWorkloads(std::vector<Workload>& out) {
  out.push_back({"copy", "copy 256 MiB: device to device, and host -> device -> host", false, copyWorkload});
  out.push_back({"fft3d-128", "centred unitary FFT 3D 128^3 (vs cuFFT alone)", false,
                 [](const Context& c) { return fftWorkload(c, 128); }});
  out.push_back({"fft3d-256", "centred unitary FFT 3D 256^3 (vs cuFFT alone)", false,
                 [](const Context& c) { return fftWorkload(c, 256); }});
  out.push_back({"fhd-exact", "exact F^H d 128^3 x 284,592 (Stone et al. 2008; Kirk & Hwu ch. 14)", false,
                 fhdWorkload});
  out.push_back({"nufft2d-adjoint", "adjoint NUFFT 2D golden-angle radial 512 x 512 -> 256^2, 8 coils (TRON on CUDA)",
                 false, [](const Context& c) { return radialWorkload(c, Spreader::Auto); }});
  out.push_back({"nufft2d-adjoint-sector", "the same with the sector spreader (Gregerson)", true,
                 [](const Context& c) { return radialWorkload(c, Spreader::Sector); }});
  out.push_back({"nufft2d-adjoint-batch64",
                 "the radial case over 64 slices: device-resident, and streamed host to host (overlapped transfers)",
                 false, radialBatchWorkload});
  out.push_back({"nufft3d-adjoint", "adjoint NUFFT 3D 128^3, 2 M uniform random samples", false, nufft3dWorkload});
}

}  // namespace larmor::recon::bench
