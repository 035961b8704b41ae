#pragma once
// Batched small dense complex linear algebra on a backend (GRAPPA calibration, coil compression).
// Matrices are column-major like BLAS/LAPACK; batch entries are `stride` elements apart.
#include "larmor/array/array.hpp"

namespace larmor {

enum class MatOp { None, Transpose, ConjTranspose };

struct MatrixBatch {
  index_t rows = 0, cols = 0;  ///< of the stored matrix (before op)
  index_t ld = 0;              ///< leading dimension (>= rows)
  index_t stride = 0;          ///< elements between batch entries
};

}  // namespace larmor
