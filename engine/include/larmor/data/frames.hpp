#pragma once
// Frame binning of a continuous non-Cartesian acquisition (dynamic imaging). A Dataset whose profiles
// (spokes, interleaves) are in acquisition order is cut into frames of K consecutive profiles; with an
// overlap of V profiles the window slides by K - V (a sliding-window series). Frame i holds profiles
// i (K - V) ... i (K - V) + K - 1, so there are
//   framesFor(P, K, V) = floor((P - K) / (K - V)) + 1   frames (P >= K),
// and the P - K - (frames - 1)(K - V) profiles after the last full window are dropped (each frame then says so
// in its warnings). Each frame is a Dataset of its own (header, k-space, trajectory, noise, coil maps), without
// the input's reference image (the truth of a continuous acquisition is no frame's truth) and without its
// per-acquisition table.
#include <vector>

#include "larmor/data/dataset.hpp"

namespace larmor {

/// How many frames of K profiles, stepping K - overlap, fit P profiles (0 when P < K). Throws Error for
/// K < 1 or overlap outside [0, K).
index_t framesFor(index_t profiles, index_t spokesPerFrame, index_t overlap = 0);

/// The frames of `continuous` (non-Cartesian, kspace [readout, P, 1, coils, slices]). Errors (one line naming
/// the source): Cartesian data, K < 1, overlap < 0 or >= K, fewer than K profiles.
std::vector<Dataset> binFrames(const Dataset& continuous, index_t spokesPerFrame, index_t overlap = 0);

/// "--frames N": N frames of K = P / N profiles each, without overlap (the P mod N last profiles dropped).
/// Errors as binFrames, and for N < 1 or N > P.
std::vector<Dataset> binFramesByCount(const Dataset& continuous, index_t frames);

}  // namespace larmor
