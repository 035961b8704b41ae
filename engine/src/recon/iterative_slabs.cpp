// Stone et al.'s GPU.Multi (2008, sec. 5.7: "the voxels are divided into four distinct subsets, with one
// of four Quadros computing F^H d for each subset"), through the plan interface: a slab of voxels is an
// image of its own, so each device runs an ordinary (smaller) plan.
//
// Along the split axis (z in 3D, y in 2D) voxel n of N sits at (n - c)/N, c = floor(N/2). A slab of Ns
// planes starting at z0 has local index n' = n - z0 and, as an image of Ns planes, local position
// (n' - cs)/Ns, cs = floor(Ns/2). For a sample at k (that coordinate):
//   k (n - c)/N = (k Ns/N) (n' - cs)/Ns + k (z0 - c + cs)/N,
// so the slab plan with that coordinate scaled by Ns/N (still within its own band |k'| <= Ns/2) and the
// samples multiplied by exp(+2 pi i k (z0 - c + cs)/N) returns exactly the full adjoint on the slab's
// planes. The other coordinates are unchanged. Work per device is O(M N / devices): the exact DFT's cost.
// The phases live on each slab's device (the samples go up as they are and are modulated there); in 3D the
// slabs' planes can go straight into an image on one device (peer copies between GPUs, ExecutionOps::copyFromPeer),
// with no stop on the host.
#include <cmath>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "larmor/recon/iterative.hpp"
#include "larmor/util/cancel_scope.hpp"

