// The reconstruction workloads of `larmor-cli bench --suite seeds` (docs/benchmarks.md):
//  - grappa-slice / grappa-batch32: Schneider 2008's Table 5.1 configuration (512 columns x 256 lines, 32
//    coils, R 4, 24 ACS lines, basic calibration Nb 4, Δs 128, χ 1e-4, η 1; docs/grappa.md,
//    tests/bench/bench_grappa.cpp), random k-space on the acquired lines as the thesis's standalone test; one
//    slice and a 32-slice batch. Device-resident: everything process() does with the k-space uploaded;
//  - iterative-128: Stone et al. 2008's advanced reconstruction, 128^3 from 284,592 3D radial samples
//    (132 x 2156), anatomical prior, the paper's exact F^H d (phase recurrence; the CLI's
//    default is a NUFFT) + 60 PCG iterations, the whole call (upload, W, F^H d, PCG, download); Q is made
//    once beforehand as in the paper;
//  - sense-cg: Cartesian SENSE, 256^2 x 8 coils, R 2, 30 CG iterations, ESPIRiT maps, a whole recon::run;
//  - dynamic-ttv: a series' 20 frames jointly (recon/dynamic.hpp), temporal TV, 128^2 x 8 coils x 21 spokes a frame;
//  - dynamic-live: the same series kept (recon/live_series.hpp) and solved again at a new temporal lambda, as the
//    workstation's slider does: the whole chunked solve, and the slider-to-pixels time (the first chunk's frames
//    on the host) in its extra figures;
//  - cs-tv / cs-wavelet: compressed sensing, golden-angle radial 256^2 x 8 coils, 101 spokes, 100 FISTA
//    iterations, a whole recon::run;
//  - cg-slices64: CG-SENSE, golden-angle radial 128^2 x 8 coils x 64 slices, 96 spokes, 30 iterations, a whole
//    recon::run with the slices spread over every visible GPU (the batched slices);
//  - espirit: ESPIRiT maps of a 256^2 x 8-coil slice (calibration 24^2, kernel 6), the whole call;
//  - cartesian: FFT recon 256^2 (readout 2x oversampled) x 32 coils x 64 slices, host k-space in, image out.
// Data are simulated phantoms (recon workloads) or random (GRAPPA, as the thesis), never zeros. Floors are
// memory-traffic floors of the dominant passes (the FMA floor of F^H d for iterative-128), named per workload.
#include <algorithm>
#include <memory>
#include <random>
#include <string>

#include "bench_internal.hpp"
#include "larmor/phantom/dynamic.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/coil_maps.hpp"
#include "larmor/recon/grappa.hpp"
#include "larmor/recon/iterative.hpp"
#include "larmor/recon/live_series.hpp"
#include "larmor/recon/recon.hpp"
#include "larmor/recon/settings.hpp"
#include "larmor/bench/bench.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/traj/cartesian.hpp"

namespace larmor::recon {

Dataset grappaTable51(int coils, index_t slices, int accel) {
  Dataset d;
  d.source = "bench";
  auto& h = d.header;
  h.encoded[0] = 512, h.encoded[1] = 256, h.encoded[2] = 1;
  h.recon[0] = 256, h.recon[1] = 256, h.recon[2] = 1;
  h.encodedFovMm[0] = 512, h.encodedFovMm[1] = 256, h.encodedFovMm[2] = 5;
  h.reconFovMm[0] = 256, h.reconFovMm[1] = 256, h.reconFovMm[2] = 5;
  h.coils = coils;
  h.slices = slices;
  h.accelerationPe1 = accel;
  h.calibrationLines = 24;
  Array<std::uint8_t> cal;
  const auto mask = traj::cartesianMask(256, 1, accel, 1, 24, 1, &cal);
  d.sampled = Array<std::uint8_t>(Shape{256, 1, slices});
  d.calibration = Array<std::uint8_t>(Shape{256, 1, slices});
  for (index_t s = 0; s < slices; ++s)
    for (index_t y = 0; y < 256; ++y) {
      d.sampled(y, 0, s) = mask[y];
      d.calibration(y, 0, s) = cal[y];
    }
  d.kspace = CArray(Shape{512, 256, 1, coils, slices}, cfloat(0));
  std::vector<cfloat> tile(1 << 20);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (auto& v : tile) v = {nd(rng), nd(rng)};
  std::size_t t = 0;
  for (index_t s = 0; s < slices; ++s)
    for (index_t c = 0; c < coils; ++c)
      for (index_t y = 0; y < 256; ++y) {
        if (!mask[y]) continue;
        cfloat* row = &d.kspace(0, y, 0, c, s);
        for (index_t x = 0; x < 512; ++x) row[x] = tile[t++ & (tile.size() - 1)];
      }
  return d;
}

}  // namespace larmor::recon

