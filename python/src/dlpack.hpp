#pragma once
// The DLPack exchange structures (dlpack.h, v0.8 ABI; https://dmlc.github.io/dlpack), declared here rather than
// taken from a header that Debian does not package: the layout is a stable C ABI that CuPy, PyTorch and NumPy read.
#include <cstdint>

namespace larmor::python::dlpack {

enum DeviceType : int32_t { kDLCPU = 1, kDLCUDA = 2 };
enum TypeCode : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLComplex = 5 };

struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  ///< null: compact, row-major (C order)
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

}  // namespace larmor::python::dlpack
