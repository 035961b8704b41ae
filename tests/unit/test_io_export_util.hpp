#pragma once
// Shared by the export tests (test_io_export*.cpp, test_io_nifti.cpp, test_io_ismrmrd_dicom.cpp): a small
// simulated phantom reconstructed on the CPU, optionally with an oblique geometry and a phase ramp.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/recon.hpp"

#include "support/expect_error.hpp"
#include "support/test_dir.hpp"

namespace larmor::testing {

using larmor::test::expectError;  // support/expect_error.hpp

namespace fs = std::filesystem;

/// Sets members of an ISMRMRD::Acquisition's header on a copy, by member access: the header is packed to 2
/// bytes, and libismrmrd's accessors (scan_counter(), position(), physiology_time_stamp(), ...) hand out
/// misaligned uint32_t& / float* (UBSan: `make asan-test`).
///   editHead(acq, [&](auto& h) { h.position[2] = z; h.scan_counter = n; });
template <class Acquisition, class Edit>
void editHead(Acquisition& a, Edit&& edit) {
  auto head = a.getHead();
  edit(head);
  a.setHead(head);
}

struct Reconstructed {
  Dataset d;
  recon::ReconResult r;
};

/// Shepp-Logan, Cartesian, fully sampled, FFT + sum of squares on the CPU.
inline Reconstructed reconstructPhantom(index_t nx, index_t ny, index_t nz, index_t slices, int coils = 2) {
  phantom::SimulateSettings s;
  s.matrix[0] = nx, s.matrix[1] = ny, s.matrix[2] = nz;
  s.slices = slices;
  s.coils = coils;
  s.sliceThicknessMm = 4;
  Reconstructed out;
  out.d = phantom::simulate(s);
  recon::ReconRequest req;
  req.dataset = &out.d;
  req.device = "cpu";
  req.settings.keepCoilImages = false;
  out.r = recon::run(req);
  return out;
}

/// A smooth phase ramp over the (real) magnitude image, so phase/real/imaginary carry information.
inline void addPhaseRamp(recon::ReconResult& r) {
  const Shape& s = r.image.shape();
  for (index_t i = 0; i < r.image.size(); ++i) {
    const double x = static_cast<double>(i % s[0]) / static_cast<double>(s[0]);
    const double y = static_cast<double>((i / s[0]) % s[1]) / static_cast<double>(s[1]);
    const double phi = 2.8 * (2 * x - 1) + 1.3 * (y - 0.5);
    r.image[i] *= cfloat(static_cast<float>(std::cos(phi)), static_cast<float>(std::sin(phi)));
  }
}

/// An oblique slice group: read/phase rotated about two axes, off-centre, slices `gapMm` apart.
inline void setObliqueGeometry(Header& h, double gapMm) {
  const double a = 0.35, b = -0.6;  // radians about z, then about x
  const double read[3] = {std::cos(a), std::sin(a) * std::cos(b), std::sin(a) * std::sin(b)};
  const double phase[3] = {-std::sin(a), std::cos(a) * std::cos(b), std::cos(a) * std::sin(b)};
  const double slice[3] = {read[1] * phase[2] - read[2] * phase[1], read[2] * phase[0] - read[0] * phase[2],
                           read[0] * phase[1] - read[1] * phase[0]};
  Geometry& g = h.geometry;
  g.present = true;
  const float pos[3] = {12.5f, -30.f, 41.f};
  double along = 0;
  for (int k = 0; k < 3; ++k) {
    g.readDir[k] = static_cast<float>(read[k]);
    g.phaseDir[k] = static_cast<float>(phase[k]);
    g.sliceDir[k] = static_cast<float>(slice[k]);
    g.position[k] = pos[k];
    along += pos[k] * slice[k];
  }
  g.slicePositions.resize(static_cast<std::size_t>(h.slices));
  for (index_t s = 0; s < h.slices; ++s)
    g.slicePositions[static_cast<std::size_t>(s)] =
        static_cast<float>(along + (static_cast<double>(s) - 0.5 * static_cast<double>(h.slices - 1)) * gapMm);
}

/// Centre of slice/slab `s` in LPS mm as the ISMRMRD convention defines it.
inline std::array<double, 3> sliceCentre(const Header& h, index_t s) {
  const Geometry& g = h.geometry;
  double along = 0;
  for (int k = 0; k < 3; ++k) along += g.position[k] * g.sliceDir[k];
  const double shift = g.slicePositions[static_cast<std::size_t>(s)] - along;
  return {g.position[0] + shift * g.sliceDir[0], g.position[1] + shift * g.sliceDir[1],
          g.position[2] + shift * g.sliceDir[2]};
}

inline std::string slurpFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}


}  // namespace larmor::testing
