// GRAPPA's batch rule (larmor/recon/grappa.hpp, grappa::batchPlan): how many slices the pipeline puts
// through the device at once for a memory budget, and the backend memory that batch takes. One rule for
// the pipeline (grappa.cpp, which allocates the batch) and the resource planner (resources.cpp, which
// estimates it), so that the estimate cannot drift from what runs. The per-problem sizes are Plan::bytesPerProblem (grappa_plan.cpp).
#include <algorithm>

#include "grappa_plan.hpp"
#include "larmor/recon/cartesian.hpp"
#include "larmor/recon/grappa.hpp"
#include "larmor/recon/resources.hpp"
#include "larmor/recon/settings.hpp"

namespace larmor::recon::grappa {

// As many slices as the memory budget allows (each slice's volume plus its problems' tables and work), all
// of them problems of one plan. A single 3D volume too large for that is calibrated in sub-batches of
// partitions copied into a compact buffer (gather) and back (scatter). `bytes` counts what Impl allocates
// for the batch B (V = n0 n1 n2 voxels of a volume, c = 8 bytes):
//   kin V coilsIn B c; with --out-coils kwork V coils B c and the matrices coilsIn coils B c;
//   the plan capacity x Plan::bytesPerProblem; compact: the buffer n0 n1 coils capacity c and one table of
//   as many indices per sub-batch; images fov coils B c, resampled out coils B c (when fov != out),
//   combined out B c;
//   plus the transient of the largest FFT, of the V coils B c array (resources.hpp, fftTransientFactor);
//   on a GPU the double-precision copies of the calibration GEMM's operands (below).
BatchPlan batchPlan(const Dataset& d, const ReconSettings& s, const DeviceInfo& info, std::size_t budgetBytes,
                    index_t slicesPerBatch) {
  const Header& h = d.header;
  const GrappaSettings& gs = s.grappa;
  const Sampling smp = analyseSampling(d);
  const index_t n0 = h.encoded[0], n1 = h.encoded[1], n2 = h.encoded[2], slices = h.slices, coilsIn = h.coils;
  validate(gs, smp, n0, coilsIn);
  const index_t coils = gs.outCoils > 0 ? gs.outCoils : coilsIn;
  const Kernel kernel = Kernel::make(gs, smp.accel, n0, coils, smp.accelPe2);
  const index_t partitions = smp.twoD() ? 1 : n2;
  const CartesianGeometry g = cartesianGeometry(d, s);
  const double volume = static_cast<double>(n0 * n1 * n2), c = sizeof(cfloat);
  const double fovVoxels = static_cast<double>(g.fov[0] * g.fov[1] * g.fov[2]);
  const double outVoxels = static_cast<double>(g.out[0] * g.out[1] * g.out[2]);
  BatchPlan p;
  p.budgetBytes = budgetBytes > 0 ? static_cast<double>(budgetBytes)
                  : info.gpu      ? 0.4 * static_cast<double>(info.memoryBytes)
                                  : 2.0 * (1u << 30);
  const double perProblem = static_cast<double>(Plan::bytesPerProblem(kernel, smp, n0, gs.interpolateSegments));
  const double perSlice = (volume * static_cast<double>(coilsIn + (gs.outCoils > 0 ? coils : 0)) +
                           fovVoxels * static_cast<double>(coils) + outVoxels * static_cast<double>(coils + 1)) * c;
  const double perBatchSlice = perSlice + static_cast<double>(partitions) * perProblem;
  p.slices = slicesPerBatch > 0 ? std::min(slicesPerBatch, slices)
                                : std::clamp<index_t>(static_cast<index_t>(p.budgetBytes / perBatchSlice), 1, slices);
  if (!info.gpu && slicesPerBatch <= 0) {
    // The CPU solves a batch's problems (segments x partitions per slice) in parallel, one per thread: more
    // slices than fill the threads gain nothing, and the progress bar moves only between batches (a 6-slice
    // batch of 256² x 8 coils took 0.9 s on 2 cores without a report).
    const index_t perSliceProblems = std::max<index_t>(1, kernel.segments * partitions);
    const index_t threads = std::max(1, info.multiprocessors);
    p.slices = std::min(p.slices, std::max<index_t>(1, (threads + perSliceProblems - 1) / perSliceProblems));
  }
  p.capacity = p.slices * partitions;
  if (partitions > 1 && static_cast<double>(p.slices) * perBatchSlice > p.budgetBytes) {
    const double plane = static_cast<double>(n0 * n1 * coils) * (sizeof(cfloat) + sizeof(index_t));
    p.capacity =
        std::clamp<index_t>(static_cast<index_t>((p.budgetBytes - perSlice) / (perProblem + plane)), 1, partitions);
    p.compact = p.capacity < partitions * p.slices;
  }
  p.subBatches = p.compact ? (partitions * p.slices + p.capacity - 1) / p.capacity : 1;
  const double B = static_cast<double>(p.slices), C = static_cast<double>(coils), Cin = static_cast<double>(coilsIn);
  const bool resample = g.fov[0] != g.out[0] || g.fov[1] != g.out[1] || g.fov[2] != g.out[2];
  double bytes = volume * Cin * B * c + static_cast<double>(p.capacity) * perProblem + fovVoxels * C * B * c +
                 (resample ? outVoxels * C * B * c : 0) + outVoxels * B * c +
                 fftTransientFactor(info.gpu) * volume * C * B * c;
  if (gs.outCoils > 0) bytes += volume * C * B * c + Cin * C * B * c;
  if (info.gpu) {
    // The CUDA backend's batched GEMM accumulates in double when k > max(m, n) (cuda/linalg.cu): the
    // calibration products A^H A and A^H B then copy their operands and result to double (twice the float
    // size) beside them; the larger of the two.
    const CalibrationGeometry cg = CalibrationGeometry::make(kernel, smp, n0);
    const double nA = static_cast<double>(kernel.rowsA()), nB = static_cast<double>(kernel.rowsB());
    const double nCol = static_cast<double>(cg.equations()), E = static_cast<double>(kernel.segments * p.capacity);
    if (nCol > std::max(nA, nB))
      bytes += 2 * c * E * nCol * nA + 2 * c * E * std::max(nA * nA, nCol * nB + nA * nB);
  }
  if (p.compact)
    bytes += static_cast<double>(n0 * n1) * C * static_cast<double>(p.capacity) *
             (c + static_cast<double>(p.subBatches) * sizeof(index_t));
  p.bytes = bytes;
  return p;
}

}  // namespace larmor::recon::grappa
