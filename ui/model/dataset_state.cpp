// The dataset's source, description, truth and voxel size (dataset_state.hpp).
#include "dataset_state.hpp"

#include <algorithm>
#include <filesystem>

#include "larmor/quality/display.hpp"

namespace larmor::model {

DataSource DataSource::file(std::string path) {
  DataSource s;
  s.path = std::move(path);
  return s;
}

DataSource DataSource::simulated(const phantom::SimulateSettings& settings) {
  DataSource s;
  s.phantom = settings;
  return s;
}

std::string DataSource::name() const {
  return isFile() ? std::filesystem::path(path).filename().string() : std::string("phantom");
}

std::string LoadedDataset::description() const {
  if (!dataset) return "no data";
  const Header& h = dataset->header;
  return toString(h.trajectory) + ", k-space " + dataset->kspace.shape().str() + ", " + std::to_string(h.coils) +
         " coils";
}

std::array<double, 3> LoadedDataset::voxelSpacing(const Shape& shape) const {
  std::array<double, 3> sp{1, 1, 1};
  if (!dataset) return sp;
  const Header& h = dataset->header;
  for (int i = 0; i < 2; ++i)
    if (shape[i] > 0) sp[i] = h.reconFovMm[i] / static_cast<double>(shape[i]);
  sp[2] = shape[2] > 1 ? h.reconFovMm[2] / static_cast<double>(shape[2]) : h.reconFovMm[2];
  return sp;
}

std::string LoadedDataset::frameName() const {
  return series && frame < series->keys.size() && series->frames.size() > 1 ? frameLabel(frame, series->frames.size())
                                                                            : std::string();
}

std::string frameLabel(std::size_t f, std::size_t n) {
  return "frame " + std::to_string(f + 1) + "/" + std::to_string(n);
}

FrameDims varyingFrameDims(const io::Series& s) {
  const std::pair<const char*, int io::FrameKey::*> dims[] = {{"contrast", &io::FrameKey::contrast},
                                                              {"phase", &io::FrameKey::phase},
                                                              {"repetition", &io::FrameKey::repetition},
                                                              {"set", &io::FrameKey::set}};
  FrameDims out;
  for (const auto& d : dims)
    if (std::any_of(s.keys.begin(), s.keys.end(), [&](const io::FrameKey& k) { return k.*d.second != s.keys.front().*d.second; }))
      out.varying.push_back(d);
  return out;
}

std::string frameDetail(const io::Series& s, std::size_t f, const FrameDims& dims) {
  if (f >= s.keys.size()) return {};
  std::string d;
  for (const auto& [name, dim] : dims.varying) d += (d.empty() ? "" : ", ") + std::string(name) + " " + std::to_string(s.keys[f].*dim + 1);
  return d;
}

std::string frameDetail(const io::Series& s, std::size_t f) { return frameDetail(s, f, varyingFrameDims(s)); }

LoadedDataset describeDataset(std::shared_ptr<const Dataset> dataset, DataSource source) {
  LoadedDataset d;
  d.dataset = std::move(dataset);
  d.source = std::move(source);
  if (d.dataset && d.dataset->reference) {
    try {
      d.truth = std::make_shared<const CArray>(quality::comparisonTruth(*d.dataset));
    } catch (const std::exception& e) {
      d.truthProblem = e.what();
    }
  }
  return d;
}

}  // namespace larmor::model
