// Larmor's one bitmap font and its drawing (larmor/io/raster_text.hpp): glyphs, '?' for characters the font
// lacks, grey and RGB inks, scale, clipping at the edges; and the batch's contact sheet writes its labels with
// it (the same pixels as io::drawText), as the `larmor-cli bench` chart does.
#include <gtest/gtest.h>

#include <string>

#include "larmor/batch/contact_sheet.hpp"
#include "larmor/io/raster_text.hpp"

using namespace larmor;

namespace {

io::Image8 blank(int w, int h, int channels) {
  io::Image8 img{w, h, channels, {}};
  img.pixels.assign(static_cast<std::size_t>(w) * h * channels, 0);
  return img;
}

std::string rows(char c) {
  const std::uint8_t* g = io::glyph5x7(c);
  return std::string(g, g + io::kGlyphHeight);
}

int lit(const io::Image8& img) {
  int n = 0;
  for (auto p : img.pixels) n += p != 0;
  return n;
}

}  // namespace

TEST(RasterText, GlyphsCaseAndCharactersTheFontLacks) {
  const std::uint8_t* l = io::glyph5x7('L');
  for (int r = 0; r < 6; ++r) EXPECT_EQ(l[r], 0x10) << r;  // the left column
  EXPECT_EQ(l[6], 0x1F);                                    // and the bottom row
  EXPECT_EQ(rows('l'), rows('L'));
  for (char c : {'~', '@', '\x7f', '\xe9'}) EXPECT_EQ(rows(c), rows('?')) << static_cast<int>(c);
  for (char c : {'0', '9', '-', '.', ' '}) EXPECT_NE(rows(c), rows('?')) << c;
}

TEST(RasterText, InksScaleWidthAndClipping) {
  io::Image8 rgb = blank(20, 10, 3);
  EXPECT_EQ(io::drawText(rgb, 0, 0, "I", io::Rgb{10, 20, 30}, 1), io::kGlyphAdvance);
  // 'I': ".###." on top, its stem at column 2.
  const auto* p = &rgb.pixels[(0 * 20 + 1) * 3];
  EXPECT_EQ(p[0], 10);
  EXPECT_EQ(p[1], 20);
  EXPECT_EQ(p[2], 30);
  EXPECT_EQ(rgb.pixels[(3 * 20 + 2) * 3 + 1], 20);
  EXPECT_EQ(rgb.pixels[(3 * 20 + 1) * 3 + 1], 0);

  io::Image8 grey = blank(20, 10, 1);
  io::drawText(grey, 0, 0, "I", io::Rgb{255, 0, 0}, 1);
  EXPECT_EQ(grey.pixels[1], 76);  // Rec. 601 luma of pure red
  io::fillRect(grey, 0, 0, 2, 2, io::greyInk(200));
  EXPECT_EQ(grey.pixels[0], 200);

  io::Image8 big = blank(40, 40, 1);
  EXPECT_EQ(io::drawText(big, 0, 0, "I", io::greyInk(9), 3), 3 * io::kGlyphAdvance);
  EXPECT_EQ(lit(big), 9 * (3 + 5 + 3));  // 'I' has 11 lit font pixels, each 3 x 3
  EXPECT_EQ(io::textWidth("abc", 2), 3 * io::kGlyphAdvance * 2);

  io::Image8 small = blank(4, 4, 1);  // text running off every edge is cut, never written outside
  io::drawText(small, -3, -3, "HHH", io::greyInk(255), 2);
  io::fillRect(small, -10, 2, 100, 3, io::greyInk(255));
  EXPECT_EQ(small.pixels.size(), 16u);
  EXPECT_GT(lit(small), 0);
}

TEST(RasterText, TheContactSheetLabelsAreDrawnInThisFont) {
  io::Image8 thumb = blank(8, 8, 1);
  const std::string label = "D3./a_b";  // D, 3, . and / were drawn otherwise by the former contact-sheet font
  const io::Image8 sheet = batch::contactSheet({batch::Tile{label, thumb}}, 64);
  // One tile: pad 4, the label 3 pixels under the cell, on the sheet's background (24).
  io::Image8 expect{sheet.width, sheet.height, 1, std::vector<std::uint8_t>(sheet.pixels.size(), 24)};
  io::drawText(expect, 4, 4 + 64 + 3, label, io::greyInk(220));
  for (int y = 4 + 64; y < sheet.height; ++y)
    for (int x = 0; x < sheet.width; ++x) {
      const std::size_t i = static_cast<std::size_t>(y * sheet.width + x);
      ASSERT_EQ(sheet.pixels[i], expect.pixels[i]) << "label pixel " << x << ", " << y;
    }
}
