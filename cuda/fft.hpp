#pragma once
// Centred unitary FFTs on the GPU: cuFFT and the centring passes (fft.cu, fft_last.cu derive them).
#include <cufft.h>

#include <list>
#include <memory>
#include <vector>

#include "kernels.hpp"
#include "larmor/backend/backend.hpp"
#include "memory.hpp"

namespace larmor::cuda {

/// Owns the cuFFT plans of one backend, cached by (transform lengths, batch) with the least recently used
/// dropped past kMaxPlans, and one work area shared by all of them: every plan runs on the backend's one
/// stream, so they never run at the same time, and one area the size of the largest saves memory that
/// cuFFT would otherwise hold per plan.
class FftEngine {
 public:
  FftEngine(std::shared_ptr<DeviceAllocator> allocator, const Launch& launch);
  ~FftEngine();
  FftEngine(const FftEngine&) = delete;
  FftEngine& operator=(const FftEngine&) = delete;

  /// In place, over dims [0, rank) of `shape` (rank 1..3, checked by the caller), batched over the rest.
  void transform(float2* data, const Shape& shape, int rank, FftDirection dir);
  /// In place, data <- F^H diag(d) F data (ToeplitzOps::fftGram): pre-modulation, DFT, d / N, inverse DFT,
  /// conjugate pre-modulation. d: shape.span(0, rank) elements (device), applied to every batch.
  /// box (optional, ToeplitzOps::fftGramInBox): data is zero outside this centred box and only the box of the result
  /// is used; the fused pass (fft_last.cu) then transforms only the planes of the last dimension that it spans.
  void gram(float2* data, const Shape& shape, int rank, const float2* diagonal, const Shape* box = nullptr);
  /// ToeplitzOps::fftGramPadded without cuFFT where fft_last's padded passes fit (rank 3 or 2; paddedPassesFit): out
  /// <- crop(F^H diag(d) F pad(image)) through `grid` in five passes (x with the padding, y, z with d, y, x with the
  /// cropping; 2D: x, y with d, x), each reading and writing only the rows or planes the image spans. False
  /// (nothing done) elsewhere.
  bool gramPadded(float2* out, const float2* image, const Shape& imageShape, float2* grid, const Shape& gridShape,
                  int rank, const float2* diagonal);
  std::size_t cachedPlans() const { return plans_.size(); }
  /// While held (a recording that may replay these plans' kernels on this work area is alive: ExecutionOps::record),
  /// evicted plans and outgrown work areas are kept, not destroyed; they go when the last hold ends.
  void hold() { ++holds_; }
  void release();

  static constexpr std::size_t kMaxPlans = 16;
  /// gram with a box: per-batch cuFFT calls over the box's planes up to this many batches, all planes beyond.
  static constexpr long long kMaxBoxBatches = 2;

 private:
  struct Key {
    std::vector<long long> lengths;  ///< cuFFT order: slowest first
    long long batch = 0;
    bool operator==(const Key&) const = default;
  };
  struct Plan {
    Key key;
    cufftHandle handle = 0;
    std::size_t workBytes = 0;
  };

  Plan& planFor(const Key& key);
  /// The plan of `shape` over [0, rank), its work area ensured; false when every length is 1 (identity).
  bool prepare(const Shape& shape, int rank, Plan*& plan);
  /// The plan of `key`, its work area ensured and set.
  Plan& prepared(const Key& key);
  void ensureWorkArea(std::size_t bytes);

  std::shared_ptr<DeviceAllocator> allocator_;
  Launch launch_;
  std::list<Plan> plans_;  ///< most recently used first
  DeviceAllocator::Block work_;
  std::size_t workBytes_ = 0;
  int holds_ = 0;
  std::vector<cufftHandle> retiredPlans_;             ///< evicted while held
  std::vector<DeviceAllocator::Block> retiredWork_;  ///< outgrown while held
};

}  // namespace larmor::cuda