namespace larmor::recon::bench {

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kC = sizeof(cfloat);

double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// --- GRAPPA --------------------------------------------------------------------------------------------------


Prepared grappaWorkload(const Context& c, index_t fullBatch) {
  const int fullCoils = 32, coils = c.quick && !c.gpu ? 8 : fullCoils;
  const index_t batch = fullBatch == 1 ? 1 : (c.gpu ? fullBatch : (c.quick ? 2 : 4));
  struct State {
    Dataset d;
    std::unique_ptr<grappa::Pipeline> pipeline;
    ImageSet out;
  };
  auto s = std::make_shared<State>();
  s->d = grappaTable51(coils, batch);
  ReconSettings rs;
  rs.method = Method::Grappa;
  rs.keepCoilImages = false;
  rs.grappa.calibration = GrappaCalibration::Basic;
  rs.grappa.blocks = 4;
  rs.grappa.segment = 128;
  rs.grappa.chi = 1e-4;
  rs.grappa.eta = 1.0;
  s->pipeline = std::make_unique<grappa::Pipeline>(c.be, s->d, rs, batch);
  require(s->pipeline->slicesPerBatch() == batch, "grappa: a batch of " + std::to_string(batch) +
                                                      " slices does not fit the device's memory");
  s->out = s->pipeline->allocateOutput();
  Prepared p;
  const std::string what = std::to_string(coils) + " coils" + (batch > 1 ? ", " + std::to_string(batch) + " slices" : "");
  p.size = "Table 5.1: 512 x 256, " + what + ", R 4, 24 ACS, basic Nb 4, Δs 128";
  p.scaled = scaledNote(c.gpu, c.quick, what,
                        std::to_string(fullCoils) + " coils" + (fullBatch > 1 ? ", " + std::to_string(fullBatch) + " slices" : ""));
  p.reps = c.gpu ? 10 : 3;
  // process() works in place on the uploaded k-space: each device-resident run gets a fresh upload first.
  p.beforeDevice = [s, batch] { s->pipeline->upload(s->d, 0, batch); };
  p.device = [s, batch] { s->pipeline->process(s->d, 0, batch); };
  p.host = [s, batch] {
    s->pipeline->upload(s->d, 0, batch);
    s->pipeline->process(s->d, 0, batch);
    s->pipeline->download(s->out, 0, batch);
    return kNaN;
  };
  const double raw = static_cast<double>(s->d.kspace.size()) * kC;
  p.hostBytesIn = raw;
  p.hostBytesOut = 256.0 * 256 * static_cast<double>(batch) * kC;
  p.deviceLimitMs = bytesMs(8 * raw, c.limits.memoryBandwidth);
  p.hostLimitMs = p.deviceLimitMs + bytesMs(p.hostBytesIn + p.hostBytesOut, c.limits.linkBandwidth);
  p.limitBasis = "memory floor only: the k-space read and written by the hybrid FFT, the fill and the inverse FFT, "
                 "read by the crop (8 passes; the calibration's solve not counted); host to host: plus k-space up and "
                 "images down the link";
  p.report = [batch](nlohmann::json& e, double deviceMs, double hostMs) {
    e["device_slices_per_s"] = 1e3 * static_cast<double>(batch) / deviceMs;
    e["host_to_host_slices_per_s"] = 1e3 * static_cast<double>(batch) / hostMs;
  };
  return p;
}

// --- iterative (Stone et al. 2008) ------------------------------------------------------------------------------

Prepared iterativeWorkload(const Context& c) {
  const index_t n = c.gpu ? 128 : (c.quick ? 16 : 32);
  struct State {
    Dataset d;
    ReconSettings s;
    std::shared_ptr<IterativeProblem::TrajectoryOperators> shared;
    Timings last;  ///< the last whole call's stages (report: where its time went)
  };
  auto st = std::make_shared<State>();
  phantom::SimulateSettings sim;
  sim.matrix[0] = sim.matrix[1] = sim.matrix[2] = n;
  sim.coils = 1;
  sim.trajectory = TrajectoryKind::Radial3D;
  sim.readout = std::llround(132.0 * n / 128.0);
  sim.spokes = std::llround(2156.0 * (n / 128.0) * (n / 128.0));
  sim.noiseSigma = 0.1f;
  st->d = phantom::simulate(sim);
  settings::set(st->s, settings::find("nufft.trig"), "recurrence");
  settings::set(st->s, settings::find("iterative.fhd"), "dft");  // the paper's exact F^H d (Q by it too)
  st->s.method = Method::Cg;
  st->s.iterative.regularizer = ops::RegularizerKind::Anatomical;
  st->s.iterative.lambda = 10;
  st->s.iterative.iterations = 60;
  st->s.iterative.cacheDirectory = "none";
  {  // Q once, outside the timing (the paper: Q depends on the trajectory only)
    Timings t;
    IterativeProblem first(c.be, st->d, st->s, 0, t);
    st->shared = first.trajectoryOperators();
  }
  const index_t m = st->d.trajectory.size() / 3;
  Backend& be = c.be;
  Prepared p;
  p.size = cube(n) + " from " + grouped(m) + " 3D radial samples, anatomical prior, F^H d + 60 PCG, whole call";
  p.scaled = scaledNote(c.gpu, c.quick, cube(n) + " x " + grouped(m), "128^3 x 284,592");
  p.reps = c.gpu ? 5 : 3;
  p.host = [st, &be] {
    Timings t;
    IterativeProblem prob(be, st->d, st->s, 0, t, {}, st->shared);  // upload, F^H d, W
    {
      ScopedStage sc(t, "CG", &be);
      prob.solve(st->s.iterative.lambda, 60, 0, false);
    }
    {
      ScopedStage sd(t, "download", &be);
      const CArray img = prob.combined();
      (void)img;
    }
    st->last = t;
    return deviceStageMs(t);
  };
  p.report = [st](nlohmann::json& extra, double, double) {
    extra["last_call_stages_ms"] = stageSums(st->last);
  };
  const double voxels = static_cast<double>(n * n * n);
  p.hostBytesIn = static_cast<double>(m) * kC;
  p.hostBytesOut = voxels * kC;
  p.deviceLimitMs = fmaMs(kFhdOpsPerPair * voxels * static_cast<double>(m), c.limits) +
                    60 * bytesMs(2 * fftBytes(8 * voxels), c.limits.memoryBandwidth);
  p.hostLimitMs = p.deviceLimitMs + bytesMs(p.hostBytesIn + p.hostBytesOut, c.limits.linkBandwidth);
  p.limitBasis = "the exact F^H d's floor (4 FP32 operations per voxel-sample pair) plus 60 Toeplitz applications, each "
                 "2 FFTs of the (2N)^3 grid read and written once; host to host: plus samples up and the image down the link";
  return p;

}

// --- whole recon::run calls (SENSE, CS) -------------------------------------------------------------------------

/// seen (optional): each run's result, after its timing.
Prepared wholeRun(const Context& c, const phantom::SimulateSettings& sim, const std::function<void(ReconSettings&)>& configure,
                  double deviceLimitMs, double bytesIn, double bytesOut, const std::string& basis,
                  const std::function<void(const ReconResult&)>& seen = {}) {
  struct State {
    Dataset d;
    ReconRequest req;
  };
  auto st = std::make_shared<State>();
  st->d = phantom::simulate(sim);
  st->req.dataset = &st->d;
  // The request holds the backend: a non-owning shared_ptr to the suite's backend (it outlives the workload).
  st->req.backend = std::shared_ptr<Backend>(&c.be, [](Backend*) {});
  configure(st->req.settings);
  st->req.settings.keepCoilImages = false;
  st->req.settings.iterative.cacheDirectory = "none";
  Prepared p;
  p.reps = c.gpu ? 10 : (c.quick ? 2 : 3);
  p.host = [st, seen] {
    const auto t0 = Clock::now();
    const ReconResult r = run(st->req);
    const double wall = msSince(t0);
    if (seen) seen(r);
    // The wall time less what the stages say crossed the link (upload/download stages).
    return wall - (r.timings.totalMilliseconds() - deviceStageMs(r.timings));
  };
  p.hostBytesIn = bytesIn;
  p.hostBytesOut = bytesOut;
  p.deviceLimitMs = deviceLimitMs;
  p.hostLimitMs = deviceLimitMs + bytesMs(bytesIn + bytesOut, c.limits.linkBandwidth);
  p.limitBasis = basis;
  return p;
}

Prepared senseWorkload(const Context& c) {
  const index_t n = c.quick && !c.gpu ? 128 : 256, coils = 8;
  phantom::SimulateSettings sim;
  sim.coils = static_cast<int>(coils);
  sim.noiseSigma = 0.002f;
  sim.matrix[0] = sim.matrix[1] = n;
  sim.accel = 2;
  const double grid = 2.0 * static_cast<double>(n * n);  // readout 2x oversampled: the solve grid
  // One E^H E per iteration, per coil: map multiply (3 image passes), FFT (2), mask (2), inverse FFT (2),
  // conjugate map multiply and accumulate (4): 13 passes of the grid.
  const double limit = 30 * bytesMs(13 * static_cast<double>(coils) * grid * kC, c.limits.memoryBandwidth);
  Prepared p = wholeRun(
      c, sim,
      [](ReconSettings& s) {
        s.method = Method::Cg;
        settings::applyMethodDefaults(s);
        s.iterative.iterations = 30;
      },
      limit, grid * static_cast<double>(coils) * kC, static_cast<double>(n * n) * kC,
      "30 iterations x 13 passes of the 2x readout grid per coil (maps, FFTs, mask) at the memory bandwidth; ESPIRiT "
      "and set-up not counted; host to host: plus k-space up and the image down the link");
  p.size = square(n) + " x 8 coils, R 2, 30 CG iterations, ESPIRiT maps, whole recon::run";
  p.scaled = scaledNote(c.gpu, c.quick, square(n), "256^2");
  return p;
}

Prepared csWorkload(const Context& c, ops::RegularizerKind prior) {
  const index_t n = c.gpu ? 256 : (c.quick ? 64 : 128), coils = 8;
  const index_t spokes = c.gpu ? 101 : (c.quick ? 26 : 51);
  phantom::SimulateSettings sim;
  sim.coils = static_cast<int>(coils);
  sim.noiseSigma = 0.002f;
  sim.matrix[0] = sim.matrix[1] = n;
  sim.trajectory = TrajectoryKind::GoldenAngle;
  sim.spokes = spokes;
  // Per FISTA iteration: the normal operator, one Toeplitz FFT pair on the 2N grid per coil.
  const double grid = 4.0 * static_cast<double>(n * n);
  const double limit = 100 * bytesMs(2 * fftBytes(grid) * static_cast<double>(coils), c.limits.memoryBandwidth);
  const double samples = 2.0 * static_cast<double>(n) * static_cast<double>(spokes) * static_cast<double>(coils);
  Prepared p = wholeRun(
      c, sim,
      [prior](ReconSettings& s) {
        s.method = Method::Cs;
        settings::applyMethodDefaults(s);
        s.iterative.regularizer = prior;
        s.iterative.lambdaRule = LambdaRule::Fixed;  // the solve at the given lambda (no cross-validation first)
        s.iterative.iterations = 100;
        s.iterative.tolerance = 0;  // all 100 iterations
      },
      limit, samples * kC, static_cast<double>(n * n) * kC,
      "100 iterations x one Toeplitz FFT pair on the 2N grid per coil, read and written once, at the memory "
      "bandwidth; the prior, ESPIRiT and set-up not counted; host to host: plus samples up and the image down");
  p.size = square(n) + " x 8 coils, golden-angle radial, " + std::to_string(spokes) + " spokes, 100 FISTA iterations, " +
           (prior == ops::RegularizerKind::Tv ? "TV" : "wavelet") + ", whole recon::run";
  p.scaled = scaledNote(c.gpu, c.quick, square(n) + ", " + std::to_string(spokes) + " spokes", "256^2, 101 spokes");
  return p;
}

// The joint reconstruction of a series (recon/dynamic.hpp): the case, 128^2 x 8 coils x 20 frames of 21
// golden-angle spokes, 100 FISTA iterations of temporal TV, the whole recon::runFrames (plans, Q and F^H d per frame,
// the coil maps of all frames, the step bound, FISTA, the downloads).
/// The dynamic workloads' series and request: 128^2 (CPU 64^2) x 8 coils x 20 (CPU 8) frames of 21 golden-angle spokes,
/// 1 % noise; cs with temporal TV, 100 iterations, no tolerance.
struct DynamicCase {
  index_t n = 0, coils = 8, frames = 0, spokes = 21;
  std::vector<Dataset> series;
  ReconRequest req;
};

DynamicCase dynamicCase(const Context& c) {
  DynamicCase d;
  d.n = c.gpu ? 128 : 64;
  d.frames = c.gpu ? 20 : 8;
  phantom::SimulateSettings sim;
  sim.coils = static_cast<int>(d.coils);
  sim.noiseSigma = 0.01f;
  sim.matrix[0] = sim.matrix[1] = d.n;
  sim.trajectory = TrajectoryKind::GoldenAngle;
  sim.frames = d.frames;
  sim.spokesPerFrame = d.spokes;
  d.series = phantom::simulateSeries(sim);
  d.req.backend = std::shared_ptr<Backend>(&c.be, [](Backend*) {});
  d.req.settings.method = Method::Cs;
  settings::applyMethodDefaults(d.req.settings);
  d.req.settings.dynamic.prior = TemporalPrior::TemporalTv;
  d.req.settings.iterative.iterations = 100;
  d.req.settings.iterative.tolerance = 0;
  d.req.settings.keepCoilImages = false;
  d.req.settings.iterative.cacheDirectory = "none";
  return d;
}

Prepared dynamicWorkload(const Context& c) {
  auto st = std::make_shared<DynamicCase>(dynamicCase(c));
  const index_t n = st->n, coils = st->coils, frames = st->frames, spokes = st->spokes;
  Prepared p;
  p.reps = c.gpu ? 10 : 2;
  p.host = [st] {
    const auto t0 = Clock::now();
    const std::vector<ReconResult> r = runFrames(st->series, st->req);
    const double wall = msSince(t0);
    return wall - (r.front().timings.totalMilliseconds() - deviceStageMs(r.front().timings));
  };
  const double grid = 4.0 * static_cast<double>(n * n);
  const double samples = 2.0 * static_cast<double>(n * spokes * coils * frames);
  p.hostBytesIn = samples * kC;
  p.hostBytesOut = static_cast<double>(n * n * frames) * kC;
  p.deviceLimitMs = 100 * static_cast<double>(frames) *
                    bytesMs(2 * fftBytes(grid) * static_cast<double>(coils), c.limits.memoryBandwidth);
  p.hostLimitMs = p.deviceLimitMs + bytesMs(p.hostBytesIn + p.hostBytesOut, c.limits.linkBandwidth);
  p.limitBasis = "100 iterations x every frame's Toeplitz FFT pair on the 2N grid per coil at the memory bandwidth; "
                 "set-up, maps and prior not counted; host to host: plus samples up and the frames down";
  p.size = square(n) + " x 8 coils x " + std::to_string(frames) + " frames x 21 golden-angle spokes, temporal TV, "
           "100 FISTA iterations, whole recon::runFrames";
  p.scaled = scaledNote(c.gpu, c.quick, square(n) + " x " + std::to_string(frames) + " frames", "128^2 x 20 frames");
  return p;
}

// The workstation's live temporal lambda on dynamicWorkload's series: LiveSeries made and solved once before the
// timed runs; each run moves lambda_t (between two values half a decade apart) and solves from the last series in
// published chunks of 2, 4, 8, ... iterations (100 in all). host(): the whole chunked solve; extra: the median time
// from the move to the first chunk's frames on the host (what the slider's picture waits for, before Qt draws it).
Prepared dynamicLiveWorkload(const Context& c) {
  const DynamicCase d = dynamicCase(c);
  const index_t n = d.n, coils = d.coils, frames = d.frames;
  struct State {
    std::unique_ptr<LiveSeries> live;
    double lambda = 0;
    int moves = 0;
    std::vector<double> firstMs;
  };
  auto st = std::make_shared<State>();
  st->live = std::make_unique<LiveSeries>(d.series, d.req);
  st->lambda = d.req.settings.dynamic.temporalLambda;
  st->live->solve(st->lambda);
  Prepared p;
  p.reps = c.gpu ? 10 : 2;
  p.host = [st] {
    const double lambda = st->lambda * (st->moves++ % 2 == 0 ? 3.16227766 : 1.0);
    const auto t0 = Clock::now();
    bool first = true;
    st->live->solve(lambda, [&](const std::vector<CArray>&, int, int) {
      if (first) st->firstMs.push_back(msSince(t0));
      first = false;
    });
    return kNaN;
  };
  p.report = [st](nlohmann::json& extra, double, double) {
    std::vector<double> v = st->firstMs;
    if (v.empty()) return;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    extra["slider_to_host_ms"] = v[v.size() / 2];
    extra["setup_ms_kept"] = st->live->setupMilliseconds();
  };
  p.hostBytesOut = static_cast<double>(n * n * frames) * kC;
  p.deviceLimitMs = 100 * static_cast<double>(frames) *
                    bytesMs(2 * fftBytes(4.0 * static_cast<double>(n * n)) * static_cast<double>(coils),
                            c.limits.memoryBandwidth);
  p.hostLimitMs = p.deviceLimitMs + 6 * bytesMs(p.hostBytesOut, c.limits.linkBandwidth);
  p.limitBasis = "100 iterations x every frame's Toeplitz FFT pair on the 2N grid per coil at the memory bandwidth; "
                 "plus the frames down after each of the 6 chunks";
  p.size = square(n) + " x 8 coils x " + std::to_string(frames) + " frames x 21 golden-angle spokes, temporal TV, "
           "a new lambda_t: 100 FISTA iterations in 6 published chunks from the last series";
  p.scaled = scaledNote(c.gpu, c.quick, square(n) + " x " + std::to_string(frames) + " frames", "128^2 x 20 frames");
  return p;
}

Prepared cgSlicesWorkload(const Context& c) {
  // The batched slices: many independent slices of one call, spread over every visible GPU
  // (recon::reconstructIterativeOn; one GPU: CUDA_VISIBLE_DEVICES=0). The limit is one device's.
  const index_t n = c.gpu ? 128 : (c.quick ? 64 : 128), coils = 8;
  const index_t slices = c.gpu ? 64 : (c.quick ? 4 : 8), spokes = c.gpu ? 96 : (c.quick ? 48 : 96);
  phantom::SimulateSettings sim;
  sim.coils = static_cast<int>(coils);
  sim.noiseSigma = 0.002f;
  sim.matrix[0] = sim.matrix[1] = n;
  sim.slices = slices;
  sim.trajectory = TrajectoryKind::GoldenAngle;
  sim.spokes = spokes;
  const double grid = 4.0 * static_cast<double>(n * n);
  const double limit = static_cast<double>(slices) * 30 *
                       bytesMs(2 * fftBytes(grid) * static_cast<double>(coils), c.limits.memoryBandwidth);
  const double samples = 2.0 * static_cast<double>(n * spokes * coils * slices);
  auto devices = std::make_shared<int>(1);  // how many the last call used
  auto stages = std::make_shared<nlohmann::json>();  // the last call's per-device stages (several devices)
  auto call = std::make_shared<nlohmann::json>();    // the last call's own stages (the devices' block as one)
  auto groups = std::make_shared<nlohmann::json>();  // the last call's ESPIRiT groups: where each one's time went
  Prepared p = wholeRun(
      c, sim,
      [](ReconSettings& s) {
        s.method = Method::Cg;
        settings::applyMethodDefaults(s);
        s.iterative.iterations = 30;
      },
      limit, samples * kC, static_cast<double>(n * n * slices) * kC,
      "per slice 30 iterations x one Toeplitz FFT pair on the 2N grid per coil at one device's memory bandwidth; "
      "ESPIRiT and set-up not counted; host to host: plus samples up and the images down the link",
      [devices, stages, call, groups](const ReconResult& r) {
        *groups = nlohmann::json::array();
        if (r.convergence.contains("slices"))
          for (const auto& sl : r.convergence["slices"])
            if (sl.contains("espirit_group_ms") && (groups->empty() || groups->back()["ms"] != sl["espirit_group_ms"]))
              groups->push_back({{"device", sl.value("device", "")}, {"slices", sl["espirit_group"]}, {"ms", sl["espirit_group_ms"]}});
        *devices = r.convergence.contains("devices") ? static_cast<int>(r.convergence["devices"].size()) : 1;
        *call = stageSums(r.timings);
        *stages = *call;  // one device: the call's own
        if (r.convergence.contains("devices")) {
          *stages = nlohmann::json::object();
          for (const auto& d : r.convergence["devices"]) {
            (*stages)[d["device"].get<std::string>()] = d["stages_ms"];
            (*stages)[d["device"].get<std::string>()]["(thread start, end)"] = d["thread_ms"];
          }
        }
      });
  p.report = [devices, stages, call, groups](nlohmann::json& extra, double, double) {
    extra["espirit_groups"] = *groups;
    extra["devices"] = *devices;
    extra["stages_ms"] = *stages;  // the last repetition's: each device's stages, or the call's on one device
    extra["call_stages_ms"] = *call;
  };
  p.size = square(n) + " x 8 coils x " + std::to_string(slices) + " slices, golden-angle radial, " +
           std::to_string(spokes) + " spokes, CG-SENSE 30 iterations, ESPIRiT maps, whole recon::run" +
           (c.gpu ? ", the slices over every visible GPU" : "");
  p.scaled = scaledNote(c.gpu, c.quick, square(n) + " x " + std::to_string(slices) + " slices", "128^2 x 64 slices");
  return p;
}

Prepared espiritWorkload(const Context& c) {
  const index_t n = c.quick && !c.gpu ? 128 : 256, coils = 8;
  struct State {
    Dataset d;
    ReconSettings s;
  };
  auto st = std::make_shared<State>();
  phantom::SimulateSettings sim;
  sim.matrix[0] = sim.matrix[1] = n;
  sim.coils = static_cast<int>(coils);
  sim.readoutOversampling = 1;
  sim.noiseSigma = 0.002f;
  st->d = phantom::simulate(sim);
  st->s.method = Method::Cg;
  st->s.iterative.coilMaps = CoilMapSource::Espirit;
  Backend& be = c.be;
  Prepared p;
  p.size = square(n) + " x 8 coils, calibration 24^2, kernel 6, whole call (host k-space in, maps out)";
  p.scaled = scaledNote(c.gpu, c.quick, square(n), "256^2");
  p.reps = c.gpu ? 10 : 3;
  p.host = [st, &be, n] {
    const index_t out[3] = {n, n, 1};
    const CArray maps = coilMapsForSlice(be, st->d, 0, out, st->s);
    (void)maps;
    return kNaN;
  };
  const double pixels = static_cast<double>(n * n), cc = static_cast<double>(coils);
  p.hostBytesIn = 24.0 * 24 * cc * kC;
  p.hostBytesOut = pixels * cc * kC;
  p.deviceLimitMs = bytesMs(pixels * (cc * cc + cc) * kC, c.limits.memoryBandwidth);
  p.hostLimitMs = p.deviceLimitMs + bytesMs(p.hostBytesIn + p.hostBytesOut, c.limits.linkBandwidth);
  p.limitBasis = "the per-pixel coils x coils matrices read once and the maps written once at the memory bandwidth; "
                 "host to host: plus the calibration box up and the maps down the link";
  return p;
}

Prepared cartesianWorkload(const Context& c) {
  const index_t coils = 32, fullSlices = 64, slices = c.gpu ? fullSlices : (c.quick ? 1 : 8);
  struct State {
    Dataset d;
    ReconSettings s;
  };
  auto st = std::make_shared<State>();
  Dataset& d = st->d;
  d.source = "bench";
  d.header.encoded[0] = 512, d.header.encoded[1] = 256, d.header.encoded[2] = 1;
  d.header.recon[0] = 256, d.header.recon[1] = 256, d.header.recon[2] = 1;
  d.header.encodedFovMm[0] = 512, d.header.reconFovMm[0] = 256;
  d.header.coils = coils, d.header.slices = slices;
  d.kspace = randomComplex(Shape{512, 256, 1, coils, slices}, 3);
  d.sampled = Array<std::uint8_t>(Shape{256, 1, slices}, 1);
  d.calibration = Array<std::uint8_t>(Shape{256, 1, slices}, 0);
  st->s.keepCoilImages = false;  // what the CLI does: only the combined image comes back to the host
  Backend& be = c.be;
  Prepared p;
  const auto slicesText = [](index_t n) { return std::to_string(n) + (n == 1 ? " slice" : " slices"); };
  p.size = "256^2 (readout 2x oversampled) x 32 coils x " + slicesText(slices) + ", FFT + SoS, whole call";
  p.scaled = scaledNote(c.gpu, c.quick, slicesText(slices), slicesText(fullSlices));
  p.reps = c.gpu ? 5 : 3;
  // Device-resident: reconstructCartesian's device steps (kspaceToImages, combineCoils; these data need no
  // partial Fourier and no resampling) on k-space uploaded beforehand; the transform works in place, so each
  // run gets a fresh upload. (On a GPU the whole call streams its slices, upload and transforms overlapped:
  // its stage timings cannot separate them, so this is the device figure.)
  struct Device {
    CDeviceArray kspace, images, combined;
  };
  auto dv = std::make_shared<Device>();
  const CartesianGeometry g = cartesianGeometry(d, st->s);
  dv->kspace = CDeviceArray(be, d.kspace.shape());
  dv->images = CDeviceArray(be, Shape{g.fov[0], g.fov[1], g.fov[2], 1, coils * slices});
  dv->combined = CDeviceArray(be, Shape{g.out[0], g.out[1], g.out[2], 1, slices});
  p.beforeDevice = [st, dv, &be] {
    be.upload(dv->kspace.buffer(), st->d.kspace.data(), static_cast<std::size_t>(st->d.kspace.size()) * sizeof(cfloat));
  };
  p.device = [st, dv, &be, g, coils, slices] {
    PartialFourierReport none;
    kspaceToImages(be, dv->kspace.buffer(), dv->images.buffer(), st->d.header, g, coils * slices,
                   st->s.partialFourier, none);
    combineCoils(be, dv->images, dv->combined, g.out[0] * g.out[1] * g.out[2], coils, slices, st->s.combine);
  };
  p.host = [st, &be] {
    Timings t;
    const ImageSet out = reconstructCartesian(be, st->d, st->s, t, {});
    (void)out;
    return kNaN;
  };
  const double raw = static_cast<double>(d.kspace.size()) * kC;
  p.hostBytesIn = raw;
  p.hostBytesOut = 256.0 * 256 * static_cast<double>(slices) * kC;
  p.deviceLimitMs = bytesMs(4 * raw, c.limits.memoryBandwidth);
  p.hostLimitMs = p.deviceLimitMs + bytesMs(p.hostBytesIn + p.hostBytesOut, c.limits.linkBandwidth);
  p.limitBasis = "k-space read and written by the inverse FFT, read by the crop, half of it written and read by the "
                 "combine (4 passes) at the memory bandwidth; host to host: plus k-space up and images down the link";
  return p;
}

}  // namespace

