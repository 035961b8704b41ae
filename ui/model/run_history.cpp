// Labels, summaries and the kept list of runs (run_history.hpp).
#include "run_history.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "larmor/recon/settings_table.hpp"
#include "method_fit.hpp"

namespace larmor::model {

namespace {

std::string formatted(double v, const char* format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

std::shared_ptr<const CArray> RunRecord::image() const {
  return result ? std::shared_ptr<const CArray>(result, &result->image) : nullptr;
}

std::string formatDuration(double ms) {
  if (!(ms >= 0)) return "?";
  if (ms < 10) return formatted(ms, "%.2f") + " ms";
  if (ms < 999.5) return formatted(ms, "%.0f") + " ms";
  if (ms < 9995) return formatted(ms / 1000, "%.2f") + " s";
  if (ms < 120000) return formatted(ms / 1000, "%.1f") + " s";
  return formatted(std::floor(ms / 60000), "%.0f") + " min " + formatted(std::fmod(ms / 1000, 60.0), "%02.0f") + " s";
}

std::string RunRecord::summary() const {
  if (!result) return label;
  std::string s = label + " — " + formatDuration(result->timings.totalMilliseconds()) + " on " + result->device;
  const auto& m = result->metrics;
  if (m.contains("percent_error") && m["percent_error"].is_number() && m.contains("psnr_db") && m.contains("ssim"))
    s += "  |  " + formatted(m["percent_error"].get<double>(), "%.2f") + " % error, PSNR " +
         formatted(m["psnr_db"].get<double>(), "%.2f") + " dB, SSIM " + formatted(m["ssim"].get<double>(), "%.4f");
  return s;
}

std::string describeSettings(const recon::ReconSettings& settings, const Header* header) {
  std::string s = methodLabel(settings.method);
  if (settings.method == recon::Method::Grappa && header) {
    const int r1 = header->accelerationPe1, r2 = header->accelerationPe2;
    if (r1 > 1 || r2 > 1) s += " R" + std::to_string(r1) + (r2 > 1 ? "x" + std::to_string(r2) : std::string());
  }
  if (settings.method == recon::Method::Cg || settings.method == recon::Method::Cs)
    s += ", " + recon::settings::choiceName("iterative.regularizer", static_cast<int>(settings.iterative.regularizer)) + " λ " + formatted(settings.iterative.lambda, "%.3g");
  return s;
}

const RunRecord& RunHistory::add(std::shared_ptr<const recon::ReconResult> result, std::string description,
                                 SessionSettings settings) {
  RunRecord r;
  r.number = ++counter_;
  r.label = "run " + std::to_string(r.number) + (description.empty() ? std::string() : ": " + description);
  r.description = std::move(description);
  r.settings = std::move(settings);
  r.result = std::move(result);
  runs_.push_front(std::move(r));
  while (runs_.size() > kKept) runs_.pop_back();
  return runs_.front();
}

const RunRecord& RunHistory::addSeries(std::vector<std::shared_ptr<const recon::ReconResult>> frames,
                                       std::size_t current, std::string description, SessionSettings settings) {
  const std::shared_ptr<const recon::ReconResult> shown = current < frames.size() ? frames[current] : nullptr;
  add(shown, std::move(description), std::move(settings));
  runs_.front().frames = std::move(frames);
  return runs_.front();
}

const RunRecord* RunHistory::update(int number, std::vector<std::shared_ptr<const recon::ReconResult>> frames,
                                    std::size_t current) {
  for (RunRecord& r : runs_)
    if (r.number == number && !frames.empty()) {
      r.result = frames[std::min(current, frames.size() - 1)];
      r.frames = frames.size() > 1 ? std::move(frames) : decltype(frames){};
      return &r;
    }
  return nullptr;
}

void RunHistory::selectFrame(std::size_t f) {
  for (RunRecord& r : runs_)
    if (f < r.frames.size()) r.result = r.frames[f];
}

const RunRecord* RunHistory::find(int number) const {
  for (const RunRecord& r : runs_)
    if (r.number == number) return &r;
  return nullptr;
}

std::vector<int> sideBySideRuns(const RunHistory& runs, const std::vector<int>& picked, std::size_t max) {
  std::vector<int> out;
  for (int n : picked)
    if (out.size() < max && runs.find(n) && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  if (!out.empty()) return out;
  for (const RunRecord& r : runs.runs()) {  // newest first
    if (out.size() == max) break;
    out.insert(out.begin(), r.number);
  }
  return out;
}

}  // namespace larmor::model
