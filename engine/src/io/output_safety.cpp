// Output safety rules, checked before any work (see output_safety.hpp for the rules and
// docs/reliability.md for the guarantees they give). Identity of files: st_dev/st_ino when both exist
// (hard links, symlinks, "./a" vs "a"), else the canonical paths. Provenance of an existing output: read
// from a bounded prefix of a regular file, by the marker its Larmor writer puts inside it. Size estimates are deliberately
// generous (headers rounded up), since running out of disk after the work is what they prevent.
#include "larmor/io/output_safety.hpp"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include "larmor/util/atomic_file.hpp"
#include "larmor/util/error.hpp"
#include "larmor/util/provenance.hpp"

namespace fs = std::filesystem;

namespace larmor::io {

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string lowerExt(const std::string& path) { return lower(fs::path(path).extension().string()); }

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "out/series/" -> "out/series".
std::string stripSlashes(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

fs::path parentOf(const fs::path& p) { return p.has_parent_path() ? p.parent_path() : fs::path("."); }

std::string canonical(const std::string& p) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::absolute(p).lexically_normal().string() : c.string();
}

std::vector<std::string> members(const std::string& path, bool completeBare) {
  const std::string ext = lowerExt(path);
  if (ext == ".cfl" || ext == ".hdr") {
    const std::string base = path.substr(0, path.size() - 4);
    return {base + ".cfl", base + ".hdr"};
  }
  if (completeBare && ext.empty() && !path.empty() && path.back() != '/') return {path, path + ".cfl", path + ".hdr"};
  return {path};
}

std::uintmax_t ceilAdd(std::uintmax_t a, std::uintmax_t b) { return a > UINTMAX_MAX - b ? UINTMAX_MAX : a + b; }
std::uintmax_t ceilMul(std::uintmax_t a, std::uintmax_t b) {
  return (b != 0 && a > UINTMAX_MAX / b) ? UINTMAX_MAX : a * b;
}

std::string human(std::uintmax_t bytes) {
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024.0);
  char buf[64];
  if (mib >= 1024) std::snprintf(buf, sizeof buf, "%.1f GiB", mib / 1024);
  else std::snprintf(buf, sizeof buf, "%.1f MiB", mib);
  return buf;
}

// PNG of an image: the mosaic of 2D planes side by side, or a 3D volume's middle partition.
void pngSize(const Shape& s, bool mosaicAlways, std::uintmax_t& w, std::uintmax_t& h) {
  const std::uintmax_t nx = static_cast<std::uintmax_t>(s[0]), ny = static_cast<std::uintmax_t>(s[1]);
  const std::uintmax_t planes = nx * ny > 0 ? static_cast<std::uintmax_t>(s.size()) / (nx * ny) : 0;
  w = (!mosaicAlways && s[2] > 1) ? nx : ceilMul(nx, planes);
  h = ny;
}

