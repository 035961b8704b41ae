#pragma once
// N-dimensional host arrays. Convention (BART's): dimension 0 varies fastest, so an array of shape
// {nx, ny, nz, ncoils} holds x contiguous. Complex data is std::complex<float> (cfloat), interleaved
// real/imaginary, the layout of fftwf_complex, cufftComplex and BART's .cfl files.
#include <complex>
#include <cstdint>
#include <initializer_list>
#include <numeric>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "larmor/util/error.hpp"

namespace larmor {

using cfloat = std::complex<float>;
using cdouble = std::complex<double>;
using index_t = std::int64_t;

/// Host memory of large arrays (engine/src/array/host_memory.cpp): blocks of 4 MiB or more are mapped on
/// their own, 2 MiB-aligned and advised as transparent huge pages (MADV_HUGEPAGE), because the first touch of
/// fresh 4 KiB pages runs at ~1.3 GB/s on the GPU machine (a VM) and is what a 134 MB download of 3D coil
/// maps or k-space actually waits for; with huge pages 3.7 GB/s (measured 2026-11-24). Smaller blocks come
/// from operator new.
/// Freed large blocks are kept (a few, up to an eighth of the physical memory) for the next allocation of the
/// same rounded size; a miss releases them all before mapping anew (host_memory.cpp).
void* hostAllocate(std::size_t bytes);
void hostFree(void* p, std::size_t bytes) noexcept;
/// The bytes of freed large blocks kept for reuse, and their release (unpinned and unmapped).
std::size_t keptHostBytes() noexcept;
void releaseKeptHostBlocks() noexcept;

/// Pinning of those large blocks for a device's DMA (host_memory.cpp). A GPU backend installs the two
/// functions when its plugin loads; then `pinHostBlock` pins, on its first call for a block, the whole large
/// block that holds [p, p + bytes), so that a block uploaded again and again (a dataset reconstructed with
/// other settings, the benchmark's repetitions) moves at the link's rate without a staging copy; hostFree
/// unpins a block before unmapping it. Pinned bytes are capped at a quarter of the physical memory.
struct HostPinning {
  bool (*pin)(void* base, std::size_t bytes);  ///< true when the block is now pinned
  void (*unpin)(void* base);                   ///< must not throw
};
/// Installs `pinning` (nullptr: none) and returns the one it replaces.
const HostPinning* setHostPinning(const HostPinning* pinning) noexcept;
/// True when [p, p + bytes) lies in one large block that is pinned (pinning it now if need be); false for
/// memory not from hostAllocate's large path, with no pinning installed, past the cap, or when pinning fails.
bool pinHostBlock(const void* p, std::size_t bytes) noexcept;

template <class T>
struct HostAllocator {
  using value_type = T;
  HostAllocator() noexcept = default;
  template <class U>
  HostAllocator(const HostAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(hostAllocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { hostFree(p, n * sizeof(T)); }
  /// Value-initialises, except while this thread builds an Array with Array::NoInit: then trivially copyable
  /// elements keep what the memory holds (an array about to be overwritten whole, e.g. by a download).
  template <class U>
  void construct(U* p) {
    if constexpr (std::is_trivially_copyable_v<U> && std::is_trivially_destructible_v<U>)
      if (skipValueInit) return;
    ::new (static_cast<void*>(p)) U();
  }
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
  static inline thread_local bool skipValueInit = false;
  template <class U>
  bool operator==(const HostAllocator<U>&) const noexcept { return true; }
};

/// The extent of each dimension, dimension 0 fastest.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<index_t> dims) : dims_(dims) { validate(); }
  explicit Shape(std::vector<index_t> dims) : dims_(std::move(dims)) { validate(); }

  std::size_t rank() const { return dims_.size(); }
  index_t operator[](std::size_t i) const { return i < dims_.size() ? dims_[i] : 1; }
  index_t& at(std::size_t i) { return dims_.at(i); }
  const std::vector<index_t>& dims() const { return dims_; }
  index_t size() const {
    return std::accumulate(dims_.begin(), dims_.end(), index_t{1}, std::multiplies<>());
  }
  /// Product of dims [from, to).
  index_t span(std::size_t from, std::size_t to) const {
    index_t n = 1;
    for (std::size_t i = from; i < to; ++i) n *= (*this)[i];
    return n;
  }
  /// Stride (in elements) of dimension i.
  index_t stride(std::size_t i) const { return span(0, i); }
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  /// "[64, 64, 1, 8]"
  std::string str() const;

 private:
  void validate() const {
    for (auto d : dims_) require(d >= 0, "array dimension is negative");
  }
  std::vector<index_t> dims_;
};

/// A host array that owns its elements.
template <class T>
class Array {
 public:
  using value_type = T;
  Array() = default;
  explicit Array(Shape shape) : shape_(std::move(shape)), data_(static_cast<std::size_t>(shape_.size())) {}
  /// Elements left as the memory holds them (no pass that zeroes 16 MB before a download overwrites it): for an
  /// array the caller fills whole at once.
  struct NoInit {};
  Array(Shape shape, NoInit) : shape_(std::move(shape)) {
    struct Skip {  // the allocator's flag for this constructor only, also when resize throws
      Skip() { HostAllocator<T>::skipValueInit = true; }
      ~Skip() { HostAllocator<T>::skipValueInit = false; }
    } skip;
    data_.resize(static_cast<std::size_t>(shape_.size()));
  }
  Array(Shape shape, T value)
      : shape_(std::move(shape)), data_(static_cast<std::size_t>(shape_.size()), value) {}

  const Shape& shape() const { return shape_; }
  index_t size() const { return static_cast<index_t>(data_.size()); }
  bool empty() const { return data_.empty(); }
  T* data() { return data_.data(); }
  const T* data() const { return data_.data(); }
  T& operator[](index_t i) { return data_[static_cast<std::size_t>(i)]; }
  const T& operator[](index_t i) const { return data_[static_cast<std::size_t>(i)]; }
  /// Element at (i0, i1, i2, ...), dimension 0 fastest.
  template <class... I>
  T& operator()(I... idx) { return data_[static_cast<std::size_t>(offset({static_cast<index_t>(idx)...}))]; }
  template <class... I>
  const T& operator()(I... idx) const {
    return data_[static_cast<std::size_t>(offset({static_cast<index_t>(idx)...}))];
  }
  /// Same elements, another shape of the same size.
  void reshape(Shape s) {
    require(s.size() == shape_.size(), "reshape " + shape_.str() + " -> " + s.str() + " changes the size");
    shape_ = std::move(s);
  }
  using Storage = std::vector<T, HostAllocator<T>>;
  Storage& vec() { return data_; }
  const Storage& vec() const { return data_; }

 private:
  index_t offset(std::initializer_list<index_t> idx) const {
    index_t off = 0, stride = 1;
    std::size_t d = 0;
    for (auto i : idx) {
      off += i * stride;
      stride *= shape_[d++];
    }
    return off;
  }
  Shape shape_;
  Storage data_;
};

using CArray = Array<cfloat>;
using RArray = Array<float>;

}  // namespace larmor
