// PNG output (larmor/io/png.hpp): window/level of a real image to 8 bits through the grey or viridis map, and
// the file written by libpng (zlib deflate at its fastest level, rows filtered Up) with the tEXt "Software"
// chunk that marks it as Larmor's own (output_safety.hpp).
#include "larmor/io/png.hpp"

#include <png.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "larmor/io/output_safety.hpp"
#include "larmor/util/atomic_file.hpp"
#include "larmor_viridis.hpp"  // generated from resources/colormaps/viridis.txt (engine/CMakeLists.txt)

namespace larmor::io {
namespace {

/// libpng's error handler: keeps the reason and jumps back to encode()'s setjmp (libpng is C: no
/// exception may cross it). Warnings (none are expected for 8-bit grey or RGB) are ignored.
struct PngFailure {
  char reason[200] = "";
};
[[noreturn]] void pngError(png_structp png, png_const_charp message) {
  auto* failure = static_cast<PngFailure*>(png_get_error_ptr(png));
  std::snprintf(failure->reason, sizeof failure->reason, "%s", message);
  png_longjmp(png, 1);
}
void pngWarning(png_structp, png_const_charp) {}

/// Encodes `img` into `out` with the tEXt "Software" chunk; returns false with libpng's reason in `failure`.
/// Only plain C objects live in this frame, since longjmp skips destructors.
bool encode(std::FILE* out, const Image8& img, png_bytep const* rows, const char* software, PngFailure& failure) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &failure, pngError, pngWarning);
  if (png == nullptr) {
    std::snprintf(failure.reason, sizeof failure.reason, "libpng could not start");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_init_io(png, out);
  png_set_IHDR(png, info, static_cast<png_uint_32>(img.width), static_cast<png_uint_32>(img.height), 8,
               img.channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  // Provenance (output_safety.hpp, rule 5): tEXt "Software" = "Larmor VERSION", before the pixels.
  png_text text{};
  text.compression = PNG_TEXT_COMPRESSION_NONE;
  text.key = const_cast<png_charp>("Software");
  text.text = const_cast<png_charp>(software);
  png_set_text(png, info, &text, 1);
  // Speed over size: zlib level 1 and every row filtered Up (the row above subtracted) write a noisy 2 MP
  // image in about the time stored (uncompressed) deflate blocks take (22 ms against 19 ms), at 45 % of
  // their size; zlib's default level with libpng's adaptive filters took 7x as long for 8 % less.
  png_set_compression_level(png, 1);
  png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_UP);
  png_set_rows(png, info, const_cast<png_bytepp>(rows));
  png_write_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

constexpr std::size_t kViridisCount = std::size(kViridisAnchors);
/// True when the anchors sit at k / (n - 1), as viridis() assumes (to the file's 6 decimals).
constexpr bool viridisEvenlySpaced() {
  for (std::size_t k = 0; k < kViridisCount; ++k) {
    const double d = kViridisAnchors[k].position - static_cast<double>(k) / static_cast<double>(kViridisCount - 1);
    if (d > 1e-6 || d < -1e-6) return false;
  }
  return true;
}
static_assert(kViridisCount >= 2 && viridisEvenlySpaced(),
              "resources/colormaps/viridis.txt: PNG output expects evenly spaced anchors from 0 to 1");

/// Viridis by its published anchor colours (resources/colormaps/viridis.txt), linearly interpolated.
std::array<std::uint8_t, 3> viridis(float t) {
  constexpr int last = static_cast<int>(kViridisCount) - 1;
  t = std::clamp(t, 0.f, 1.f) * static_cast<float>(last);
  const int i = std::min(last - 1, static_cast<int>(t));
  const float f = t - static_cast<float>(i);
  const ViridisAnchor& a = kViridisAnchors[i];
  const ViridisAnchor& b = kViridisAnchors[i + 1];
  auto mix = [f](float x, float y) { return static_cast<std::uint8_t>(std::lround(x * (1 - f) + y * f)); };
  return {mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b)};
}

void autoWindow(const RArray& image, float& lo, float& hi) {
  if (lo != hi) return;
  std::vector<float> v(image.vec().begin(), image.vec().end());
  v.erase(std::remove_if(v.begin(), v.end(), [](float x) { return !std::isfinite(x); }), v.end());
  lo = 0;
  hi = 1;
  if (v.empty()) return;
  const std::size_t k = std::min(v.size() - 1, static_cast<std::size_t>(0.995 * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  hi = v[k] > 0 ? v[k] : 1;
}

void paint(Image8& img, int x0, const RArray& image, index_t plane, float lo, float hi, Colormap map) {
  const index_t nx = image.shape()[0], ny = image.shape()[1];
  for (index_t y = 0; y < ny; ++y)
    for (index_t x = 0; x < nx; ++x) {
      const float v = image[plane * nx * ny + y * nx + x];
      const float t = std::isfinite(v) ? (v - lo) / (hi - lo) : 0.f;
      std::uint8_t* px = &img.pixels[static_cast<std::size_t>((y * img.width + x0 + x) * img.channels)];
      if (map == Colormap::Grey) {
        px[0] = static_cast<std::uint8_t>(std::lround(255.f * std::clamp(t, 0.f, 1.f)));
      } else {
        const auto c = viridis(t);
        px[0] = c[0], px[1] = c[1], px[2] = c[2];
      }
    }
}

}  // namespace

Image8 render(const RArray& image, index_t plane, float lo, float hi, Colormap map) {
  const index_t nx = image.shape()[0], ny = image.shape()[1];
  require(nx > 0 && ny > 0 && plane >= 0 && plane * nx * ny < image.size(), "render: no such image plane");
  autoWindow(image, lo, hi);
  Image8 img{static_cast<int>(nx), static_cast<int>(ny), map == Colormap::Grey ? 1 : 3, {}};
  img.pixels.assign(static_cast<std::size_t>(nx * ny * img.channels), 0);
  paint(img, 0, image, plane, lo, hi, map);
  return img;
}

Image8 renderMosaic(const RArray& image, float lo, float hi, Colormap map) {
  const index_t nx = image.shape()[0], ny = image.shape()[1];
  require(nx > 0 && ny > 0, "render: empty image");
  const index_t planes = image.size() / (nx * ny);
  autoWindow(image, lo, hi);
  Image8 img{static_cast<int>(nx * planes), static_cast<int>(ny), map == Colormap::Grey ? 1 : 3, {}};
  img.pixels.assign(static_cast<std::size_t>(img.width) * img.height * img.channels, 0);
  for (index_t p = 0; p < planes; ++p) paint(img, static_cast<int>(p * nx), image, p, lo, hi, map);
  return img;
}

void writePng(const std::string& path, const Image8& img) {
  require(img.width > 0 && img.height > 0, path + ": cannot write an empty image");
  require(img.channels == 1 || img.channels == 3, path + ": a PNG is written from grey or RGB pixels");
  const std::size_t rowBytes = static_cast<std::size_t>(img.width) * static_cast<std::size_t>(img.channels);
  require(img.pixels.size() == rowBytes * static_cast<std::size_t>(img.height), path + ": the image has the wrong number of pixels");
  std::vector<png_bytep> rows(static_cast<std::size_t>(img.height));
  for (std::size_t y = 0; y < rows.size(); ++y) rows[y] = const_cast<png_bytep>(img.pixels.data() + y * rowBytes);
  const std::string software = softwareText();
  AtomicFile file(path);
  std::FILE* out = std::fopen(file.tempPath().c_str(), "wb");
  if (out == nullptr) throw Error(path + ": could not write the PNG (" + std::strerror(errno) + ")");
  PngFailure failure;
  const bool encoded = encode(out, img, rows.data(), software.c_str(), failure);
  const bool written = !std::ferror(out);
  const int savedErrno = errno;
  const bool closed = std::fclose(out) == 0;
  if (!encoded) throw Error(path + ": could not write the PNG (libpng: " + failure.reason + ")");
  if (!written || !closed) throw Error(path + ": could not write the PNG (" + std::strerror(written ? errno : savedErrno) + ")");
  file.commit();
}

}  // namespace larmor::io