namespace larmor::recon {

struct SlabAdjoint::Slab {
  Backend* backend = nullptr;
  index_t z0 = 0, ns = 0;
  std::unique_ptr<NufftPlan> plan;
  std::unique_ptr<Buffer> phase;  ///< exp(+2 pi i k_z (z0 - c + cs) / N) per sample, on the slab's device
};

SlabAdjoint::SlabAdjoint(const std::vector<Backend*>& backends, const NufftGeometry& g, const PlanMaker& makePlan,
                         int slabsPerBackend)
    : backends_(backends), geometry_(g) {
  require(!backends.empty(), "slab adjoint: no backend");
  require(slabsPerBackend >= 1, "slab adjoint: slabs must be >= 1");
  m_ = g.samples();
  axis_ = g.dims == 3 ? 2 : 1;
  const index_t len = g.image[axis_];
  const index_t parts = std::min<index_t>(len, static_cast<index_t>(backends.size()) * slabsPerBackend);
  for (index_t part = 0; part < parts; ++part) {
    auto slab = std::make_unique<Slab>();
    slab->backend = backends[static_cast<std::size_t>(part % static_cast<index_t>(backends.size()))];
    slab->z0 = part * len / parts;
    slab->ns = (part + 1) * len / parts - slab->z0;
    if (slab->ns > 0) slabs_.push_back(std::move(slab));
  }
  // Each device builds its slabs' plans (host work and uploads) in its own thread.
  forEachBackend([&](std::size_t b) {
    for (auto& slab : slabs_) {
      if (slab->backend != backends_[b]) continue;
      NufftGeometry gs;
      gs.dims = g.dims;
      for (int d = 0; d < 3; ++d) gs.image[d] = g.image[d];
      gs.image[axis_] = slab->ns;
      gs.trajectory = RArray(Shape{3, m_});
      const double ratio = static_cast<double>(slab->ns) / static_cast<double>(len);
      const double offset = static_cast<double>(slab->z0 - len / 2 + slab->ns / 2);
      std::vector<cfloat> phase(static_cast<std::size_t>(m_));
      for (index_t j = 0; j < m_; ++j) {
        for (int d = 0; d < 3; ++d) gs.trajectory[3 * j + d] = g.trajectory[3 * j + d];
        const double k = g.trajectory[3 * j + axis_];
        gs.trajectory[3 * j + axis_] = static_cast<float>(k * ratio);
        const double angle = 2 * M_PI * k * offset / static_cast<double>(len);
        phase[static_cast<std::size_t>(j)] = cfloat(static_cast<float>(std::cos(angle)), static_cast<float>(std::sin(angle)));
      }
      slab->phase = slab->backend->allocate(phase.size() * sizeof(cfloat));
      slab->backend->upload(*slab->phase, phase.data(), phase.size() * sizeof(cfloat));
      slab->plan = makePlan(*slab->backend, gs);
    }
  });
}

SlabAdjoint::~SlabAdjoint() = default;

void SlabAdjoint::forEachBackend(const std::function<void(std::size_t)>& work) const {
  std::vector<std::exception_ptr> errors(backends_.size());
  const Progress* caller = CancelScope::current();
  auto guarded = [&](std::size_t b) {
    try {
      const CancelScope cancel(caller);  // the caller's, in each thread
      work(b);
    } catch (...) {
      errors[b] = std::current_exception();
    }
  };
  if (backends_.size() == 1) {
    guarded(0);
  } else {
    std::vector<std::thread> threads;
    for (std::size_t b = 0; b < backends_.size(); ++b) threads.emplace_back(guarded, b);
    for (auto& t : threads) t.join();
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

std::unique_ptr<Buffer> SlabAdjoint::slabImage(const Slab& slab, const CArray& samples, index_t batch) const {
  Backend& be = *slab.backend;
  const std::size_t bytes = static_cast<std::size_t>(m_ * batch) * sizeof(cfloat);
  auto in = be.allocate(bytes);
  be.upload(*in, samples.data(), bytes);
  be.multiply(*in, *slab.phase, m_, *in, m_ * batch, false);
  auto img = be.allocate(static_cast<std::size_t>(slabVoxels(slab) * batch) * sizeof(cfloat));
  slab.plan->adjoint(*in, *img, batch);
  return img;
}

index_t SlabAdjoint::imageVoxels() const {
  const NufftGeometry& g = geometry_;
  return g.image[0] * g.image[1] * (g.dims == 3 ? g.image[2] : 1);
}

index_t SlabAdjoint::slabVoxels(const Slab& slab) const { return imageVoxels() / geometry_.image[axis_] * slab.ns; }

void SlabAdjoint::checkSamples(const CArray& samples, index_t batch) const {
  require(batch >= 1, "slab adjoint: batch must be >= 1");
  require(samples.size() == m_ * batch, "slab adjoint: " + std::to_string(samples.size()) + " samples for " +
                                            std::to_string(m_) + " x " + std::to_string(batch));
}

CArray SlabAdjoint::adjoint(const CArray& samples, index_t batch) const {
  checkSamples(samples, batch);
  const NufftGeometry& g = geometry_;
  const index_t n0 = g.image[0], n1 = g.image[1], n2 = g.dims == 3 ? g.image[2] : 1;
  const index_t len = g.image[axis_];
  const index_t plane = axis_ == 2 ? n0 * n1 : n0;  // elements of one plane/row of the split axis
  const index_t outer = axis_ == 2 ? 1 : n2;         // 2D: rows of each (unit) z plane
  const index_t voxels = imageVoxels();
  CArray out(Shape{n0, n1, n2, batch});
  forEachBackend([&](std::size_t b) {
    for (auto& slab : slabs_) {
      if (slab->backend != backends_[b]) continue;
      Backend& be = *slab->backend;
      const auto img = slabImage(*slab, samples, batch);
      const index_t slabVox = slabVoxels(*slab);
      // Straight into the output where the slab is contiguous there (3D, or one image of a 2D batch).
      if (outer == 1 && batch == 1) {
        be.download(out.data() + slab->z0 * plane, *img, static_cast<std::size_t>(slabVox) * sizeof(cfloat));
        continue;
      }
      CArray host(Shape{slabVox * batch});
      be.download(host.data(), *img, static_cast<std::size_t>(host.size()) * sizeof(cfloat));
      // The slab [n0, ns, n2] (2D) or [n0, n1, ns] (3D) into its planes of the whole image (disjoint
      // destinations: no lock needed).
      for (index_t bt = 0; bt < batch; ++bt)
        for (index_t o = 0; o < outer; ++o)
          for (index_t z = 0; z < slab->ns; ++z) {
            const cfloat* src = host.data() + bt * slabVox + (o * slab->ns + z) * plane;
            cfloat* dst = out.data() + bt * voxels + (o * len + slab->z0 + z) * plane;
            std::copy_n(src, plane, dst);
          }
    }
  });
  return out;
}

void SlabAdjoint::adjoint(const CArray& samples, index_t batch, Backend& primary, Buffer& out) const {
  checkSamples(samples, batch);
  const NufftGeometry& g = geometry_;
  const index_t voxels = imageVoxels();
  const std::size_t bytes = static_cast<std::size_t>(voxels * batch) * sizeof(cfloat);
  require(out.bytes() >= bytes, "slab adjoint: the output buffer is too small");
  if (axis_ != 2) {  // 2D slabs are rows of every image: through the host
    const CArray img = adjoint(samples, batch);
    primary.upload(out, img.data(), bytes);
    return;
  }
  const index_t plane = g.image[0] * g.image[1];
  // Two phases. First every device queues its slabs' transforms (in parallel: uploads and plan calls are host
  // work). Only then are the copies into `out` queued: a copy from another device runs on the primary's queue
  // after an event of the other's, so queued while the primary's own slab was not yet queued, it would hold that
  // slab back until the other device had finished (the primary then took twice as long).
  std::vector<std::unique_ptr<Buffer>> images(slabs_.size());
  forEachBackend([&](std::size_t b) {
    for (std::size_t i = 0; i < slabs_.size(); ++i)
      if (slabs_[i]->backend == backends_[b]) images[i] = slabImage(*slabs_[i], samples, batch);
  });
  for (std::size_t i = 0; i < slabs_.size(); ++i) {
    const Slab& slab = *slabs_[i];
    Backend& be = *slab.backend;
    const auto part = static_cast<std::size_t>(slabVoxels(slab)) * sizeof(cfloat);
    for (index_t bt = 0; bt < batch; ++bt) {
      // The slab's planes of image bt: [n0, n1, ns] at plane z0 there.
      const std::size_t to = static_cast<std::size_t>(bt * voxels + slab.z0 * plane) * sizeof(cfloat),
                        from = static_cast<std::size_t>(bt) * part;
      if (!primary.executionOps().copyFromPeer(out, to, be, *images[i], from, part)) {
        std::vector<cfloat> host(part / sizeof(cfloat));
        be.download(host.data(), *images[i], part, from);
        primary.upload(out, host.data(), part, to);
      }
    }
  }
}

CArray slabAdjoint(const std::vector<Backend*>& backends, const NufftGeometry& g, const CArray& samples, index_t batch,
                   const std::function<std::unique_ptr<NufftPlan>(Backend&, const NufftGeometry&)>& makePlan,
                   int slabsPerBackend) {
  require(!backends.empty(), "slab adjoint: no backend");
  require(slabsPerBackend >= 1 && batch >= 1, "slab adjoint: slabs and batch must be >= 1");
  return SlabAdjoint(backends, g, makePlan, slabsPerBackend).adjoint(samples, batch);
}

}  // namespace larmor::recon
