// Frames of a raw-data file (larmor/io/series.hpp): ordering and descriptions.
#include "larmor/io/series.hpp"

#include <tuple>

#include "larmor/util/error.hpp"

namespace larmor::io {

namespace {

void addPart(std::string& s, const char* name, int v) {
  if (!s.empty()) s += ", ";
  s += std::string(name) + " " + std::to_string(v);
}

}  // namespace

bool FrameKey::operator<(const FrameKey& o) const {
  return std::tie(set, phase, contrast, repetition) < std::tie(o.set, o.phase, o.contrast, o.repetition);
}

std::string FrameKey::str() const {
  std::string s;
  if (contrast) addPart(s, "contrast", contrast);
  if (phase) addPart(s, "phase", phase);
  if (repetition) addPart(s, "repetition", repetition);
  if (set) addPart(s, "set", set);
  return s.empty() ? "frame 0" : s;
}

std::string FrameSelection::str() const {
  std::string s;
  if (contrast >= 0) addPart(s, "contrast", contrast);
  if (phase >= 0) addPart(s, "phase", phase);
  if (repetition >= 0) addPart(s, "repetition", repetition);
  if (set >= 0) addPart(s, "set", set);
  return s;
}

std::string Series::describeDims() const {
  std::string s;
  const auto add = [&](const std::vector<int>& v, const char* one, const char* many) {
    if (v.size() <= 1) return;
    if (!s.empty()) s += " x ";
    s += std::to_string(v.size()) + " " + (v.size() == 1 ? one : many);
  };
  add(contrasts, "contrast", "contrasts");
  add(phases, "phase", "phases");
  add(repetitions, "repetition", "repetitions");
  add(sets, "set", "sets");
  return s.empty() ? "1 frame" : s;
}

int Series::find(const FrameKey& k) const {
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == k) return static_cast<int>(i);
  return -1;
}

std::string frameSelectionHint(const Series& s) {
  std::string flags;
  const auto add = [&](const std::vector<int>& v, const char* flag) {
    if (v.size() > 1) flags += std::string(flags.empty() ? "" : ", ") + flag + " N";
  };
  add(s.contrasts, "--contrast");
  add(s.phases, "--phase");
  add(s.repetitions, "--repetition");
  add(s.sets, "--set");
  return flags.empty() ? "--repetition N, --contrast N, --phase N, --set N" : flags;
}

Dataset singleFrame(Series s, const std::string& path) {
  if (s.frames.size() != 1)
    throw Error(path + ": holds " + std::to_string(s.frames.size()) + " frames (" + s.describeDims() +
                "); select one with " + frameSelectionHint(s) + ", or reconstruct the series (frames are not merged)");
  return std::move(s.frames.front());
}

}  // namespace larmor::io
