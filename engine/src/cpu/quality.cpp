// QualityOps on the host (larmor/backend/quality_ops.hpp): the buffers are host memory, so this is
// quality::compare itself (engine/src/quality/metrics.cpp, the reference). Twin of cuda/quality.cu.
#include "cpu_backend.hpp"

namespace larmor::cpu {

quality::Metrics CpuQualityOps::compare(const Buffer& test, const Buffer& reference, const Shape& shape,
                                        const quality::CompareOptions& options) {
  return quality::compare(elements(test, shape.size(), "compare"), elements(reference, shape.size(), "compare"), shape,
                          options);
}

}  // namespace larmor::cpu
