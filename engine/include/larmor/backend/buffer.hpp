#pragma once
// Memory owned by a backend, as an opaque handle: the Backend interface (backend.hpp) and the kernel
// interfaces each backend provides (prior_ops.hpp, coil_combine_ops.hpp) take it, so none of them shows a
// CUDA type.
#include <cstddef>

namespace larmor {

/// Memory owned by a backend: host memory for the CPU, device memory for a GPU.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual std::size_t bytes() const = 0;
  /// Host pointer for the CPU backend, device pointer for a GPU backend.
  virtual void* ptr() = 0;
  virtual const void* ptr() const = 0;
};

}  // namespace larmor
