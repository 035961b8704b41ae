// One item of a batch on its way through a worker (run_parts.hpp), in three stages that the scheduler
// overlaps: prepare (checks, "started", load), reconstruct (the worker's device), finish (outputs,
// thumbnail, "done"). A failure at any stage is recorded ("failed") and reported, and the batch goes on.
// The stages run on several threads at once: `owned` and the ISMRMRD loader are taken under
// RunContext's mutexes; the journal and Progress serialise themselves.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "larmor/batch/contact_sheet.hpp"
#include "larmor/io/dataset_io.hpp"
#include "larmor/io/output_safety.hpp"
#include "larmor/io/png.hpp"
#include "larmor/util/error.hpp"
#include "larmor/util/provenance.hpp"
#include "run_parts.hpp"

namespace larmor::batch::detail {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kThumbSize = 96;

/// ISMRMRD files are read through libhdf5, which Debian builds without its thread-safe option: one at a
/// time. The other readers (.cfl, .ra, twix) are plain C++ and run in parallel.
bool needsLoadLock(const std::string& path) {
  std::string e = fs::path(path).extension().string();
  for (auto& ch : e) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return e != ".cfl" && e != ".hdr" && e != ".ra" && e != ".dat";
}

/// The item's output paths, and the files they stand for (a .cfl its pair; a DICOM folder itself). Throws
/// when one exists that is not an output of this batch; the files join `owned`.
std::vector<std::string> claimOutputs(RunContext& ctx, const Item& item, Job& job) {
  std::vector<std::string> planned;
  for (const auto& f : ctx.plan.formats) job.outs.push_back(outputPath(ctx.dir, item.name, f));
  for (std::size_t k = 0; k < job.outs.size(); ++k) {
    if (ctx.plan.formats[k] == "dcm") {
      planned.push_back(job.outs[k]);
      continue;  // a DICOM folder: io's rule (absent, empty or a Larmor export)
    }
    for (const auto& m : io::pathMembers(job.outs[k])) {
      planned.push_back(m);
      std::lock_guard lock(ctx.ownedMutex);
      require(!fs::exists(m) || ctx.owned.count(m) > 0,
              m + ": exists and is not an output of this batch; not overwritten (move it or use another --output-dir)");
    }
  }
  {
    std::lock_guard lock(ctx.ownedMutex);
    ctx.owned.insert(planned.begin(), planned.end());
  }
  // The rules of io's output check that a batch needs: no output is an input; a DICOM folder is new,
  // empty or only Larmor's export. What may be replaced is the journal's to say (above).
  std::vector<std::string> inputs = {item.input};
  if (!job.is.trajectory.empty()) inputs.push_back(job.is.trajectory);
  for (const auto& out : job.outs) {
    io::requireNotAnInput(out, io::OutputRole::Image, inputs);
    io::checkOutputPath(out, ctx.exportOptions);
  }
  return planned;
}

void loadInput(RunContext& ctx, const Item& item, Job& job) {
  io::LoadOptions lo;
  lo.trajectoryPath = job.is.trajectory;
  for (int i = 0; i < 3; ++i) lo.matrix[i] = job.is.settings.matrix[i];
  const auto tLoad = std::chrono::steady_clock::now();
  if (needsLoadLock(item.input)) {
    std::lock_guard lock(ctx.loadMutex);
    job.series = io::loadSeries(item.input, lo);
  } else {
    job.series = io::loadSeries(item.input, lo);
  }
  job.loadMs = msSince(tLoad);
}

/// Writes every output format; returns the files written and adds the writers' warnings.
std::vector<std::string> writeOutputs(RunContext& ctx, const Job& job, const std::vector<recon::ReconResult>& results,
                                      std::vector<std::string>& warnings) {
  std::vector<std::string> files;
  for (const auto& out : job.outs) {
    const io::ExportReport rep = io::writeSeriesOutput(out, results, job.series, ctx.exportOptions);
    files.insert(files.end(), rep.files.begin(), rep.files.end());
    warnings.insert(warnings.end(), rep.warnings.begin(), rep.warnings.end());
  }
  return files;
}

/// The thumbnail of the contact sheet: the middle slice (partition) of the magnitude.
void writeThumbnail(const RunContext& ctx, const Item& item, const recon::ReconResult& r) {
  const Shape& sh = r.image.shape();
  RArray mag(sh);
  for (index_t i = 0; i < mag.size(); ++i) mag[i] = std::abs(r.image[i]);
  const index_t nz = std::max<index_t>(1, sh[2]), ns = std::max<index_t>(1, sh[4]);
  std::error_code dirEc;
  fs::create_directories(fs::path(ctx.dir) / kThumbDir, dirEc);  // made with the first thumbnail, not before
  writePgm((fs::path(ctx.dir) / kThumbDir / (item.name + ".pgm")).string(),
           thumbnail(io::render(mag, nz / 2 + nz * (ns / 2)), kThumbSize));
}

/// The "done" record: outputs with their content hashes (what resume compares with the disk), timings.
json doneRecord(const RunContext& ctx, const Job& job, const std::vector<recon::ReconResult>& results,
                std::vector<std::string>& files, const std::vector<std::string>& warnings, double writeMs) {
  const Item& item = ctx.plan.items[job.index];
  json done = job.rec;
  done["event"] = "done";
  done["settings_hash"] = job.is.hash;
  if (std::find(ctx.plan.formats.begin(), ctx.plan.formats.end(), "dcm") != ctx.plan.formats.end())
    files.push_back(outputPath(ctx.dir, item.name, "dcm"));
  done["outputs"] = files;
  json hashes = json::object();
  for (const auto& f : files) hashes[f] = contentHash(f);
  done["output_hashes"] = hashes;
  done["timings_ms"] = {{"load", job.loadMs}, {"recon", job.reconMs}, {"write", writeMs}, {"total", msSince(job.start)}};
  // recon::run's stages summed over the frames: where an item's time went (e.g. with two workers).
  json stages = json::object();
  for (const auto& fr : results)
    for (const auto& st : fr.timings.stages()) stages[st.stage] = stages.value(st.stage, 0.0) + st.milliseconds;
  done["timings_ms"]["stages"] = stages;
  done["at_ms"] = {{"start", job.atStart}, {"recon", job.atRecon}, {"recon_end", job.atReconEnd}, {"end", msSince(ctx.t0)}};
  if (!warnings.empty()) done["warnings"] = warnings;
  done["time_utc"] = utcNow();
  return done;
}

}  // namespace

