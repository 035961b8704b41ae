// The batch's contact sheet (larmor/batch/contact_sheet.hpp): thumbnails in a grid with their names in
// Larmor's 5x7 bitmap font (larmor/io/raster_text.hpp: capitals, digits, a little punctuation), and the PGM
// thumbnails the runner keeps beside the journal (Netpbm P5: "P5\n<w> <h>\n255\n" then the bytes, rows top
// to bottom).
#include "larmor/batch/contact_sheet.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "larmor/io/raster_text.hpp"
#include "larmor/util/atomic_file.hpp"
#include "larmor/util/error.hpp"

namespace larmor::batch {
namespace {

/// Labels in the engine's one font (larmor/io/raster_text.hpp), at its own size.
constexpr int kLabelHeight = io::kGlyphHeight;

}  // namespace

io::Image8 thumbnail(const io::Image8& full, int size) {
  require(full.channels == 1 && full.width > 0 && full.height > 0, "thumbnail: expected a grey image");
  const double f = std::max(1.0, std::max(full.width, full.height) / static_cast<double>(size));
  io::Image8 t;
  t.width = std::max(1, static_cast<int>(std::floor(full.width / f)));
  t.height = std::max(1, static_cast<int>(std::floor(full.height / f)));
  t.pixels.assign(static_cast<std::size_t>(t.width * t.height), 0);
  for (int y = 0; y < t.height; ++y)
    for (int x = 0; x < t.width; ++x) {  // box average over the source pixels this one covers
      const int xa = static_cast<int>(x * f), xb = std::max(xa + 1, std::min(full.width, static_cast<int>((x + 1) * f)));
      const int ya = static_cast<int>(y * f), yb = std::max(ya + 1, std::min(full.height, static_cast<int>((y + 1) * f)));
      double sum = 0;
      for (int yy = ya; yy < yb; ++yy)
        for (int xx = xa; xx < xb; ++xx) sum += full.pixels[static_cast<std::size_t>(yy * full.width + xx)];
      t.pixels[static_cast<std::size_t>(y * t.width + x)] =
          static_cast<std::uint8_t>(std::lround(sum / ((xb - xa) * (yb - ya))));
    }
  return t;
}

io::Image8 contactSheet(const std::vector<Tile>& tiles, int cell) {
  const int n = std::max<int>(1, static_cast<int>(tiles.size()));
  const int cols = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n))));
  const int rows = (n + cols - 1) / cols;
  const int pad = 4, label = kLabelHeight + 4, w = cell + 2 * pad, h = cell + 2 * pad + label;
  io::Image8 sheet;
  sheet.width = cols * w;
  sheet.height = rows * h;
  sheet.pixels.assign(static_cast<std::size_t>(sheet.width * sheet.height), 24);
  for (int i = 0; i < static_cast<int>(tiles.size()); ++i) {
    const int cx = (i % cols) * w + pad, cy = (i / cols) * h + pad;
    const Tile& t = tiles[static_cast<std::size_t>(i)];
    if (t.thumbnail.width > 0) {
      io::Image8 th = t.thumbnail.width > cell || t.thumbnail.height > cell ? thumbnail(t.thumbnail, cell)
                                                                            : t.thumbnail;
      // Small images (32^2) are enlarged by a whole factor, pixel for pixel.
      if (const int k = cell / std::max(th.width, th.height); k > 1) {
        io::Image8 big;
        big.width = th.width * k, big.height = th.height * k;
        big.pixels.resize(static_cast<std::size_t>(big.width * big.height));
        for (int y = 0; y < big.height; ++y)
          for (int x = 0; x < big.width; ++x)
            big.pixels[static_cast<std::size_t>(y * big.width + x)] = th.pixels[static_cast<std::size_t>((y / k) * th.width + x / k)];
        th = std::move(big);
      }
      const int ox = cx + (cell - th.width) / 2, oy = cy + (cell - th.height) / 2;
      for (int y = 0; y < th.height; ++y)
        std::memcpy(&sheet.pixels[static_cast<std::size_t>((oy + y) * sheet.width + ox)],
                    &th.pixels[static_cast<std::size_t>(y * th.width)], static_cast<std::size_t>(th.width));
    } else {
      for (int y = cy; y < cy + cell; ++y)
        std::fill_n(&sheet.pixels[static_cast<std::size_t>(y * sheet.width + cx)], cell, std::uint8_t{48});
      const std::string failed = "FAILED";
      io::drawText(sheet, cx + (cell - io::textWidth(failed)) / 2, cy + cell / 2 - 3, failed, io::greyInk(230));
    }
    // The name, cut to the cell's width (the full names are in summary.json).
    const std::size_t fit = static_cast<std::size_t>(cell / io::kGlyphAdvance);
    std::string text = t.label.size() > fit ? t.label.substr(0, fit - 1) + "+" : t.label;
    io::drawText(sheet, cx, cy + cell + 3, text, io::greyInk(220));
  }
  return sheet;
}

void writePgm(const std::string& path, const io::Image8& img) {
  require(img.channels == 1, path + ": a PGM thumbnail is grey");
  AtomicFile file(path);
  {
    std::ofstream out(file.tempPath(), std::ios::binary);
    out << "P5\n" << img.width << " " << img.height << "\n255\n";
    out.write(reinterpret_cast<const char*>(img.pixels.data()), static_cast<std::streamsize>(img.pixels.size()));
    require(static_cast<bool>(out), path + ": cannot write the thumbnail");
  }
  file.commit();
}

io::Image8 readPgm(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require(static_cast<bool>(in), path + ": cannot read the thumbnail");
  std::string magic;
  int w = 0, h = 0, maxv = 0;
  in >> magic >> w >> h >> maxv;
  require(magic == "P5" && w > 0 && h > 0 && w <= 65536 && h <= 65536 && maxv == 255, path + ": not a Larmor thumbnail");
  in.get();
  io::Image8 img;
  img.width = w, img.height = h, img.channels = 1;
  img.pixels.resize(static_cast<std::size_t>(w) * static_cast<std::size_t>(h));
  in.read(reinterpret_cast<char*>(img.pixels.data()), static_cast<std::streamsize>(img.pixels.size()));
  require(in.gcount() == static_cast<std::streamsize>(img.pixels.size()), path + ": truncated thumbnail");
  return img;
}

}  // namespace larmor::batch
