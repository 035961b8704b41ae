#pragma once
// The CUDA backend's larger ops, each in its own file (nufft.cu, dft.cu, linalg.cu); CudaBackend's
// overrides forward here.
#include "cuda_backend.hpp"
#include "larmor/ops/nufft.hpp"