// The first `limit` bytes of a regular file (never a FIFO, which would block).
std::string head(const std::string& file, std::size_t limit) {
  std::ifstream in(file, std::ios::binary);
  std::string h(limit, '\0');
  in.read(h.data(), static_cast<std::streamsize>(limit));
  h.resize(in ? limit : static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
  return h;
}

bool startsWith(const std::string& s, std::size_t at, const std::string& prefix) {
  return s.size() >= at + prefix.size() && s.compare(at, prefix.size(), prefix) == 0;
}

// JSON: an object with "software": "Larmor", or a settings file / saved GUI session (their own keys).
std::string whyNotLarmorJson(const std::string& file, std::uintmax_t size) {
  const std::string no = "is not JSON written by Larmor (no \"software\": \"Larmor\")";
  if (size > (64u << 20)) return no;
  const std::string text = head(file, static_cast<std::size_t>(size));
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{') return no;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return no;
  const auto sw = j.find("software");
  if (sw != j.end() && sw->is_string() && sw->get<std::string>() == kSoftwareName) return {};
  if (j.contains("larmor_settings") || j.contains("larmor_session")) return {};
  return no;
}

// A BART header with a "# Creator" section whose next line begins "Larmor".
bool isLarmorCflHeader(const std::string& hdr) {
  std::istringstream in(head(hdr, 64 * 1024));
  std::string line;
  while (std::getline(in, line))
    if (line == "# Creator" && std::getline(in, line)) return line.rfind(kSoftwareName, 0) == 0;
  return false;
}

// NIfTI-1 single file: sizeof_hdr 348 (either byte order), descrip (80 bytes at 148) beginning "Larmor".
bool isLarmorNifti(const std::string& file) {
  const std::string h = head(file, 348);
  if (h.size() < 348) return false;
  const bool le = static_cast<unsigned char>(h[0]) == 0x5c && h[1] == 1 && h[2] == 0 && h[3] == 0;
  const bool be = h[0] == 0 && h[1] == 0 && h[2] == 1 && static_cast<unsigned char>(h[3]) == 0x5c;
  return (le || be) && startsWith(h, 148, kSoftwareName);
}

// PNG: a tEXt chunk "Software" whose text begins "Larmor", anywhere among the chunks (skipped by length).
bool isLarmorPng(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  char sig[8];
  if (!in.read(sig, 8) || std::string(sig, 8) != std::string("\x89PNG\r\n\x1a\n", 8)) return false;
  const std::string want = std::string("Software") + '\0' + kSoftwareName;
  for (int n = 0; n < 100000; ++n) {
    unsigned char len[4];
    char type[4];
    if (!in.read(reinterpret_cast<char*>(len), 4) || !in.read(type, 4)) return false;
    const std::uint32_t l = (std::uint32_t{len[0]} << 24) | (std::uint32_t{len[1]} << 16) | (std::uint32_t{len[2]} << 8) | len[3];
    const std::string t(type, 4);
    if (t == "IEND") return false;
    if (t == "tEXt" && l >= want.size() && l < (1u << 20)) {
      std::string text(l, '\0');
      if (!in.read(text.data(), l)) return false;
      if (text.compare(0, want.size(), want) == 0) return true;
      in.seekg(4, std::ios::cur);  // the CRC
    } else {
      in.seekg(static_cast<std::streamoff>(l) + 4, std::ios::cur);
    }
    if (!in) return false;
  }
  return false;
}

// ISMRMRD (HDF5): Larmor's writer puts the user parameter larmor_trajectory into every XML header, which
// libismrmrd writes first, so it lies near the start of the file (not parsed with libhdf5: a foreign file
// may be hostile).
bool isLarmorIsmrmrd(const std::string& file) {
  const std::string h = head(file, 1u << 20);
  return startsWith(h, 0, std::string("\x89HDF\r\n\x1a\n", 8)) &&
         h.find("<name>larmor_trajectory</name>") != std::string::npos;
}

}  // namespace

std::string softwareText() { return std::string(kSoftwareName) + " " + versionString(); }

nlohmann::json withProvenance(nlohmann::json j) {
  if (!j.is_object()) return j;
  j["software"] = kSoftwareName;
  if (!j.contains("version")) j["version"] = versionString();
  return j;
}

std::vector<std::string> pathMembers(const std::string& path) { return members(path, true); }

std::vector<std::string> outputMembers(const std::string& path, OutputRole role) {
  if (role == OutputRole::Kspace && lowerExt(path).empty() && !path.empty() && path.back() != '/')
    return {path + ".cfl", path + ".hdr"};
  return members(path, false);
}

std::string whyNotReplaceable(const std::string& file, OutputRole role) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) {
    struct stat lst {};
    return ::lstat(file.c_str(), &lst) == 0 ? "is a broken symbolic link" : std::string();
  }
  if (S_ISDIR(st.st_mode)) return "is a folder";
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  if (st.st_size == 0) return {};
  const auto size = static_cast<std::uintmax_t>(st.st_size);
  if (role == OutputRole::Json) return whyNotLarmorJson(file, size);
  const std::string ext = lowerExt(file);
  if (ext == ".hdr")
    return isLarmorCflHeader(file) ? std::string() : "is not a BART header written by Larmor (no '# Creator' Larmor)";
  if (ext == ".cfl") {
    const std::string hdr = file.substr(0, file.size() - 4) + ".hdr";
    return isLarmorCflHeader(hdr) ? std::string()
                                  : "its header " + hdr + " is missing or not written by Larmor (no '# Creator' Larmor)";
  }
  if (ext == ".nii") return isLarmorNifti(file) ? std::string() : "is not a NIfTI file written by Larmor (its descrip does not begin with Larmor)";
  if (ext == ".png") return isLarmorPng(file) ? std::string() : "is not a PNG written by Larmor (no tEXt Software Larmor)";
  if (ext == ".h5") return isLarmorIsmrmrd(file) ? std::string() : "is not an ISMRMRD file written by Larmor (no larmor_trajectory parameter)";
  return "is not a file Larmor writes (" + (ext.empty() ? std::string("no extension") : "'" + ext + "'") + ")";
}

