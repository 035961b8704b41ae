// The PNG bar chart of `larmor-cli bench --chart` (larmor/bench/bench.hpp): one row per workload, time in ms
// on a logarithmic axis (a decade every gridline), two horizontal bars (device-resident median, blue;
// host in -> host out median, orange) and the device limit as a black mark across the row (host-to-host limit:
// a grey mark). Simple raster drawing into an RGB io::Image8 with the engine's one font and rectangles
// (larmor/io/raster_text.hpp: labels at twice the font's size); written with its PNG writer (io/png.cpp).
#include <algorithm>
#include <cmath>
#include <string>

#include "bench_internal.hpp"
#include "larmor/bench/bench.hpp"
#include "larmor/io/png.hpp"
#include "larmor/io/raster_text.hpp"

namespace larmor::recon {

namespace {

using io::Rgb;
constexpr Rgb kBlack{0, 0, 0}, kGrid{220, 220, 220}, kDevice{52, 101, 164},
    kHost{230, 140, 40}, kHostLimit{130, 130, 130}, kText{30, 30, 30};
constexpr int kTextScale = 2;  ///< the font's pixels at twice their size

/// A white RGB picture with rectangles and labels (larmor/io/raster_text.hpp).
class Canvas {
 public:
  Canvas(int w, int h) {
    img_.width = w, img_.height = h, img_.channels = 3;
    img_.pixels.assign(static_cast<std::size_t>(w) * h * 3, 255);
  }
  void fill(int x0, int y0, int x1, int y1, Rgb c) { io::fillRect(img_, x0, y0, x1, y1, c); }  // [x0, x1) x [y0, y1)
  /// Text with its top-left corner at (x, y); returns the width drawn.
  int text(int x, int y, const std::string& s, Rgb c) { return io::drawText(img_, x, y, s, c, kTextScale); }
  static int textWidth(const std::string& s) { return io::textWidth(s, kTextScale); }
  const io::Image8& image() const { return img_; }

 private:
  io::Image8 img_;
};

double num(const nlohmann::json& j) { return j.is_number() ? j.get<double>() : bench::kNaN; }

std::string decadeLabel(int e) {
  if (e >= 0) return "1" + std::string(static_cast<std::size_t>(e), '0');
  return "0." + std::string(static_cast<std::size_t>(-e - 1), '0') + "1";
}

}  // namespace

void writeBenchChart(const std::string& path, const nlohmann::json& r) {
  const auto& results = r.at("results");
  // The axis spans every finite positive time and limit, widened to whole decades.
  double lo = 1e300, hi = 0;
  auto take = [&](double v) {
    if (std::isfinite(v) && v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  };
  std::size_t labelChars = 8;
  for (const auto& w : results) {
    take(num(w["device_ms"]["median"]));
    take(num(w["host_to_host_ms"]["median"]));
    take(num(w["limit"]["device_ms"]));
    take(num(w["limit"]["host_to_host_ms"]));
    labelChars = std::max(labelChars, w.value("name", std::string()).size());
  }
  if (hi <= 0) lo = 1e-3, hi = 1;
  const int eLo = static_cast<int>(std::floor(std::log10(lo))), eHi = std::max(eLo + 1, static_cast<int>(std::ceil(std::log10(hi))));

  const int rowH = 34, left = Canvas::textWidth(std::string(labelChars + 1, ' ')) + 10, plotW = 900, top = 80;
  const int rows = std::max<int>(1, static_cast<int>(results.size()));
  const int width = left + plotW + 40, height = top + rows * rowH + 60;
  Canvas cv(width, height);
  const auto& dev = r.at("device");
  cv.text(10, 10, "larmor-cli bench " + r.value("suite", std::string("?")) + (r.value("quick", false) ? " quick" : "") +
                       " on " + dev.value("id", std::string("?")) + ": " + dev.value("name", std::string("?")),
          kText);
  // Legend.
  int lx = 10;
  const int ly = 40;
  cv.fill(lx, ly, lx + 24, ly + 12, kDevice);
  lx += 30 + cv.text(lx + 30, ly - 1, "device", kText);
  cv.fill(lx + 20, ly, lx + 44, ly + 12, kHost);
  lx += 50 + cv.text(lx + 50, ly - 1, "host to host", kText);
  cv.fill(lx + 30, ly - 3, lx + 33, ly + 15, kBlack);
  lx += 40 + cv.text(lx + 40, ly - 1, "device limit", kText);
  cv.fill(lx + 30, ly - 3, lx + 33, ly + 15, kHostLimit);
  cv.text(lx + 40, ly - 1, "host limit   ms, log scale", kText);

  const double decades = eHi - eLo;
  auto xOf = [&](double v) {
    return left + static_cast<int>(std::lround((std::log10(v) - eLo) / decades * plotW));
  };
  const int plotTop = top, plotBottom = top + rows * rowH;
  for (int e = eLo; e <= eHi; ++e) {
    const int x = xOf(std::pow(10.0, e));
    cv.fill(x, plotTop, x + 1, plotBottom, kGrid);
    const std::string label = decadeLabel(e);
    cv.text(x - Canvas::textWidth(label) / 2, plotBottom + 8, label, kText);
  }
  int y = top;
  for (const auto& w : results) {
    cv.text(10, y + rowH / 2 - 7, w.value("name", std::string("?")), kText);
    const double d = num(w["device_ms"]["median"]), h = num(w["host_to_host_ms"]["median"]);
    if (std::isfinite(d) && d > 0) cv.fill(left, y + 5, std::max(left + 1, xOf(d)), y + 15, kDevice);
    if (std::isfinite(h) && h > 0) cv.fill(left, y + 17, std::max(left + 1, xOf(h)), y + 27, kHost);
    const double ld = num(w["limit"]["device_ms"]), lh = num(w["limit"]["host_to_host_ms"]);
    if (std::isfinite(lh) && lh > 0) cv.fill(xOf(lh) - 1, y + 15, xOf(lh) + 2, y + 30, kHostLimit);
    if (std::isfinite(ld) && ld > 0) cv.fill(xOf(ld) - 1, y + 2, xOf(ld) + 2, y + 17, kBlack);
    y += rowH;
  }
  cv.fill(left, plotTop, left + 1, plotBottom, kBlack);
  cv.fill(left, plotBottom, left + plotW + 1, plotBottom + 1, kBlack);
  io::writePng(path, cv.image());
}

}  // namespace larmor::recon
