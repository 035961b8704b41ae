#include "larmor/io/export.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numbers>
#include <system_error>

#include "larmor/io/cfl.hpp"
#include "larmor/io/image_geometry.hpp"
#include "larmor/io/nifti.hpp"
#include "larmor/io/output_safety.hpp"
#include "larmor/io/png.hpp"
#include "larmor/io/series_folder.hpp"
#include "larmor/util/provenance.hpp"
#include "larmor/util/atomic_file.hpp"
#include "larmor/util/temp_registry.hpp"
#ifdef LARMOR_HAVE_IO
#include "larmor/io/dicom.hpp"
#include "larmor/util/signals_blocked.hpp"
#endif

namespace fs = std::filesystem;

namespace larmor::io {

namespace {

constexpr const char* kSupported = "DIR/ (DICOM series), OUT.nii (NIfTI-1), OUT.cfl (BART), OUT.png";

std::string lowerExtension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

// "out/series/" -> "out/series": the directory the series becomes.
fs::path dicomTarget(const std::string& path) {
  std::string s = path;
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return fs::path(s);
}

fs::path parentOf(const fs::path& p) { return p.has_parent_path() ? p.parent_path() : fs::path("."); }

// 0777 & ~umask, what mkdir(2) would have given: /proc/self/status holds the umask without changing it
// (umask(2) can only be read by setting it, which races with other threads).
fs::perms folderPermissions() {
  unsigned mask = 022;
  std::ifstream status("/proc/self/status");
  std::string line;
  bool found = false;
  while (std::getline(status, line))
    if (line.rfind("Umask:", 0) == 0) {
      mask = static_cast<unsigned>(std::strtoul(line.c_str() + 6, nullptr, 8));
      found = true;
      break;
    }
  if (!found) {
    const mode_t m = ::umask(022);
    ::umask(m);
    mask = m;
  }
  return static_cast<fs::perms>(0777u & ~mask);
}

// A temporary folder next to the target, recorded in this process's run record before it exists
// (temp_registry.hpp), with the permissions of any new folder (umask).
Temporary makeTempDir(const fs::path& target, const char* role, const std::string& path) {
  Temporary t = reserveTemporary(target.string(), TempKind::Directory, role);
  if (::mkdir(t.path.c_str(), 0700) != 0) {
    const std::string why = std::strerror(errno);
    releaseTemporary(t);
    throw Error(path + ": cannot create a temporary folder next to it (" + why + ")");
  }
  std::error_code ec;
  fs::permissions(t.path, folderPermissions(), ec);
  return t;
}

/// The report, its warnings printed first where the options ask.
ExportReport finished(ExportReport report, const ExportOptions& o) {
  if (o.printWarnings)
    for (const auto& w : report.warnings) std::cerr << "warning: " << report.path << ": " << w << "\n";
  return report;
}

void validateOptions(const ExportOptions& o, const std::string& path) {
  for (const auto& c : o.components) (void)componentFromString(c);
  if (o.components.empty()) throw Error(path + ": no image component to export");
  if (!std::isfinite(o.windowCenter))
    throw Error(path + ": the window centre must be a finite number (--window-center)");
  if (!std::isfinite(o.windowWidth) || o.windowWidth < 0)
    throw Error(path + ": the window width must be a finite number >= 0, 0 = automatic (--window-width)");
  if (o.seriesNumber < 0 || o.seriesNumber > 99999)
    throw Error(path + ": the series number must be 1..99999, 0 = automatic (--series-number)");
  const std::string& uid = o.studyInstanceUid;  // DICOM UI: digits and dots, at most 64 characters
  if (uid.size() > 64 || uid.find_first_not_of("0123456789.") != std::string::npos)
    throw Error(path + ": \"" + uid + "\" is not a DICOM UID (digits and dots, at most 64 characters)");
}

double percentile(std::vector<float> v, double q) {
  v.erase(std::remove_if(v.begin(), v.end(), [](float x) { return !std::isfinite(x); }), v.end());
  if (v.empty()) return 0;
  const auto k = std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

void checkImage(const CArray& image, const std::string& path) {
  const Shape& s = image.shape();
  if (image.empty() || s[3] != 1 || s.span(5, s.rank()) != 1)
    throw Error(path + ": expected a combined image [x, y, z, 1, slices], got " + s.str());
}

// A NaN or Inf voxel (e.g. k-space of 3e38 overflowing float in the FFT) would give an all-NaN .cfl/.nii
// and an all-zero DICOM: refused before anything is written.
void requireFiniteImage(const CArray& image, const std::string& path) {
  index_t bad = 0, first = -1;
  for (index_t i = 0; i < image.size(); ++i) {
    const cfloat v = image[i];
    if (std::isfinite(v.real()) && std::isfinite(v.imag())) continue;
    if (bad++ == 0) first = i;
  }
  if (bad > 0)
    throw Error(path + ": the reconstructed image has " + std::to_string(bad) + " non-finite voxel" +
                (bad == 1 ? "" : "s") + " (first at voxel " + std::to_string(first) +
                "); the input probably overflows single precision, nothing written");
}

#ifdef LARMOR_HAVE_IO
// The series appears at once: written into TARGET.larmor.tmp-TOKEN-N next to the target (same file
// system), with the marker .larmor-export listing its files, then renamed onto it. A previous export
// (only Larmor's files: checked before the work and again just before the swap, series_folder.hpp) is
// moved aside first and, after the rename, its Larmor files removed; any failure removes the temporary
// folder, so there is never a half-written series. Both temporaries are in the run record and registered
// for the signal clean-up while they live (temp_registry.hpp).
std::vector<std::string> writeDicomAtomically(const std::string& path, const recon::ReconResult& r, const Dataset& d,
                                              const ExportOptions& o, const ImageGeometry& g,
                                              const Progress& progress) {
  const fs::path target = dicomTarget(path);
  requireWritableFolder(parentOf(target).string(), path);
  const FolderState state = exportFolderState(target.string(), path);
  requireOnlyLarmorFiles(target.string(), path);
  Temporary tempDir = makeTempDir(target, "tmp", path);
  const std::string temp = tempDir.path;
  std::vector<std::string> files;
  std::error_code ec;
  try {
    files = writeDicomSeriesFiles(temp, r, d, o, g, progress);
    {
      std::ofstream marker(fs::path(temp) / kExportMarker);
      marker << exportMarkerText(files);
      marker.close();
      if (!marker) throw Error(path + ": cannot write " + std::string(kExportMarker) + " (" + std::strerror(errno) + ")");
    }
    const SignalsBlocked blocked;
    if (state == FolderState::PreviousExport) {
      requireOnlyLarmorFiles(target.string(), path);  // nothing added during the work
      // rename(2) onto an empty directory replaces it; the old series goes to an empty temporary one.
      Temporary oldDir = makeTempDir(target, "old", path);
      const std::string old = oldDir.path;
      if (std::rename(target.c_str(), old.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        fs::remove(old, ec);
        releaseTemporary(oldDir);
        throw Error(path + ": cannot replace the previous export (" + why + ")");
      }
      if (std::rename(temp.c_str(), target.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        std::rename(old.c_str(), target.c_str());  // put the previous export back
        releaseTemporary(oldDir);
        throw Error(path + ": cannot rename the new series into place (" + why + ")");
      }
      releaseTemporary(tempDir);
      const std::vector<std::string> left = removeLarmorSeries(old);
      releaseTemporary(oldDir);
      if (!left.empty())
        std::cerr << "warning: " << path << ": the previous series is kept in " << old << ": it holds '"
                  << left.front() << "', which Larmor did not write (added during the export)\n";
    } else if (std::rename(temp.c_str(), target.c_str()) != 0) {
      throw Error(path + ": cannot rename the new series into place (" + std::strerror(errno) + ")");
    }
    releaseTemporary(tempDir);
  } catch (const Cancelled&) {
    fs::remove_all(temp, ec);
    releaseTemporary(tempDir);
    throw;
  } catch (const Error& e) {
    fs::remove_all(temp, ec);
    releaseTemporary(tempDir);
    // Name the series the user asked for, not our temporary folder.
    std::string why = e.what();
    for (std::size_t at = why.find(temp); at != std::string::npos; at = why.find(temp, at + 1))
      why.replace(at, temp.size(), target.string());
    throw Error(why);
  } catch (...) {
    fs::remove_all(temp, ec);
    releaseTemporary(tempDir);
    throw;
  }
  for (auto& f : files) f = (target / fs::path(f).filename()).string();
  return files;
}
#endif

}  // namespace

std::string toString(OutputKind k) {
  switch (k) {
    case OutputKind::Dicom: return "DICOM";
    case OutputKind::Nifti: return "NIfTI";
    case OutputKind::Bart: return "BART";
    case OutputKind::Png: return "PNG";
  }
  return "?";
}

ImageComponent componentFromString(const std::string& s) {
  for (ImageComponent c :
       {ImageComponent::Magnitude, ImageComponent::Phase, ImageComponent::Real, ImageComponent::Imaginary})
    if (toString(c) == s) return c;
  throw Error("image component '" + s + "' is unknown; expected magnitude, phase, real or imaginary");
}

std::string toString(ImageComponent c) {
  switch (c) {
    case ImageComponent::Magnitude: return "magnitude";
    case ImageComponent::Phase: return "phase";
    case ImageComponent::Real: return "real";
    case ImageComponent::Imaginary: return "imaginary";
  }
  return "?";
}

RArray extractComponent(const CArray& image, ImageComponent c) {
  RArray out(image.shape());
  for (index_t i = 0; i < image.size(); ++i) {
    const cfloat v = image[i];
    switch (c) {
      case ImageComponent::Magnitude: out[i] = std::abs(v); break;
      case ImageComponent::Phase: out[i] = std::arg(v); break;
      case ImageComponent::Real: out[i] = v.real(); break;
      case ImageComponent::Imaginary: out[i] = v.imag(); break;
    }
  }
  return out;
}

void automaticWindow(const RArray& values, ImageComponent c, double& lo, double& hi) {
  switch (c) {
    case ImageComponent::Phase:
      lo = -std::numbers::pi, hi = std::numbers::pi;
      return;
    case ImageComponent::Magnitude:
      // [0, p99.5] like the PNG writer: a few bright voxels (vessels, noise spikes) do not darken the rest.
      lo = 0, hi = percentile({values.vec().begin(), values.vec().end()}, 0.995);
      break;
    case ImageComponent::Real:
    case ImageComponent::Imaginary:
      lo = percentile({values.vec().begin(), values.vec().end()}, 0.005), hi = percentile({values.vec().begin(), values.vec().end()}, 0.995);
      break;
  }
  if (!(hi > lo)) hi = lo + 1;  // a constant image: any positive width
}

CArray toBartImage(const CArray& image) {
  CArray out = image;
  const Shape& s = image.shape();
  if (s[4] > 1) {
    std::vector<index_t> dims(kBartSliceDim + 1, 1);
    for (std::size_t i = 0; i < 4; ++i) dims[i] = s[i];
    dims[kBartSliceDim] = s[4];
    out.reshape(Shape(dims));
  } else {
    out.reshape(s[3] > 1 ? Shape{s[0], s[1], s[2], s[3]} : Shape{s[0], s[1], s[2]});
  }
  return out;
}

OutputKind outputKind(const std::string& path) {
  if (path.empty()) throw Error("no output path given; supported: " + std::string(kSupported));
  std::error_code ec;
  if (path.back() == '/' || fs::is_directory(path, ec)) return OutputKind::Dicom;
  const std::string ext = lowerExtension(path);
  if (ext == ".nii") return OutputKind::Nifti;
  if (ext == ".cfl") return OutputKind::Bart;
  if (ext == ".png") return OutputKind::Png;
  if (ext == ".gz" && lowerExtension(path.substr(0, path.size() - 3)) == ".nii")
    throw Error(path + ": compressed NIfTI (.nii.gz) is not supported; write .nii");
  if (ext == ".dcm")
    throw Error(path + ": DICOM is written as a series directory; end the path with '/' (e.g. out/series/)");
  throw Error(path + ": unsupported output " + (ext.empty() ? std::string("(no extension)") : "'" + ext + "'") +
              "; supported: " + kSupported);
}

void checkOutputPath(const std::string& path, const ExportOptions& o) {
  const OutputKind kind = outputKind(path);
  validateOptions(o, path);
  if (kind == OutputKind::Dicom) {
#ifndef LARMOR_HAVE_IO
    throw Error(path + ": this build has no DICOM support (LARMOR_IO=OFF); write .nii, .cfl or .png");
#else
    const fs::path target = dicomTarget(path);
    if (target == "/" || target.filename() == "." || target.filename() == "..")
      throw Error(path + ": name a series directory (e.g. out/series/)");
    requireWritableFolder(parentOf(target).string(), path);
    (void)exportFolderState(target.string(), path);
    requireOnlyLarmorFiles(target.string(), path);
#endif
    return;
  }
  const fs::path p(path);
  requireWritableFolder(parentOf(p).string(), path);
}

ExportReport writeImageOutput(const std::string& path, const recon::ReconResult& r, const Dataset& d,
                              const ExportOptions& o, const Progress& progress) {
  checkOutputPath(path, o);
  checkImage(r.image, path);
  ExportReport report;
  report.kind = outputKind(path);
  checkFormatLimits(report.kind, r.image.shape(), path);
  requireFiniteImage(r.image, path);
  report.path = path;
  // Files are one atomic step each; a DICOM series reports per instance written.
  if (report.kind != OutputKind::Dicom) progress.report(0.0, "writing " + toString(report.kind));
  switch (report.kind) {
    case OutputKind::Bart: {
      writeCfl(path, toBartImage(r.image));
      const std::string base = cflBasePath(path);
      report.files = {base + ".hdr", base + ".cfl"};
      break;
    }
    case OutputKind::Png: {
      RArray mag = extractComponent(r.image, ImageComponent::Magnitude);
      Shape s = r.image.shape();
      if (s[0] == 1 && s[2] > 1) {
        // One readout point: a [1, y, z] plane (a BART ky-kz plane after the readout IFFT) shown as y x z.
        s = Shape{s[1], s[2], 1, s[3], s[4]};
        mag.reshape(s);
      }
      const index_t planes = mag.size() / (s[0] * s[1]);
      float lo = 0, hi = 0;  // equal: automatic
      if (o.windowWidth > 0) lo = o.windowCenter - 0.5f * o.windowWidth, hi = o.windowCenter + 0.5f * o.windowWidth;
      // A 3D volume shows its middle partition; 2D slices side by side.
      writePng(path, s[2] > 1 ? render(mag, planes / 2, lo, hi) : renderMosaic(mag, lo, hi));
      report.files = {path};
      break;
    }
    case OutputKind::Nifti: {
      ImageGeometry g = imageGeometry(d.header, r.image.shape());
      report.warnings = g.warnings;
      NiftiOptions no;
      no.complex = o.niftiComplex;
      double lo, hi;
      if (o.windowWidth > 0) {
        lo = o.windowCenter - 0.5 * o.windowWidth, hi = o.windowCenter + 0.5 * o.windowWidth;
      } else {
        automaticWindow(extractComponent(r.image, ImageComponent::Magnitude), ImageComponent::Magnitude, lo, hi);
      }
      no.calMin = lo, no.calMax = hi;
      const nlohmann::json& settings = r.provenance.contains("settings") ? r.provenance["settings"] : nlohmann::json();
      const std::string method = settings.is_object() && settings.contains("method") && settings["method"].is_string()
                                     ? settings["method"].get<std::string>() : std::string("?");
      no.description = "Larmor " + versionString() + " method " + method + (o.niftiComplex ? " complex" : " magnitude");
      const auto w = writeNifti(path, r.image, g, no);
      report.warnings.insert(report.warnings.end(), w.begin(), w.end());
      report.files = {path};
      break;
    }
    case OutputKind::Dicom: {
#ifdef LARMOR_HAVE_IO
      const ImageGeometry g = imageGeometry(d.header, r.image.shape());
      report.warnings = g.warnings;
      report.files = writeDicomAtomically(path, r, d, o, g, progress);
      report.path = dicomTarget(path).string();
#else
      throw Error(path + ": this build has no DICOM support (LARMOR_IO=OFF)");
#endif
      break;
    }
  }
  return finished(std::move(report), o);
}

namespace {

// The frames' images one after another: [x, y, z, 1, slices x frames].
CArray concatenatedFrames(const std::vector<recon::ReconResult>& results, const std::string& path) {
  const Shape s = results.front().image.shape();
  for (const auto& r : results) {
    checkImage(r.image, path);
    if (r.image.shape() != s)
      throw Error(path + ": the frames' images differ in shape (" + s.str() + " and " + r.image.shape().str() + ")");
  }
  CArray all(Shape{s[0], s[1], s[2], 1, s[4] * static_cast<index_t>(results.size())});
  for (std::size_t f = 0; f < results.size(); ++f)
    std::copy_n(results[f].image.data(), s.size(), all.data() + static_cast<index_t>(f) * s.size());
  return all;
}

// Position of `v` in the sorted distinct values of `all`.
int rankOf(const std::vector<int>& all, int v) {
  return static_cast<int>(std::lower_bound(all.begin(), all.end(), v) - all.begin());
}

std::vector<FrameTags> frameTags(const Series& series) {
  std::vector<std::array<int, 3>> times;
  for (const auto& k : series.keys) times.push_back({k.set, k.phase, k.repetition});
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  std::vector<FrameTags> tags;
  for (std::size_t i = 0; i < series.keys.size(); ++i) {
    const FrameKey& k = series.keys[i];
    FrameTags t;
    const std::array<int, 3> key{k.set, k.phase, k.repetition};
    t.temporalPosition = 1 + static_cast<int>(std::lower_bound(times.begin(), times.end(), key) - times.begin());
    t.temporalPositions = static_cast<int>(times.size());
    t.echoNumber = 1 + k.contrast;
    t.echoTimeMs = i < series.echoTimeMs.size() ? series.echoTimeMs[i] : std::nan("");
    t.triggerTimeMs = i < series.triggerTimeMs.size() ? series.triggerTimeMs[i] : std::nan("");
    tags.push_back(t);
  }
  return tags;
}

// The frames at BART's dims; a combination the series lacks stays zero (reported).
CArray bartSeries(const std::vector<recon::ReconResult>& results, const Series& series, std::vector<std::string>& warnings) {
  std::vector<int> c, ph, r, st;
  for (const auto& k : series.keys) c.push_back(k.contrast), ph.push_back(k.phase), r.push_back(k.repetition), st.push_back(k.set);
  for (auto* v : {&c, &ph, &r, &st}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  const Shape s = results.front().image.shape();
  std::vector<index_t> dims(kBartDims, 1);
  for (std::size_t i = 0; i < 3; ++i) dims[i] = s[i];
  dims[kBartSliceDim] = s[4];
  dims[kBartTeDim] = static_cast<index_t>(c.size());
  dims[kBartTimeDim] = static_cast<index_t>(r.size());
  dims[kBartTime2Dim] = static_cast<index_t>(ph.size());
  dims[kBartBatchDim] = static_cast<index_t>(st.size());
  CArray out{Shape(dims), cfloat(0, 0)};
  std::vector<index_t> stride(kBartDims, 1);
  for (std::size_t i = 1; i < kBartDims; ++i) stride[i] = stride[i - 1] * dims[i - 1];
  const index_t plane = s[0] * s[1] * s[2];
  for (std::size_t f = 0; f < results.size(); ++f) {
    const FrameKey& k = series.keys[f];
    const index_t base = rankOf(c, k.contrast) * stride[kBartTeDim] + rankOf(r, k.repetition) * stride[kBartTimeDim] +
                         rankOf(ph, k.phase) * stride[kBartTime2Dim] + rankOf(st, k.set) * stride[kBartBatchDim];
    for (index_t sl = 0; sl < s[4]; ++sl)
      std::copy_n(results[f].image.data() + sl * plane, plane, out.data() + base + sl * stride[kBartSliceDim]);
  }
  const std::size_t grid = c.size() * ph.size() * r.size() * st.size();
  if (grid != results.size())
    warnings.push_back(std::to_string(grid - results.size()) + " of the " + std::to_string(grid) +
                       " frame positions of the BART array were not acquired (left zero)");
  // Trailing dims of 1 are dropped by the writer's reader; keep the array as it is.
  return out;
}

}  // namespace

ExportReport writeSeriesOutput(const std::string& path, const std::vector<recon::ReconResult>& results,
                               const Series& series, const ExportOptions& o, const Progress& progress) {
  require(!results.empty() && results.size() == series.frames.size() && series.keys.size() == results.size(),
          path + ": the series and its reconstructions do not match");
  if (results.size() == 1) return writeImageOutput(path, results.front(), series.frames.front(), o, progress);
  checkOutputPath(path, o);
  ExportReport report;
  report.kind = outputKind(path);
  report.path = path;
  const Dataset& d = series.frames.front();
  const Shape frameShape = results.front().image.shape();
  switch (report.kind) {
    case OutputKind::Png: {
      ExportOptions quiet = o;
      quiet.printWarnings = false;
      report = writeImageOutput(path, results.front(), d, quiet, progress);
      report.warnings.push_back("PNG shows frame 0 (" + series.keys.front().str() + ") of " +
                                std::to_string(results.size()) + "; write .cfl, .nii or DICOM for every frame");
      break;
    }
    case OutputKind::Bart: {
      const CArray all = concatenatedFrames(results, path);
      requireFiniteImage(all, path);
      checkFormatLimits(report.kind, all.shape(), path);
      progress.report(0.0, "writing BART");
      writeCfl(path, bartSeries(results, series, report.warnings));
      const std::string base = cflBasePath(path);
      report.files = {base + ".hdr", base + ".cfl"};
      break;
    }
    case OutputKind::Nifti: {
      const CArray all = concatenatedFrames(results, path);
      requireFiniteImage(all, path);
      checkFormatLimits(report.kind, all.shape(), path);
      ImageGeometry g = imageGeometry(d.header, frameShape);
      report.warnings = g.warnings;
      NiftiOptions no;
      no.complex = o.niftiComplex;
      no.frames = static_cast<index_t>(results.size());
      double lo, hi;
      if (o.windowWidth > 0) {
        lo = o.windowCenter - 0.5 * o.windowWidth, hi = o.windowCenter + 0.5 * o.windowWidth;
      } else {
        automaticWindow(extractComponent(all, ImageComponent::Magnitude), ImageComponent::Magnitude, lo, hi);
      }
      no.calMin = lo, no.calMax = hi;
      no.description = "Larmor " + versionString() + " " + std::to_string(results.size()) + " frames" +
                       (o.niftiComplex ? " complex" : " magnitude");
      const auto w = writeNifti(path, all, g, no);
      report.warnings.insert(report.warnings.end(), w.begin(), w.end());
      report.files = {path};
      break;
    }
    case OutputKind::Dicom: {
#ifdef LARMOR_HAVE_IO
      recon::ReconResult combined = results.front();
      combined.image = concatenatedFrames(results, path);
      requireFiniteImage(combined.image, path);
      checkFormatLimits(report.kind, combined.image.shape(), path);
      const ImageGeometry g = imageGeometry(d.header, frameShape);
      report.warnings = g.warnings;
      ExportOptions withFrames = o;
      withFrames.frames = frameTags(series);
      report.files = writeDicomAtomically(path, combined, d, withFrames, g, progress);
      report.path = dicomTarget(path).string();
#else
      throw Error(path + ": this build has no DICOM support (LARMOR_IO=OFF)");
#endif
      break;
    }
  }
  return finished(std::move(report), o);
}

}  // namespace larmor::io
