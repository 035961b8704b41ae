// PNG output (larmor/io/png.hpp, engine/src/io/png.cpp): the file is deflate-compressed (smaller than its raw
// scanlines, which stored blocks never are), decodes through an independent reader (libpng's simplified read API)
// to exactly the pixels written, grey and RGB, and carries the tEXt "Software" = "Larmor ..." provenance chunk
// before the pixels, which output safety reads to recognise our own files. Its viridis is the workstation's:
// the anchors of resources/colormaps/viridis.txt.
#include <gtest/gtest.h>

#include <png.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "larmor/io/output_safety.hpp"
#include "larmor/io/png.hpp"
#include "larmor/util/error.hpp"
#include "support/scratch_files.hpp"

using namespace larmor;
using larmor::testing::bytes;

namespace {

/// A smooth picture: what reconstructed images and charts mostly are.
io::Image8 gradient(int w, int h, int channels) {
  io::Image8 img{w, h, channels, {}};
  img.pixels.resize(static_cast<std::size_t>(w) * h * channels);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c)
        img.pixels[(static_cast<std::size_t>(y) * w + x) * channels + c] = static_cast<std::uint8_t>((x + 2 * y + 50 * c) % 256);
  return img;
}

/// The pixels as libpng decodes them, in the image's own format; the format read from the file's header.
std::vector<std::uint8_t> decode(const std::string& path, int& width, int& height, int& channels) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  EXPECT_NE(png_image_begin_read_from_file(&image, path.c_str()), 0) << image.message;
  width = static_cast<int>(image.width), height = static_cast<int>(image.height);
  channels = (image.format & PNG_FORMAT_FLAG_COLOR) ? 3 : 1;
  image.format = channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  std::vector<std::uint8_t> pixels(PNG_IMAGE_SIZE(image));
  EXPECT_NE(png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr), 0) << image.message;
  return pixels;
}

std::uint32_t be32(const std::string& b, std::size_t at) {
  return (std::uint32_t(std::uint8_t(b[at])) << 24) | (std::uint32_t(std::uint8_t(b[at + 1])) << 16) |
         (std::uint32_t(std::uint8_t(b[at + 2])) << 8) | std::uint32_t(std::uint8_t(b[at + 3]));
}

/// The chunk types in file order, and the text of the first tEXt chunk.
std::vector<std::string> chunks(const std::string& file, std::string& text) {
  std::vector<std::string> types;
  for (std::size_t pos = 8; pos + 12 <= file.size();) {
    const std::uint32_t n = be32(file, pos);
    types.push_back(file.substr(pos + 4, 4));
    if (types.back() == "tEXt" && text.empty()) text = file.substr(pos + 8, n);
    pos += 12 + n;
  }
  return types;
}

}  // namespace

TEST(IoPng, CompressedAndDecodedToThePixelsWritten) {
  const std::string dir = larmor::testing::scratchDir("png", "roundtrip");
  for (int channels : {1, 3}) {
    const io::Image8 img = gradient(300, 200, channels);
    const std::string path = dir + "/g" + std::to_string(channels) + ".png";
    io::writePng(path, img);
    const std::size_t raw = static_cast<std::size_t>(img.width * img.channels + 1) * img.height;
    EXPECT_LT(bytes(path).size(), raw / 4) << "not compressed (" << channels << " channels)";
    int w = 0, h = 0, ch = 0;
    const std::vector<std::uint8_t> back = decode(path, w, h, ch);
    EXPECT_EQ(w, img.width);
    EXPECT_EQ(h, img.height);
    EXPECT_EQ(ch, channels);
    EXPECT_EQ(back, img.pixels);
  }
}

TEST(IoPng, SoftwareTextBeforeThePixels) {
  const std::string path = larmor::testing::scratchDir("png", "text") + "/t.png";
  io::writePng(path, gradient(16, 8, 1));
  std::string text;
  const std::vector<std::string> types = chunks(bytes(path), text);
  ASSERT_GE(types.size(), 4u);
  EXPECT_EQ(types.front(), "IHDR");
  EXPECT_EQ(types.back(), "IEND");
  EXPECT_EQ(text, std::string("Software") + '\0' + io::softwareText());
  EXPECT_EQ(text.find(std::string("Software") + '\0' + "Larmor"), 0u);
  std::size_t textAt = types.size(), idatAt = types.size();
  for (std::size_t i = types.size(); i-- > 0;) {
    if (types[i] == "tEXt") textAt = i;
    if (types[i] == "IDAT") idatAt = i;
  }
  EXPECT_LT(textAt, idatAt);
}

TEST(IoPng, EmptyOrMalformedImagesAndMissingFoldersFailNamingTheFile) {
  const std::string dir = larmor::testing::scratchDir("png", "errors");
  auto message = [](const std::string& path, const io::Image8& img) {
    try {
      io::writePng(path, img);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message(dir + "/e.png", io::Image8{}).find(dir + "/e.png"), std::string::npos);
  io::Image8 wrong = gradient(4, 4, 1);
  wrong.pixels.pop_back();
  EXPECT_NE(message(dir + "/w.png", wrong).find(dir + "/w.png"), std::string::npos);
  EXPECT_NE(message(dir + "/no/such/m.png", gradient(4, 4, 3)).find("m.png"), std::string::npos);
}

TEST(IoPng, ViridisIsTheWorkstationsColormapFile) {
  // The anchors as the viewer reads them (ui/colormaps.cpp): "position r g b" lines, '#' comments.
  std::ifstream file(std::string(LARMOR_TEST_DATA) + "/../../../resources/colormaps/viridis.txt");
  ASSERT_TRUE(file.good());
  std::vector<std::vector<int>> anchors;
  for (std::string line; std::getline(file, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    double position = 0;
    int r = 0, g = 0, b = 0;
    ASSERT_TRUE(static_cast<bool>(in >> position >> r >> g >> b)) << line;
    anchors.push_back({r, g, b});
  }
  ASSERT_GE(anchors.size(), 2u);
  // One pixel per anchor position, window [0, 1]: each pixel is its anchor's colour.
  const index_t n = static_cast<index_t>(anchors.size());
  RArray ramp(Shape{n, 1});
  for (index_t k = 0; k < n; ++k) ramp[k] = static_cast<float>(k) / static_cast<float>(n - 1);
  const io::Image8 img = io::render(ramp, 0, 0.f, 1.f, io::Colormap::Viridis);
  ASSERT_EQ(img.channels, 3);
  for (index_t k = 0; k < n; ++k)
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(img.pixels[static_cast<std::size_t>(k * 3 + c)], anchors[static_cast<std::size_t>(k)][static_cast<std::size_t>(c)])
          << "anchor " << k << " channel " << c;
}
