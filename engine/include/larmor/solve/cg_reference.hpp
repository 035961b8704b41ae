#pragma once
// The plain conjugate-gradient loop (solve/cg_reference.cpp): the reference that solve/cg.cpp's fast executor
// is checked against, written as the textbook has it, with host scalars, against the operator abstraction and
// the Backend's vector ops. The library solves with conjugateGradient (solve/cg.hpp); this is for reading and
// for tests (tests/unit/test_cg_reference.cpp: the two agree on the CPU backend).
#include "larmor/solve/cg.hpp"

namespace larmor::solve {

/// Solves A x = b as conjugateGradient does (the same options, result, history, stop reasons, progress and
/// observer calls), every scalar read to the host as soon as it is computed.
CgResult conjugateGradientReference(Backend& backend, LinearOperator& A, const Buffer& b, Buffer& x,
                                    const CgOptions& options, Preconditioner* M = nullptr,
                                    const Progress& progress = {}, const CgObserver& observer = {});

}  // namespace larmor::solve