void requireReplaceable(const std::string& output, OutputRole role) {
  if (output.empty()) return;
  if (role == OutputRole::Image && outputKind(output) == OutputKind::Dicom) return;  // exportFolderState
  for (const auto& m : outputMembers(output, role)) {
    const std::string why = whyNotReplaceable(m, role);
    if (!why.empty())
      throw Error(m + ": exists and " + why + "; Larmor replaces only a file it wrote itself, so it is left as it " +
                  "is: choose another output path or remove it");
  }
}

bool sameFile(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  return canonical(a) == canonical(b);
}

void requireNotAnInput(const std::string& output, OutputRole role, const std::vector<std::string>& inputs) {
  if (output.empty()) return;
  const bool folder = role == OutputRole::Image && outputKind(output) == OutputKind::Dicom;
  const std::string folderPath = folder ? canonical(stripSlashes(output)) : std::string();
  for (const auto& input : inputs) {
    if (input.empty()) continue;
    for (const auto& in : members(input, true)) {
      if (folder) {
        const std::string c = canonical(in);
        if (c == folderPath || c.rfind(folderPath + "/", 0) == 0)
          throw Error(output + ": the output folder holds the input " + input + "; choose another folder");
        continue;
      }
      for (const auto& out : outputMembers(output, role))
        if (sameFile(out, in))
          throw Error(output + ": is the input " + input +
                      (out != output || in != input ? " (" + out + " is " + in + ")" : std::string()) +
                      "; writing it would destroy the input, choose another output path");
    }
  }
}

bool isLarmorDicomFile(const std::string& file) {
  // (0019,0010) LO, length 6, "LARMOR" in Explicit VR Little Endian: our private creator element, which
  // sorts before every group-0020+ element, so it sits in the first few KiB.
  static const char sig[] = {0x19, 0x00, 0x10, 0x00, 'L', 'O', 0x06, 0x00, 'L', 'A', 'R', 'M', 'O', 'R'};
  std::ifstream in(file, std::ios::binary);
  if (!in) return false;
  std::string head(64 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  if (head.size() < 132 || head.compare(128, 4, "DICM") != 0) return false;
  return head.find(std::string(sig, sizeof sig)) != std::string::npos;
}

FolderState exportFolderState(const std::string& folder, const std::string& path) {
  std::error_code ec;
  const fs::path dir(stripSlashes(folder));
  const auto st = fs::symlink_status(dir, ec);
  if (!fs::exists(st)) return FolderState::Absent;
  if (!fs::is_directory(st))
    throw Error(path + ": exists and is not a folder (a DICOM series needs a new or empty folder)");
  bool empty = true, marker = false;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    empty = false;
    const std::string name = e.path().filename().string();
    if (name == kExportMarker && e.is_regular_file(ec) && !e.is_symlink(ec)) marker = true;
    else names.push_back(name);
  }
  if (ec) throw Error(path + ": cannot list the folder (" + ec.message() + ")");
  if (empty) return FolderState::Empty;
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    const fs::path f = dir / name;
    const bool dcm = endsWith(lower(name), ".dcm") && fs::is_regular_file(fs::symlink_status(f, ec));
    if (!dcm || (!marker && !isLarmorDicomFile(f.string())))
      throw Error(path + ": the folder holds '" + name + "', which Larmor did not write; only a previous Larmor " +
                  "export is replaced, choose a new or empty folder");
  }
  return FolderState::PreviousExport;
}

void requireWritableFolder(const std::string& dir, const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(path + ": cannot write, folder " + dir + " does not exist");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw Error(path + ": cannot write in " + dir + " (" + std::strerror(errno) + ")");
}

void requireFreeSpace(const std::string& dir, std::uintmax_t bytes, const std::string& path) {
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) != 0) return;  // unknown: the write reports a full disk itself
  const std::uintmax_t avail = ceilMul(static_cast<std::uintmax_t>(v.f_bavail), v.f_frsize);
  if (bytes > avail)
    throw Error(path + ": not enough free disk space in " + dir + " (about " + human(bytes) + " needed, " +
                human(avail) + " free)");
}

