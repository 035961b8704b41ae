#pragma once
// GRAPPA internals (engine only): the kernel geometry shared by the tables, the scales and the reference;
// the index tables; and Plan, the calibration and filling on a backend.
//
// Layouts. Every matrix is column-major like BLAS. The equation matrices are stored transposed, one
// equation (kernel position) per row, so that a gather reads consecutive readout columns (coalesced on a
// GPU) and so that a per-equation factor is a broadcast elementwise product:
//   GA[col + Ncol*e + Ncol*E*row]  = A_e(row, col)     (row < nA)    entries e = segment + S*problem
//   GB[col + Ncol*e + Ncol*E*row]  = B_e(row, col)     (row < nB)
// Then GA_e^H GA_e = conj(A A^H) = (A A^H)^T and GA_e^H GB_e = conj(A B^H) = (B A^H)^T, so the Cholesky
// solve of (A A^H + λE)^T X = (B A^H)^T gives X = W^T directly (A A^H is Hermitian: its transpose is its
// conjugate, still Hermitian positive definite). Filling uses the same transposed form:
//   F[pos + Npos*e + Npos*E*row] = source `row` of position pos;  T = F W^T,  T[pos + ... + Npos*E*t].
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "larmor/backend/backend.hpp"
#include "larmor/recon/grappa.hpp"

namespace larmor::recon::grappa {

/// How the planes of the problems lie in a buffer: element (x, y, z, c) of problem q = p + partitions *
/// slice at x + columns*(y + lines*(p depth + z + partitions depth (c + coils*slice))). Pe1 acceleration:
/// a [x, y, pe2, coils, slices] k-space (partitions = pe2, depth = 1) or a compact [x, y, coils, problems]
/// buffer (partitions = depth = 1); pe1 x pe2 acceleration: [x, y, pe2, coils, slices] with partitions = 1,
/// depth = pe2 (a problem is a whole volume).
struct Addressing {
  index_t columns = 0, lines = 0, coils = 0, partitions = 1, depth = 1;
  index_t offset(index_t q, index_t c, index_t y, index_t x, index_t z = 0) const {
    const index_t p = q % partitions, slice = q / partitions;
    return x + columns * (y + lines * (p * depth + z + partitions * depth * (c + coils * slice)));
  }
};

/// The kernel of either calibration (thesis eqs. 4.1 and 4.3), extended over pe2 for 2D acceleration.
/// Offsets are in lines relative to the kernel's first source line ("kpe = 0") and partition ("kpz = 0").
/// Pe1 only (Rz = 1): targets sit between source ⌊P/2⌋-1 and ⌊P/2⌋ (eq. 2.5's symmetric mask): Δ = R(⌊P/2⌋
/// - 1), target m = 1..R-1 at Δ + m. Pe1 x pe2: sources at (kpe Ry, kpz Rz), kpe < P, kpz < P2; the cell of
/// acquired point (Δ, Δz), Δz = Rz max(⌊P2/2⌋ - 1, 0), holds the Ry Rz - 1 targets (Δ + my, Δz + mz),
/// (my, mz) in [0, Ry) x [0, Rz) without (0, 0): one set of weight rows per offset (Blaimer 2006, Brau 2008).
struct Kernel {
  bool improved = true;
  int accel = 2;        ///< R (Ry)
  int accelPe2 = 1;     ///< Rz
  int pe = 4;           ///< K_PE (improved) or Nb (basic)
  int pe2 = 1;          ///< K_PE2 (1 unless pe2 is accelerated)
  int ro = 1;           ///< K_RO (improved) or 1 (basic)
  int roCentre = 0;     ///< Δ_RO = ⌊(K_RO - 1)/2⌋: the target column within the kernel
  index_t coils = 1;
  index_t segment = 0;  ///< basic: Δs (clamped to the columns); improved: the columns
  index_t segments = 1; ///< basic: ⌈columns/Δs⌉; improved: 1

