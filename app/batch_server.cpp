// larmor-cli batch --server host:port (batch.hpp): each item's file is streamed to a warm reconstruction server
// (larmor-cli serve, docs/streaming.md), with the item's settings (the batch's, then its overrides) as the
// CONFIG_TEXT message, instead of being reconstructed in this process; the images that come back become the
// item's frames and are written as batch writes them (journal, outputs, thumbnails, summary). The server's
// device start is paid once for a whole cohort, not once per process; it deals the slices over its devices.
#include <string>

#include "batch.hpp"
#include "cli_serve.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/util/error.hpp"
#include "larmor/util/provenance.hpp"

namespace larmor::cli {

namespace {

/// The images of frame `key`, stacked [x, y, z, 1, slices] by slice index, as recon's image of that frame.
CArray frameImage(const ScanReply& r, const io::FrameKey& key, index_t expected, const std::string& where,
                  std::size_t& used) {
  std::vector<const CArray*> slices;
  for (const auto& [k, img] : r.images) {
    const auto& [slice, contrast, phase, repetition, set] = k;
    if (contrast != key.contrast || phase != key.phase || repetition != key.repetition || set != key.set) continue;
    require(slice == static_cast<int>(slices.size()), where + ": the server sent no image of slice " +
                                                          std::to_string(slices.size()) + " (" + key.str() + ")");
    require(slices.empty() || img.shape() == slices.front()->shape(), where + ": the server's images differ in size");
    slices.push_back(&img);
  }
  require(static_cast<index_t>(slices.size()) == expected, where + ": the server sent " + std::to_string(slices.size()) +
                                                               " slices of " + key.str() + ", the file holds " +
                                                               std::to_string(expected));
  used += slices.size();
  const Shape one = slices.front()->shape();
  CArray out(Shape{one[0], one[1], one[2], 1, static_cast<index_t>(slices.size())});
  for (std::size_t s = 0; s < slices.size(); ++s)
    std::copy_n(slices[s]->data(), slices[s]->size(), out.data() + static_cast<index_t>(s) * slices[s]->size());
  return out;
}

/// streamScan, its connection's errors named as the --server's.
ScanReply scanOn(const ScanRequest& q) {
  try {
    return streamScan(q);
  } catch (const Error& e) {
    const std::string why = e.what(), own = q.to + ": ";
    if (why.rfind(own, 0) != 0) throw;
    throw Error("--server " + q.to + ": " + why.substr(own.size()));
  }
}

}  // namespace

BatchReconstruct serverReconstruction(const std::string& to, int timeoutS) {
  return [to, timeoutS](const batch::Item& item, const batch::ItemSettings& is, const io::Series& series,
                        std::mutex& fileLock) {
    // A series that batch solves jointly (recon/dynamic.hpp) the server solves jointly too, at the scan's end.
    ScanRequest q;
    q.input = item.input, q.trajectory = is.trajectory, q.to = to, q.timeoutS = timeoutS;
    q.fileLock = &fileLock;
    q.configText = batch::settingsFileJson(is.settings, is.trajectory).dump();
    const ScanReply r = scanOn(q);
    if (!r.errors.empty()) throw Error("--server " + to + ": " + r.errors.front());
    require(r.closed, "--server " + to + ": the server ended the connection without CLOSE");
    std::vector<recon::ReconResult> frames;
    std::size_t used = 0;
    for (std::size_t k = 0; k < series.keys.size(); ++k) {
      recon::ReconResult f;
      f.image = frameImage(r, series.keys[k], series.frames[k].kspace.shape()[4], "--server " + to, used);
      f.device = "server " + to;
      f.provenance = provenance(recon::toJson(is.settings), f.device, "", f.timings, item.input);
      frames.push_back(std::move(f));
    }
    require(used == r.images.size(), "--server " + to + ": the server sent " + std::to_string(r.images.size()) +
                                         " images, the file's frames hold " + std::to_string(used) + " slices");
    return frames;
  };
}

}  // namespace larmor::cli