void addReconWorkloads(std::vector<Workload>& out) {
  out.push_back({"grappa-slice", "GRAPPA Table 5.1 (Schneider 2008), one slice: calibration, fill, IFFT, combine", false,
                 [](const Context& c) { return grappaWorkload(c, 1); }});
  out.push_back({"grappa-batch32", "GRAPPA Table 5.1, a batch of 32 slices", false,
                 [](const Context& c) { return grappaWorkload(c, 32); }});
  out.push_back({"iterative-128", "iterative 128^3 (Stone et al. 2008): F^H d + 60 PCG, anatomical prior, whole call",
                 false, iterativeWorkload});
  out.push_back({"sense-cg", "CG-SENSE Cartesian 256^2 x 8 coils, R 2, 30 iterations", false, senseWorkload});
  out.push_back({"cs-tv", "compressed sensing, TV, FISTA 100 iterations, radial 256^2 x 8 coils", false,
                 [](const Context& c) { return csWorkload(c, ops::RegularizerKind::Tv); }});
  out.push_back({"cs-wavelet", "compressed sensing, wavelet, FISTA 100 iterations, radial 256^2 x 8 coils", false,
                 [](const Context& c) { return csWorkload(c, ops::RegularizerKind::Wavelet); }});
  out.push_back({"dynamic-ttv", "dynamic imaging: 20 frames jointly, temporal TV, FISTA 100 iterations, radial 128^2 x 8 coils",
                 false, dynamicWorkload});
  out.push_back({"dynamic-live", "dynamic imaging: a new temporal lambda on the kept series (the live slider), 128^2 x 8 coils",
                 false, dynamicLiveWorkload});
  out.push_back({"cg-slices64", "CG-SENSE radial 128^2 x 8 coils x 64 slices, the slices over every GPU", false,
                 cgSlicesWorkload});
  out.push_back({"espirit", "ESPIRiT coil maps 256^2 x 8 coils", false, espiritWorkload});
  out.push_back({"cartesian", "Cartesian FFT recon 256^2 x 32 coils x 64 slices, host in / out", false,
                 cartesianWorkload});
}

}  // namespace larmor::recon::bench