  static Kernel make(const GrappaSettings& s, int accel, index_t columns, index_t coils, int accelPe2 = 1);
  index_t delta() const { return static_cast<index_t>(accel) * (pe / 2 - 1); }
  index_t deltaPe2() const { return static_cast<index_t>(accelPe2) * std::max(pe2 / 2 - 1, 0); }
  index_t targets() const { return static_cast<index_t>(accel) * accelPe2 - 1; }
  /// Target t (0 <= t < targets()): offset (my, mz) = (t + 1) mod Ry, (t + 1) div Ry from (Δ, Δz).
  index_t targetY(index_t t) const { return delta() + (t + 1) % accel; }
  index_t targetZ(index_t t) const { return deltaPe2() + (t + 1) / accel; }
  /// Lowest and highest line (partition) offset a kernel position touches (sources and targets).
  index_t low() const { return std::min<index_t>(0, delta() + (accelPe2 > 1 ? 0 : 1)); }
  index_t high() const { return std::max<index_t>(static_cast<index_t>(pe - 1) * accel, delta() + accel - 1); }
  index_t span() const { return high() - low() + 1; }
  index_t lowPe2() const { return 0; }
  index_t highPe2() const {
    return std::max<index_t>(static_cast<index_t>(pe2 - 1) * accelPe2, deltaPe2() + accelPe2 - 1);
  }
  index_t spanPe2() const { return highPe2() - lowPe2() + 1; }
  index_t source(int kpe) const { return static_cast<index_t>(kpe) * accel; }
  index_t sourcePe2(int kpz) const { return static_cast<index_t>(kpz) * accelPe2; }
  index_t rowsA() const { return static_cast<index_t>(pe) * pe2 * ro * coils; }
  index_t rowsB() const { return targets() * coils; }
  index_t rowA(index_t c, int kpe, int kpz, int kro) const {
    return kro + ro * (kpe + static_cast<index_t>(pe) * (kpz + static_cast<index_t>(pe2) * c));
  }
  index_t rowB(index_t c, index_t t) const { return t + targets() * c; }
};

/// Where the calibration equations come from: PE shifts of the kernel inside the ACS block (pe1 x pe2
/// shifts for 2D acceleration, shift i = iy + shiftsY iz) and, for the improved kernel, RO shifts across
/// the columns (N_sh = N_sh^PE N_sh^RO); basic: Δs columns per segment.
struct CalibrationGeometry {
  index_t shiftsPe = 0;  ///< N_b^ACS = shiftsY shiftsZ (pe1 only: N_r^ACS - span + 1; thesis N_r^ACS - (N_b - 1) R)
  index_t shiftsY = 0, shiftsZ = 1;
  index_t shiftsRo = 0;  ///< improved: columns - K_RO + 1; basic: Δs
  index_t firstLine = 0; ///< line of the kernel's first source line at PE shift 0
  index_t firstPe2 = 0;  ///< partition of the kernel's first source partition at PE shift 0
  index_t equations() const { return shiftsPe * shiftsRo; }  ///< Ncol per entry
  static CalibrationGeometry make(const Kernel& k, const Sampling& s, index_t columns);
};

/// The kernel placements that fill the missing lines: cell g holds targets grid(g) + offsets; per
/// placement the line and partition of the source (kpe, kpz) = (0, 0) (may lie outside the plane).
struct FillGeometry {
  std::vector<index_t> firstSource, firstSourcePe2;
  static FillGeometry make(const Kernel& k, const Sampling& s);
  index_t placements() const { return static_cast<index_t>(firstSource.size()); }
};

/// One scale per equation and entry ([col + Ncol*e]): Ψ = p^{-η/2} of its group (basic: the Δs columns of
/// one segment at one PE shift, p = |B|^2, Alg. 4.2; improved: one PE shift across the readout,
/// p = Σ pA nRowB + pB nRowA, Alg. 4.3) times 0 for the κ N_sh strongest equations of a problem (improved,
/// Alg. 4.3's power clipping). acs: [columns, acsCount, acsCountPe2, coils, problems] in the calibration domain; the
/// result has entries for `capacity` problems (missing ones 0).
std::vector<float> equationScales(const CArray& acs, const Kernel& k, const CalibrationGeometry& g,
                                  const Sampling& s, const GrappaSettings& settings, index_t capacity);

/// Calibration and filling of up to `capacity` problems at a time on one backend. The index tables are
/// built on the host once and uploaded; calibrate() and fill() only queue backend work.
class Plan {
 public:
  Plan(Backend& backend, const Kernel& kernel, const Sampling& sampling, const Addressing& data,
       const GrappaSettings& settings, index_t capacity);
  index_t capacity() const { return capacity_; }
  index_t entries() const { return entries_; }
  const Kernel& kernel() const { return kernel_; }
  const CalibrationGeometry& calibrationGeometry() const { return cal_; }
  /// Whether calibrate() computes the equation scales itself, on the backend: η = 1 (Ψ = 1/sqrt(p), which
  /// the backend's primitives can form) and no clipping (κ = 0: clipping sorts, which stays on the host).
  /// Table 5.1's setting and the default.
  bool scalesOnDevice() const { return deviceScales_; }
  /// Queues W^T of every entry from `data` (calibration domain); `hostScales` from equationScales()
  /// unless scalesOnDevice(). Whether the systems could be solved is read by checkCalibration().
  void calibrate(const Buffer& data, const std::vector<float>* hostScales);
  /// Waits for the calibrations queued since the last call and throws "GRAPPA calibration failed ..." when
  /// a system was not positive definite (no signal in the calibration lines). Call it before the weights or
  /// the filled data are used on the host: until then they may hold anything.
  void checkCalibration();
  /// Writes the missing lines of `data` (which must be the buffer calibrate() read).
  void fill(Buffer& data);
  const Buffer& weights() const { return *weights_; }
  /// Where fill() reads W^T: given weights (fillFromWeights) are uploaded here instead of calibrate()'s.
  Buffer& weights() { return *weights_; }
  /// Host + device bytes a plan of one problem needs (tables and work buffers), for choosing batches.
  static std::size_t bytesPerProblem(const Kernel& k, const Sampling& s, index_t columns, bool interpolate);

