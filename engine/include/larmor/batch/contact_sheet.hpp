#pragma once
// The contact sheet of a batch: every result's magnitude as a thumbnail in a grid, its name below it
// (drawn with a built-in 5x7 bitmap font: capitals, digits and - _ . + : / ( )), failed items as a
// dark tile with "FAILED". Written as PNG by io::writePng.
#include <string>
#include <vector>

#include "larmor/io/png.hpp"

namespace larmor::batch {

struct Tile {
  std::string label;
  io::Image8 thumbnail;  ///< grey; empty (width 0) for a failed or missing result
};

/// A grey thumbnail of at most `size` x `size` pixels of the image's magnitude ([x, y, z, 1, slices]):
/// the middle slice (or partition), automatic window, box-averaged down.
io::Image8 thumbnail(const io::Image8& full, int size);

/// The grid: ceil(sqrt(n)) columns of cells `cell` pixels wide with a label row each.
io::Image8 contactSheet(const std::vector<Tile>& tiles, int cell = 96);

/// Draws `text` at (x, y) (top left) in value `grey` (grey images) with scale `scale`; characters the
/// font lacks are drawn as '?'. Lower case is drawn as capitals. Clipped to the image.
void drawText(io::Image8& img, int x, int y, const std::string& text, std::uint8_t grey, int scale = 1);

/// Thumbnails are kept as binary PGM (P5) files beside the journal, so the sheet can show the results
/// of earlier runs and of other shards. Written atomically; read throws Error naming the file.
void writePgm(const std::string& path, const io::Image8& img);
io::Image8 readPgm(const std::string& path);

}  // namespace larmor::batch
