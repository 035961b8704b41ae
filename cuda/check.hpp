#pragma once
// Error checks for CUDA runtime and cuFFT calls. Every failure becomes a larmor::Error whose one-line
// text names the place and the call, so the CLI can print it and the GUI can show it.
#include <cuda_runtime.h>
#include <cufft.h>

#include <cstring>
#include <string>

#include "larmor/util/error.hpp"

namespace larmor::cuda {

inline const char* baseName(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/// Codes present in both cuFFT 11 (CUDA 12) and cuFFT 12 (CUDA 13, which removed a few); others by number.
inline std::string cufftResultString(cufftResult r) {
  switch (r) {
    case CUFFT_SUCCESS: return "success";
    case CUFFT_INVALID_PLAN: return "invalid plan";
    case CUFFT_ALLOC_FAILED: return "allocation failed (GPU memory)";
    case CUFFT_INVALID_TYPE: return "invalid type";
    case CUFFT_INVALID_VALUE: return "invalid value";
    case CUFFT_INTERNAL_ERROR: return "internal error";
    case CUFFT_EXEC_FAILED: return "execution failed";
    case CUFFT_SETUP_FAILED: return "setup failed (is the CUDA driver usable?)";
    case CUFFT_INVALID_SIZE: return "invalid size";
    case CUFFT_UNALIGNED_DATA: return "unaligned data";
    case CUFFT_INVALID_DEVICE: return "invalid device";
    case CUFFT_NO_WORKSPACE: return "no workspace";
    case CUFFT_NOT_IMPLEMENTED: return "not implemented";
    case CUFFT_NOT_SUPPORTED: return "not supported";
    default: return "cuFFT error " + std::to_string(static_cast<int>(r));
  }
}

[[noreturn]] inline void throwCudaError(cudaError_t e, const char* call, const char* file, int line) {
  // Clears the error where it is not sticky, so that one failed call (an allocation that did not fit)
  // does not make the next unrelated check fail too.
  (void)cudaGetLastError();
  throw Error(std::string("CUDA error at ") + baseName(file) + ":" + std::to_string(line) + ": " +
              cudaGetErrorString(e) + " (" + call + ")");
}

[[noreturn]] inline void throwCufftError(cufftResult r, const char* call, const char* file, int line) {
  throw Error(std::string("cuFFT error at ") + baseName(file) + ":" + std::to_string(line) + ": " +
              cufftResultString(r) + " (" + call + ")");
}

}  // namespace larmor::cuda

#define LARMOR_CUDA_CHECK(call)                                                          \
  do {                                                                                   \
    const cudaError_t larmor_cuda_err_ = (call);                                         \
    if (larmor_cuda_err_ != cudaSuccess)                                                 \
      ::larmor::cuda::throwCudaError(larmor_cuda_err_, #call, __FILE__, __LINE__);       \
  } while (0)

#define LARMOR_CUFFT_CHECK(call)                                                         \
  do {                                                                                   \
    const cufftResult larmor_cufft_err_ = (call);                                        \
    if (larmor_cufft_err_ != CUFFT_SUCCESS)                                              \
      ::larmor::cuda::throwCufftError(larmor_cufft_err_, #call, __FILE__, __LINE__);     \
  } while (0)

/// After a kernel launch: a bad launch configuration is reported here; faults inside the kernel are
/// reported by the next synchronizing call.
#define LARMOR_CUDA_CHECK_LAUNCH() LARMOR_CUDA_CHECK(cudaGetLastError())
