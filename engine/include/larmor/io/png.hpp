#pragma once
// PNG output of images (written by libpng, deflate-compressed, with Larmor's tEXt "Software" provenance),
// window/level to 8 bits, grey and viridis colour maps.
#include <cstdint>
#include <string>
#include <vector>

#include "larmor/array/array.hpp"

namespace larmor::io {

enum class Colormap { Grey, Viridis };

/// 8-bit image, rows top to bottom; channels 1 (grey) or 3 (RGB).
struct Image8 {
  int width = 0, height = 0, channels = 1;
  std::vector<std::uint8_t> pixels;
};

/// One 2D plane of a real image (plane index over dims >= 2) mapped through [lo, hi]; when lo == hi
/// the window is automatic: [0, 99.5th percentile]. Image row 0 is the top: y grows downwards in the
/// picture as it does in the array (radiological display is the viewer's concern, not the file's).
Image8 render(const RArray& image, index_t plane, float lo = 0, float hi = 0, Colormap map = Colormap::Grey);
/// The planes side by side (a mosaic), for multi-slice data.
Image8 renderMosaic(const RArray& image, float lo = 0, float hi = 0, Colormap map = Colormap::Grey);
/// Written atomically (8-bit grey or RGB, with tEXt "Software" = softwareText()); throws Error naming the file.
void writePng(const std::string& path, const Image8& img);

}  // namespace larmor::io