 private:
  // The constructor's steps, in this order: index tables of step 1 (A and B from the data), of the
  // normalization and λ (steps 2 and 4), of the filling (sources and targets), then the work buffers.
  void buildCalibrationTables();
  void buildScaleTables();
  void buildFillTables();
  void allocateWork();
  std::unique_ptr<Buffer> upload(const std::vector<index_t>& table);
  std::unique_ptr<Buffer> alloc(index_t elements);

  Backend& be_;
  Kernel kernel_;
  Sampling sampling_;
  Addressing data_;
  CalibrationGeometry cal_;
  FillGeometry fillGeo_;
  double chi_;
  bool interpolate_, deviceScales_;
  index_t capacity_, entries_, nA_, nB_, nCol_, nPos_, fillEntries_;
  std::unique_ptr<Buffer> idxGA_, idxGB_, idxDiag_, idxF_, idxT_;
  std::unique_ptr<Buffer> GA_, GB_, M_, weights_, diag_, lambda_, onesA_, scales_;
  std::unique_ptr<Buffer> F_, T_, alpha_, weightsPerColumn_;
  // Device-side normalization (scalesOnDevice): column norms, group norms, Ψ, and the tables between them.
  std::unique_ptr<Buffer> idxExpand_, idxBothA_, idxBothB_, colA_, colB_, both_, groupNorm_, psi_;
  std::vector<GrappaOps::SolveCheck> pendingChecks_;  ///< of the calibrations queued since checkCalibration()
};

}  // namespace larmor::recon::grappa
