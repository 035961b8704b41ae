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
#include <mutex>
#include <thread>

#include "larmor/recon/iterative.hpp"

namespace larmor::recon {

CArray slabAdjoint(const std::vector<Backend*>& backends, const NufftGeometry& g, const CArray& samples, index_t batch,
                   const std::function<std::unique_ptr<NufftPlan>(Backend&, const NufftGeometry&)>& makePlan,
                   int slabsPerBackend) {
  require(!backends.empty(), "slab adjoint: no backend");
  require(slabsPerBackend >= 1 && batch >= 1, "slab adjoint: slabs and batch must be >= 1");
  const index_t m = g.samples();
  require(samples.size() == m * batch, "slab adjoint: " + std::to_string(samples.size()) + " samples for " +
                                           std::to_string(m) + " x " + std::to_string(batch));
  const int axis = g.dims == 3 ? 2 : 1;
  const index_t n0 = g.image[0], n1 = g.image[1], n2 = g.dims == 3 ? g.image[2] : 1;
  const index_t len = g.image[axis];
  const index_t parts = std::min<index_t>(len, static_cast<index_t>(backends.size()) * slabsPerBackend);
  const index_t plane = axis == 2 ? n0 * n1 : n0;           // elements of one plane/row of the split axis
  const index_t outer = axis == 2 ? 1 : n2;                  // 2D: rows of each (unit) z plane
  const index_t voxels = n0 * n1 * n2;
  CArray out(Shape{n0, n1, n2, batch});

  std::vector<std::exception_ptr> errors(backends.size());
  std::mutex outMutex;
  auto work = [&](std::size_t b) {
    try {
      Backend& be = *backends[b];
      for (index_t part = static_cast<index_t>(b); part < parts; part += static_cast<index_t>(backends.size())) {
        const index_t z0 = part * len / parts, z1 = (part + 1) * len / parts, ns = z1 - z0;
        if (ns <= 0) continue;
        NufftGeometry gs;
        gs.dims = g.dims;
        for (int d = 0; d < 3; ++d) gs.image[d] = g.image[d];
        gs.image[axis] = ns;
        gs.trajectory = RArray(Shape{3, m});
        const double ratio = static_cast<double>(ns) / static_cast<double>(len);
        const double offset = static_cast<double>(z0 - len / 2 + ns / 2);
        std::vector<cfloat> mod(static_cast<std::size_t>(m * batch));
        for (index_t j = 0; j < m; ++j) {
          for (int d = 0; d < 3; ++d) gs.trajectory[3 * j + d] = g.trajectory[3 * j + d];
          const double k = g.trajectory[3 * j + axis];
          gs.trajectory[3 * j + axis] = static_cast<float>(k * ratio);
          const double phase = 2 * M_PI * k * offset / static_cast<double>(len);
          const cdouble e(std::cos(phase), std::sin(phase));
          for (index_t bt = 0; bt < batch; ++bt)
            mod[bt * m + j] = cfloat(cdouble(samples[bt * m + j]) * e);
        }
        auto plan = makePlan(be, gs);
        auto in = be.allocate(mod.size() * sizeof(cfloat));
        be.upload(*in, mod.data(), mod.size() * sizeof(cfloat));
        const index_t slabVoxels = voxels / len * ns;
        auto img = be.allocate(static_cast<std::size_t>(slabVoxels * batch) * sizeof(cfloat));
        plan->adjoint(*in, *img, batch);
        CArray host(Shape{slabVoxels * batch});
        be.download(host.data(), *img, static_cast<std::size_t>(host.size()) * sizeof(cfloat));
        std::lock_guard lock(outMutex);
        // The slab [n0, ns, n2] (2D) or [n0, n1, ns] (3D) into its planes of the whole image.
        for (index_t bt = 0; bt < batch; ++bt)
          for (index_t o = 0; o < outer; ++o)
            for (index_t z = 0; z < ns; ++z) {
              const cfloat* src = host.data() + bt * slabVoxels + (o * ns + z) * plane;
              cfloat* dst = out.data() + bt * voxels + (o * len + z0 + z) * plane;
              std::copy_n(src, plane, dst);
            }
      }
    } catch (...) {
      errors[b] = std::current_exception();
    }
  };
  if (backends.size() == 1) {
    work(0);
  } else {
    std::vector<std::thread> threads;
    for (std::size_t b = 0; b < backends.size(); ++b) threads.emplace_back(work, b);
    for (auto& t : threads) t.join();
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return out;
}

}  // namespace larmor::recon