void failJob(RunContext& ctx, const Job& job, const std::string& device) {
  const Item& item = ctx.plan.items[job.index];
  json failed = job.rec;
  failed["event"] = "failed";
  failed["error"] = job.error;
  failed["timings_ms"] = {{"total", msSince(job.start)}};
  failed["time_utc"] = utcNow();
  try {
    ctx.journal.append(failed);
  } catch (const std::exception&) {
    // the journal itself failed: the item is reported and, unrecorded, retried next time
  }
  ctx.progress.emit({ProgressEvent::Kind::Failed, item.name, device, job.error, 0, 0, 0, 0, msSince(job.start) / 1e3, ""});
}

Job prepareJob(RunContext& ctx, const Worker& w, std::size_t index) {
  Job job;
  job.index = index;
  job.start = std::chrono::steady_clock::now();
  job.atStart = msSince(ctx.t0);
  const Item& item = ctx.plan.items[index];
  const ItemState& state = ctx.states[index];
  job.rec = {{"name", item.name}, {"input", item.input}, {"device", w.id}, {"host", ctx.host},
             {"pid", static_cast<long>(::getpid())}, {"shard", ctx.shard},
             {"key", state.key.empty() ? itemKey(item.name, "", "") : state.key},
             {"input_hash", state.inputHash}};
  ctx.progress.emit({ProgressEvent::Kind::Started, item.name, w.id, "", 0, 0, 0, 0, 0, ctx.notes[index]});
  try {
    if (w.device.ompThreads > 0) omp_set_num_threads(w.device.ompThreads);
    job.is = itemSettings(ctx.plan, item);
    const std::vector<std::string> planned = claimOutputs(ctx, item, job);
    json started = job.rec;
    started["event"] = "started";
    started["settings_hash"] = job.is.hash;
    started["outputs"] = planned;
    started["time_utc"] = utcNow();
    ctx.journal.append(started);
    loadInput(ctx, item, job);
  } catch (const std::exception& e) {
    job.error = e.what();
  }
  return job;
}

bool reconstructJob(RunContext& ctx, const Worker& w, Job& job, bool severalWorkers,
                    std::vector<recon::ReconResult>& results) {
  try {
    recon::ReconRequest req;
    req.settings = job.is.settings;
    // Each worker owns its device: an item's slices (or GPU.Multi's slabs) stay there.
    if (severalWorkers) req.settings.iterative.multiGpu = false;
    req.backend = w.backend;
    req.cache = w.cache;
    const auto tRecon = std::chrono::steady_clock::now();
    job.atRecon = msSince(ctx.t0);
    // Every frame with the same settings: jointly with a temporal prior under cs (recon/dynamic.hpp), else one by one.
    results = ctx.reconstruct ? ctx.reconstruct(ctx.plan.items[job.index], job.is, job.series, ctx.loadMutex)
                              : recon::runFrames(job.series.frames, req);
    job.reconMs = msSince(tRecon);
    job.atReconEnd = msSince(ctx.t0);
  } catch (const std::exception& e) {
    job.error = e.what();
    failJob(ctx, job, w.id);
    return false;
  }
  return true;
}

void finishJob(RunContext& ctx, const Worker& w, Job& job, std::vector<recon::ReconResult>& results) {
  const Item& item = ctx.plan.items[job.index];
  try {
    if (w.device.ompThreads > 0) omp_set_num_threads(w.device.ompThreads);
    const auto tWrite = std::chrono::steady_clock::now();
    std::vector<std::string> warnings = job.series.frames.front().warnings;
    for (const auto& fr : results)
      for (const auto& wn : fr.warnings)
        if (std::find(warnings.begin(), warnings.end(), wn) == warnings.end()) warnings.push_back(wn);
    std::vector<std::string> files = writeOutputs(ctx, job, results, warnings);
    writeThumbnail(ctx, item, results.front());
    const double writeMs = msSince(tWrite);
    ctx.journal.append(doneRecord(ctx, job, results, files, warnings, writeMs));
    {
      std::lock_guard lock(ctx.ownedMutex);
      ctx.owned.insert(files.begin(), files.end());
    }
    ctx.progress.emit({ProgressEvent::Kind::Done, item.name, w.id, "", 0, 0, 0, 0, msSince(job.start) / 1e3, ""});
  } catch (const std::exception& e) {
    job.error = e.what();
    failJob(ctx, job, w.id);
  }
}

}  // namespace larmor::batch::detail
