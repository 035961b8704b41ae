#pragma once
// FISTA (Beck & Teboulle, SIAM J. Imaging Sci. 2:183, 2009) for compressed sensing (Lustig, Donoho & Pauly,
// MRM 58:1182, 2007):
//   x = argmin 1/2 ||E x - d||^2 + mu R(x),   R = TV or ||Psi x||_1 (backend/sparsity_ops.hpp),
// with a constant step 1/L, L >= ||E^H E||:
//   x_k     = prox_{mu/L R}( y_k - (A y_k - b) / L ),      A = E^H E, b = E^H d
//   t_{k+1} = (1 + sqrt(1 + 4 t_k^2)) / 2
//   y_{k+1} = x_k + (t_k - 1) / t_{k+1} (x_k - x_{k-1})
// Why FISTA and not ADMM: one application of E^H E per iteration (ADMM's x-update is itself an inner CG
// solve of E^H E + rho T^H T), the step needs only L, which the relative lambda rule needs anyway, and warm
// starting (the GUI's lambda slider) is restarting from x. The TV proximal map is inexact (a few FGP steps,
// warm-started: Beck & Teboulle's FISTA-TV does the same).
//
// Written once against the Backend's vector ops and a LinearOperator, like solve/cg.hpp: every vector stays
// in the backend's memory; per iteration one A, one prox and a few vector ops. The plain loops these fast
// executors are checked against: solve/fista_reference.hpp.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "larmor/backend/backend.hpp"
#include "larmor/solve/cg.hpp"
#include "larmor/util/progress.hpp"

namespace larmor::solve {

struct FistaOptions {
  int maxIterations = 100;
  /// Stop when ||x_k - x_{k-1}|| <= tolerance ||x_k||; 0: iterations only.
  double tolerance = 0;
  /// x holds the starting image on entry (warm start); otherwise x is set to zero.
  bool warmStart = false;
  std::string stage = "fista";
  /// Iterations queued between reads of the scalars on a GPU (solve/cg.hpp, readWindow); 0: its rule.
  int readEvery = 0;
  /// Record the gradient's operator application and replay it (solve/cg.hpp, RecordedApplication).
  bool recordOperator = true;
};

struct FistaIterate {
  int iteration = 0;
  double relativeChange = 0;  ///< ||x_k - x_{k-1}|| / ||x_k||
};

struct FistaResult {
  int iterations = 0;
  bool converged = false;
  std::string stopReason;  ///< "iterations" | "tolerance" | "zero right-hand side"
  std::vector<FistaIterate> history;
  nlohmann::json toJson() const;  ///< {"iterations", "converged", "stop", "relative_change": [...]}
};

/// x <- prox_{threshold R}(x) in place (R's proximal map at this threshold).
using Prox = std::function<void(Buffer& x, double threshold)>;
using FistaObserver = std::function<void(const FistaIterate&)>;

/// Minimises 1/2 x^H A x - Re x^H b + mu R(x) (= 1/2 ||E x - d||^2 + mu R(x) up to a constant) with step 1/L.
/// A: Hermitian positive semidefinite, ||A|| <= L. Reports progress every iteration (cancellable: Cancelled
/// is thrown, x holds the last iterate).
FistaResult fista(Backend& backend, LinearOperator& A, const Buffer& b, Buffer& x, double L, double mu,
                  const Prox& prox, const FistaOptions& options, const Progress& progress = {},
                  const FistaObserver& observer = {});

/// The largest eigenvalue of a Hermitian positive semidefinite A by `iterations` power steps from `start`
/// (a buffer of A.size() elements, not changed; a zero start gives 0). A lower bound that converges from
/// below: callers add a margin before using it as FISTA's L.
double largestEigenvalue(Backend& backend, LinearOperator& A, const Buffer& start, int iterations);

}  // namespace larmor::solve
