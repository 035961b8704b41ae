#pragma once
// Drawing into Larmor's own 8-bit pictures (io::Image8, grey or RGB): filled rectangles and text in one 5 x 7
// bitmap font drawn for this project (capitals, digits and the punctuation labels use), each glyph on a
// 6-pixel advance, scaled by a whole factor. The batch's contact sheet and the `larmor-cli bench` chart use it.
#include <cstdint>
#include <string>

#include "larmor/io/png.hpp"

namespace larmor::io {

struct Rgb {
  std::uint8_t r = 0, g = 0, b = 0;
};
constexpr Rgb greyInk(std::uint8_t v) { return {v, v, v}; }

inline constexpr int kGlyphWidth = 5, kGlyphHeight = 7, kGlyphAdvance = 6;

/// The glyph of c: kGlyphHeight rows, bit 4 the leftmost column. Lower case gives the capital; a character
/// the font lacks gives '?'.
const std::uint8_t* glyph5x7(char c);

/// Fills [x0, x1) x [y0, y1), clipped to the image. A grey image takes the ink's luma (Rec. 601), which for
/// a grey ink is its value.
void fillRect(Image8& img, int x0, int y0, int x1, int y1, Rgb ink);

/// Draws `text` with its top-left corner at (x, y), each font pixel `scale` x `scale`, clipped to the image;
/// returns textWidth(text, scale).
int drawText(Image8& img, int x, int y, const std::string& text, Rgb ink, int scale = 1);

/// The width `text` advances at `scale`: kGlyphAdvance * scale per character.
inline int textWidth(const std::string& text, int scale = 1) {
  return static_cast<int>(text.size()) * kGlyphAdvance * scale;
}

}  // namespace larmor::io
