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
#include <cmath>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "larmor/recon/iterative.hpp"

namespace larmor::recon {

struct SlabAdjoint::Slab {
  Backend* backend = nullptr;
  index_t z0 = 0, ns = 0;
  std::unique_ptr<NufftPlan> plan;
  std::vector<cfloat> phase;  ///< exp(+2 pi i k_z (z0 - c + cs) / N) per sample
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
      slab->phase.resize(static_cast<std::size_t>(m_));
      for (index_t j = 0; j < m_; ++j) {
        for (int d = 0; d < 3; ++d) gs.trajectory[3 * j + d] = g.trajectory[3 * j + d];
        const double k = g.trajectory[3 * j + axis_];
        gs.trajectory[3 * j + axis_] = static_cast<float>(k * ratio);
        const double phase = 2 * M_PI * k * offset / static_cast<double>(len);
        slab->phase[static_cast<std::size_t>(j)] = cfloat(static_cast<float>(std::cos(phase)), static_cast<float>(std::sin(phase)));
      }
      slab->plan = makePlan(*slab->backend, gs);
    }
  });
}

SlabAdjoint::~SlabAdjoint() = default;

void SlabAdjoint::forEachBackend(const std::function<void(std::size_t)>& work) const {
  std::vector<std::exception_ptr> errors(backends_.size());
  auto guarded = [&](std::size_t b) {
    try {
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

CArray SlabAdjoint::adjoint(const CArray& samples, index_t batch) const {
  require(batch >= 1, "slab adjoint: batch must be >= 1");
  require(samples.size() == m_ * batch, "slab adjoint: " + std::to_string(samples.size()) + " samples for " +
                                            std::to_string(m_) + " x " + std::to_string(batch));
  const NufftGeometry& g = geometry_;
  const index_t n0 = g.image[0], n1 = g.image[1], n2 = g.dims == 3 ? g.image[2] : 1;
  const index_t len = g.image[axis_];
  const index_t plane = axis_ == 2 ? n0 * n1 : n0;  // elements of one plane/row of the split axis
  const index_t outer = axis_ == 2 ? 1 : n2;         // 2D: rows of each (unit) z plane
  const index_t voxels = n0 * n1 * n2;
  CArray out(Shape{n0, n1, n2, batch});
  forEachBackend([&](std::size_t b) {
    for (auto& slab : slabs_) {
      if (slab->backend != backends_[b]) continue;
      Backend& be = *slab->backend;
      std::vector<cfloat> mod(static_cast<std::size_t>(m_ * batch));
      for (index_t bt = 0; bt < batch; ++bt)
        for (index_t j = 0; j < m_; ++j) mod[bt * m_ + j] = samples[bt * m_ + j] * slab->phase[static_cast<std::size_t>(j)];
      auto in = be.allocate(mod.size() * sizeof(cfloat));
      be.upload(*in, mod.data(), mod.size() * sizeof(cfloat));
      const index_t slabVoxels = voxels / len * slab->ns;
      auto img = be.allocate(static_cast<std::size_t>(slabVoxels * batch) * sizeof(cfloat));
      slab->plan->adjoint(*in, *img, batch);
      // Straight into the output where the slab is contiguous there (3D, or one image of a 2D batch).
      if (outer == 1 && batch == 1) {
        be.download(out.data() + slab->z0 * plane, *img, static_cast<std::size_t>(slabVoxels) * sizeof(cfloat));
        continue;
      }
      CArray host(Shape{slabVoxels * batch});
      be.download(host.data(), *img, static_cast<std::size_t>(host.size()) * sizeof(cfloat));
      // The slab [n0, ns, n2] (2D) or [n0, n1, ns] (3D) into its planes of the whole image (disjoint
      // destinations: no lock needed).
      for (index_t bt = 0; bt < batch; ++bt)
        for (index_t o = 0; o < outer; ++o)
          for (index_t z = 0; z < slab->ns; ++z) {
            const cfloat* src = host.data() + bt * slabVoxels + (o * slab->ns + z) * plane;
            cfloat* dst = out.data() + bt * voxels + (o * len + slab->z0 + z) * plane;
            std::copy_n(src, plane, dst);
          }
    }
  });
  return out;
}

CArray slabAdjoint(const std::vector<Backend*>& backends, const NufftGeometry& g, const CArray& samples, index_t batch,
                   const std::function<std::unique_ptr<NufftPlan>(Backend&, const NufftGeometry&)>& makePlan,
                   int slabsPerBackend) {
  require(!backends.empty(), "slab adjoint: no backend");
  require(slabsPerBackend >= 1 && batch >= 1, "slab adjoint: slabs and batch must be >= 1");
  return SlabAdjoint(backends, g, makePlan, slabsPerBackend).adjoint(samples, batch);
}

}  // namespace larmor::recon
