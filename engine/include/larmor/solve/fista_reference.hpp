#pragma once
// FISTA and the power iteration written plainly (solve/fista_reference.cpp): the references that solve/fista.cpp's
// fast executors are checked against, with host scalars, against the operator abstraction and the Backend's
// vector ops. The library solves with fista and largestEigenvalue (solve/fista.hpp); these are for reading and
// for tests (tests/unit/test_fista_reference.cpp: they agree on the CPU backend).
#include "larmor/solve/fista.hpp"

namespace larmor::solve {

/// fista (the same arguments, result, history, stop, progress and observer calls), every scalar read to the host
/// as soon as it is computed.
FistaResult fistaReference(Backend& backend, LinearOperator& A, const Buffer& b, Buffer& x, double L, double mu,
                           const Prox& prox, const FistaOptions& options, const Progress& progress = {},
                           const FistaObserver& observer = {});

/// largestEigenvalue, its norms read to the host at every step.
double largestEigenvalueReference(Backend& backend, LinearOperator& A, const Buffer& start, int iterations);

}  // namespace larmor::solve
