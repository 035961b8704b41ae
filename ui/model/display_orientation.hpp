#pragma once
// Which way an image is drawn on screen, and the orientation letters at its edges: one display
// convention for every format (docs/conventions.md, "Display orientation").
//
// Each volume axis (x = readout, y = phase, z = slice/partition) has a direction in the patient's LPS
// frame. With a stated geometry (ISMRMRD acquisition headers, twix, the simulator) they are the read,
// phase and slice directions. Without one the layout of the tools that write the format is assumed:
// ISMRMRD (ismrmrd_generate_cartesian_shepp_logan, Gadgetron) stores y upwards; BART stores dim 0 down
// the rows and dim 1 across (as `bart toimg` and `bart view` draw it).
// A plane is then drawn radiologically (DICOM PS3.3 C.7.6.2.1.1, the console convention): axial with the
// patient's left on the screen's right and anterior up, coronal with left right and superior up,
// sagittal with anterior left and superior up. The screen axes take the volume axis closest to them.
#include <array>
#include <string>

#include "larmor/data/dataset.hpp"

namespace larmor::model {

using Direction = std::array<double, 3>;  ///< unit vector in LPS

struct DisplayOrientation {
  std::array<Direction, 3> axes{{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}};  ///< LPS direction of +x, +y, +z
  std::string basis = "geometry";  ///< "geometry", "ISMRMRD layout (no geometry)", "BART layout (no geometry)"
};

/// The orientation of images reconstructed from `h`, read from `sourcePath` ("" or "simulated": the simulator).
DisplayOrientation displayOrientation(const Header& h, const std::string& sourcePath);

/// How one plane (normal = volume axis `normal`) is drawn: the volume axis along the screen's right and
/// its sign, the one along the screen's up and its sign, and the letters at the four edges.
struct PlaneLayout {
  int right = 0, rightSign = 1, up = 1, upSign = -1;
  char left = 'R', rightLetter = 'L', top = 'A', bottom = 'P';
  std::string name = "Axial";  ///< "Axial", "Coronal", "Sagittal": the plane the normal is closest to
};
PlaneLayout planeLayout(const DisplayOrientation& o, int normal);

/// 'L','R','P','A','S','I': the LPS direction `d` is closest to.
char orientationLetter(const Direction& d);

}  // namespace larmor::model
