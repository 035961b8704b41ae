#include "larmor/io/png.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

#include "larmor/io/output_safety.hpp"
#include "larmor/util/atomic_file.hpp"

namespace larmor::io {
namespace {

std::uint32_t crc32(const std::uint8_t* p, std::size_t n, std::uint32_t crc = 0xffffffffu) {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  for (std::size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

void put32(std::vector<std::uint8_t>& v, std::uint32_t x) {
  for (int s = 24; s >= 0; s -= 8) v.push_back(static_cast<std::uint8_t>(x >> s));
}

void chunk(std::vector<std::uint8_t>& out, const char* type, const std::vector<std::uint8_t>& data) {
  put32(out, static_cast<std::uint32_t>(data.size()));
  std::vector<std::uint8_t> body(type, type + 4);
  body.insert(body.end(), data.begin(), data.end());
  out.insert(out.end(), body.begin(), body.end());
  put32(out, crc32(body.data(), body.size()) ^ 0xffffffffu);
}

/// Viridis by its published anchor colours, linearly interpolated (16 anchors).
std::array<std::uint8_t, 3> viridis(float t) {
  static const float a[16][3] = {{68, 1, 84},    {72, 26, 108},  {71, 47, 125},  {65, 68, 135},
                                 {57, 86, 140},  {49, 104, 142}, {42, 120, 142}, {35, 136, 142},
                                 {31, 152, 139}, {34, 168, 132}, {53, 183, 121}, {84, 197, 104},
                                 {122, 209, 81}, {165, 219, 54}, {210, 226, 27}, {253, 231, 37}};
  t = std::clamp(t, 0.f, 1.f) * 15.f;
  const int i = std::min(14, static_cast<int>(t));
  const float f = t - static_cast<float>(i);
  std::array<std::uint8_t, 3> c{};
  for (int k = 0; k < 3; ++k) c[k] = static_cast<std::uint8_t>(std::lround(a[i][k] * (1 - f) + a[i + 1][k] * f));
  return c;
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
  std::vector<std::uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<std::uint8_t> ihdr;
  put32(ihdr, static_cast<std::uint32_t>(img.width));
  put32(ihdr, static_cast<std::uint32_t>(img.height));
  ihdr.insert(ihdr.end(), {8, static_cast<std::uint8_t>(img.channels == 3 ? 2 : 0), 0, 0, 0});
  chunk(out, "IHDR", ihdr);
  // Provenance (output_safety.hpp, rule 5): tEXt "Software" = "Larmor VERSION".
  const std::string text = std::string("Software") + '\0' + softwareText();
  chunk(out, "tEXt", std::vector<std::uint8_t>(text.begin(), text.end()));
  // Raw scanlines (filter 0) wrapped in a zlib stream of stored deflate blocks.
  const std::size_t rowBytes = static_cast<std::size_t>(img.width) * img.channels;
  std::vector<std::uint8_t> raw;
  raw.reserve((rowBytes + 1) * img.height);
  for (int y = 0; y < img.height; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), img.pixels.begin() + static_cast<std::ptrdiff_t>(y * rowBytes),
               img.pixels.begin() + static_cast<std::ptrdiff_t>((y + 1) * rowBytes));
  }
  std::vector<std::uint8_t> z = {0x78, 0x01};
  for (std::size_t off = 0; off < raw.size() || off == 0; off += 65535) {
    const std::size_t n = std::min<std::size_t>(65535, raw.size() - off);
    z.push_back(off + n >= raw.size() ? 1 : 0);
    z.push_back(static_cast<std::uint8_t>(n & 0xff));
    z.push_back(static_cast<std::uint8_t>(n >> 8));
    z.push_back(static_cast<std::uint8_t>(~n & 0xff));
    z.push_back(static_cast<std::uint8_t>((~n >> 8) & 0xff));
    z.insert(z.end(), raw.begin() + static_cast<std::ptrdiff_t>(off), raw.begin() + static_cast<std::ptrdiff_t>(off + n));
    if (raw.empty()) break;
  }
  std::uint32_t a = 1, b = 0;
  for (auto byte : raw) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  put32(z, (b << 16) | a);
  chunk(out, "IDAT", z);
  chunk(out, "IEND", {});
  AtomicFile file(path);
  std::ofstream f(file.tempPath(), std::ios::binary);
  f.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
  f.close();
  if (!f.good()) throw Error(path + ": could not write the PNG (" + std::strerror(errno) + ")");
  file.commit();
}

}  // namespace larmor::io
