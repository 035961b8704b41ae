// The display convention: volume axes in LPS and the radiological layout of a plane (display_orientation.hpp).
#include "display_orientation.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace larmor::model {

namespace {

double dot(const Direction& a, const Direction& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

Direction negated(const Direction& d) { return {-d[0], -d[1], -d[2]}; }

int dominant(const Direction& d) {
  int k = 0;
  for (int i = 1; i < 3; ++i)
    if (std::abs(d[static_cast<std::size_t>(i)]) > std::abs(d[static_cast<std::size_t>(k)])) k = i;
  return k;
}

bool usable(const float* v) {
  const double n = std::sqrt(double(v[0]) * v[0] + double(v[1]) * v[1] + double(v[2]) * v[2]);
  return std::isfinite(n) && n > 0.5;
}

Direction unit(const float* v) {
  const double n = std::sqrt(double(v[0]) * v[0] + double(v[1]) * v[1] + double(v[2]) * v[2]);
  return {v[0] / n, v[1] / n, v[2] / n};
}

std::string lowerExtension(const std::string& path) {
  std::string e = std::filesystem::path(path).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return e;
}

}  // namespace

char orientationLetter(const Direction& d) {
  const int k = dominant(d);
  const bool positive = d[static_cast<std::size_t>(k)] >= 0;
  static const char plus[] = {'L', 'P', 'S'}, minus[] = {'R', 'A', 'I'};
  return positive ? plus[k] : minus[k];
}

DisplayOrientation displayOrientation(const Header& h, const std::string& sourcePath) {
  DisplayOrientation o;
  const Geometry& g = h.geometry;
  if (g.present && usable(g.readDir) && usable(g.phaseDir) && usable(g.sliceDir)) {
    o.axes = {unit(g.readDir), unit(g.phaseDir), unit(g.sliceDir)};
    o.basis = "geometry";
    return o;
  }
  const std::string ext = lowerExtension(sourcePath);
  if (ext == ".cfl" || ext == ".hdr") {
    o.axes = {Direction{0, 1, 0}, Direction{1, 0, 0}, Direction{0, 0, 1}};  // dim 0 down the rows, dim 1 across
    o.basis = "BART layout (no geometry)";
  } else if (!sourcePath.empty() && sourcePath != "simulated") {
    o.axes = {Direction{1, 0, 0}, Direction{0, -1, 0}, Direction{0, 0, 1}};  // y upwards
    o.basis = "ISMRMRD layout (no geometry)";
  } else {
    o.basis = "simulator";
  }
  return o;
}

PlaneLayout planeLayout(const DisplayOrientation& o, int normal) {
  normal = std::clamp(normal, 0, 2);
  const auto& ax = o.axes;
  // The plane's kind from its normal; the desired screen right and down in LPS for that kind.
  const int kind = dominant(ax[static_cast<std::size_t>(normal)]);  // 0: sagittal, 1: coronal, 2: axial
  Direction wantRight{1, 0, 0}, wantDown{0, 1, 0};
  PlaneLayout p;
  if (kind == 2) {
    p.name = "Axial";
  } else if (kind == 1) {
    p.name = "Coronal";
    wantDown = {0, 0, -1};
  } else {
    p.name = "Sagittal";
    wantRight = {0, 1, 0};
    wantDown = {0, 0, -1};
  }
  const int a = normal == 0 ? 1 : 0, b = normal == 2 ? 1 : 2;  // the in-plane axes, in index order
  const double da = dot(ax[static_cast<std::size_t>(a)], wantRight), db = dot(ax[static_cast<std::size_t>(b)], wantRight);
  p.right = std::abs(db) > std::abs(da) + 1e-9 ? b : a;
  p.up = p.right == a ? b : a;
  const double r = dot(ax[static_cast<std::size_t>(p.right)], wantRight);
  const double down = dot(ax[static_cast<std::size_t>(p.up)], wantDown);
  p.rightSign = r < 0 ? -1 : 1;
  p.upSign = down > 0 ? -1 : (down < 0 ? 1 : -1);  // an axis along the screen's down is drawn growing downwards
  Direction screenRight = ax[static_cast<std::size_t>(p.right)], screenUp = ax[static_cast<std::size_t>(p.up)];
  if (p.rightSign < 0) screenRight = negated(screenRight);
  if (p.upSign < 0) screenUp = negated(screenUp);
  p.rightLetter = orientationLetter(screenRight);
  p.left = orientationLetter(negated(screenRight));
  p.top = orientationLetter(screenUp);
  p.bottom = orientationLetter(negated(screenUp));
  return p;
}

}  // namespace larmor::model
