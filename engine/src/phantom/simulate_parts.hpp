#pragma once
// The simulator's pieces that the dynamic simulator (dynamic.cpp) shares with simulate.cpp (internal to the
// engine): the Cartesian grid and the headers of a simulated acquisition.
#include "larmor/data/dataset.hpp"
#include "larmor/phantom/simulate.hpp"

namespace larmor::phantom::detail {

/// The Cartesian grid of a simulation (simulate.cpp's SCALING): e0 readout points (m0 oversampled) spanning
/// l0 FOVs, m1 x m2 phase encodes, per slice.
struct CartesianGrid {
  index_t m0 = 0, m1 = 0, m2 = 0, e0 = 0, slices = 1;
  double l0 = 1;
  bool is3D = false;
  int coils = 1;
};

CartesianGrid cartesianGrid(const SimulateSettings& s);
/// The header of a Cartesian simulation on grid g (acceleration, ACS lines, slice geometry).
Header cartesianHeader(const SimulateSettings& s, const CartesianGrid& g);
/// The header of a non-Cartesian simulation of trajectory `kind` (encoded = recon = the matrix).
Header nonCartesianHeader(const SimulateSettings& s, TrajectoryKind kind);

}  // namespace larmor::phantom::detail
