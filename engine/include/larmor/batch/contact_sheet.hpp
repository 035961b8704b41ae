#pragma once
// The contact sheet of a batch: every result's magnitude as a thumbnail in a grid, its name below it
// (drawn in Larmor's 5x7 bitmap font, larmor/io/raster_text.hpp: capitals, digits and punctuation; other
// characters as '?'), failed items as a dark tile with "FAILED". Written as PNG by io::writePng.
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

/// Thumbnails are kept as binary PGM (P5) files beside the journal, so the sheet can show the results
/// of earlier runs and of other shards. Written atomically; read throws Error naming the file.
void writePgm(const std::string& path, const io::Image8& img);
io::Image8 readPgm(const std::string& path);

}  // namespace larmor::batch