void checkFormatLimits(OutputKind kind, const Shape& s, const std::string& path, int components) {
  if (s.rank() == 0 || s.size() == 0) return;
  switch (kind) {
    case OutputKind::Dicom:
      if (s[0] > 65535 || s[1] > 65535)
        throw Error(path + ": DICOM Columns and Rows are limited to 65535; the image is " + std::to_string(s[0]) +
                    " x " + std::to_string(s[1]) + " (choose a smaller --matrix, or write .cfl)");
      break;
    case OutputKind::Nifti: {
      const index_t planes = s.size() / (s[0] * s[1]);
      for (index_t n : {s[0], s[1], s[2], s[4], planes})
        if (n > 32767)
          throw Error(path + ": NIfTI-1 dimensions are limited to 32767; the image is " + s.str() + " (write .cfl)");
      break;
    }
    case OutputKind::Png: {
      std::uintmax_t w = 0, h = 0;
      pngSize(s, false, w, h);
      const std::uintmax_t channels = static_cast<std::uintmax_t>(std::max(1, components));
      if (w > INT_MAX || h > INT_MAX || ceilMul(ceilAdd(ceilMul(w, channels), 1), h) > (std::uintmax_t{1} << 31) - (1 << 20))
        throw Error(path + ": a PNG of " + std::to_string(w) + " x " + std::to_string(h) +
                    " pixels is too large (one PNG chunk holds under 2 GiB); write .cfl or .nii");
      break;
    }
    case OutputKind::Bart:
      break;
  }
}

std::uintmax_t estimateImageBytes(OutputKind kind, const Shape& s, int components, bool niftiComplex) {
  const auto voxels = static_cast<std::uintmax_t>(s.size());
  const std::uintmax_t planes = s[0] * s[1] > 0 ? voxels / static_cast<std::uintmax_t>(s[0] * s[1]) : 0;
  switch (kind) {
    case OutputKind::Bart: return ceilAdd(ceilMul(voxels, 8), 4096);
    case OutputKind::Nifti: return ceilAdd(ceilMul(voxels, niftiComplex ? 8 : 4), 4096);
    case OutputKind::Png: {
      std::uintmax_t w = 0, h = 0;
      pngSize(s, false, w, h);
      return ceilAdd(ceilMul(ceilAdd(w, 1), h), ceilAdd(ceilMul(h, 8), 4096));
    }
    case OutputKind::Dicom:
      // 2 bytes a pixel plus a generous 16 KiB of header and provenance per instance.
      return ceilMul(static_cast<std::uintmax_t>(std::max(1, components)),
                     ceilAdd(ceilMul(voxels, 2), ceilMul(planes, 16384)));
  }
  return 0;
}

void checkOutputs(const std::vector<PlannedOutput>& outputs, const std::vector<std::string>& inputs) {
  std::map<dev_t, std::pair<std::uintmax_t, std::string>> need;  // device -> bytes, a folder on it
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const PlannedOutput& o = outputs[i];
    if (o.path.empty()) continue;
    requireNotAnInput(o.path, o.role, inputs);
    for (std::size_t j = 0; j < i; ++j) {
      if (outputs[j].path.empty()) continue;
      for (const auto& a : outputMembers(o.path, o.role))
        for (const auto& b : outputMembers(outputs[j].path, outputs[j].role))
          if (sameFile(a, b))
            throw Error(o.path + ": is also the output " + outputs[j].path + "; give each output its own path");
    }
    std::uintmax_t bytes = o.bytes;
    std::string folder;
    if (o.role == OutputRole::Image) {
      checkOutputPath(o.path, o.options);  // kind, options, parent folder, DICOM folder state
      const OutputKind kind = outputKind(o.path);
      folder = parentOf(kind == OutputKind::Dicom ? fs::path(stripSlashes(o.path)) : fs::path(o.path)).string();
      if (o.image.rank() > 0) {
        const int comps = kind == OutputKind::Dicom ? static_cast<int>(o.options.components.size()) : 1;
        checkFormatLimits(kind, o.image, o.path, 1);
        if (bytes == 0) bytes = estimateImageBytes(kind, o.image, comps, o.options.niftiComplex);
      }
    } else {
      if (fs::is_directory(o.path) || (!o.path.empty() && o.path.back() == '/'))
        throw Error(o.path + ": is a folder; name a file");
      folder = parentOf(fs::path(o.path)).string();
      requireWritableFolder(folder, o.path);
      if (o.role == OutputRole::Map) {
        if (lowerExt(o.path) != ".png") throw Error(o.path + ": the error map is written as PNG; name a .png file");
        if (o.image.rank() > 0) {
          checkFormatLimits(OutputKind::Png, o.image, o.path, 3);
          if (bytes == 0) bytes = 3 * estimateImageBytes(OutputKind::Png, o.image, 1, false);
        }
      }
      if (bytes == 0) bytes = 1 << 20;
    }
    requireReplaceable(o.path, o.role);
    struct stat st {};
    if (::stat(folder.c_str(), &st) == 0) {
      auto& n = need[st.st_dev];
      n.first = ceilAdd(n.first, bytes);
      if (n.second.empty()) n.second = o.path;
      requireFreeSpace(folder, n.first, o.path);
    }
  }
}

}  // namespace larmor::io
