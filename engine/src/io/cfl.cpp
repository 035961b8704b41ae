// BART .cfl/.hdr reading and writing. Publishing protocol of a pair (docs/reliability.md): both files are
// written under temporary names next to their targets; then, holding an exclusive flock(2) on the folder
// (no lock file is left behind) and with SIGINT/SIGTERM/SIGHUP blocked, the data are renamed into place
// and then the header. Readers take a shared lock on the folder while they read the header and open the
// data file (an open file keeps its contents across a later rename). So two writers of one pair publish
// one after the other, never interleaved, and a reader sees an old or a new pair, never a mix. Locks are
// advisory and best effort: a folder we cannot open (or a file system without flock) goes unlocked.
#include "larmor/io/cfl.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>

#include "larmor/io/output_safety.hpp"
#include "larmor/recon/resources.hpp"
#include "larmor/util/atomic_file.hpp"
#include "larmor/util/input_file.hpp"
#include "larmor/util/signals_blocked.hpp"

namespace fs = std::filesystem;

namespace larmor::io {

namespace {

static_assert(sizeof(cfloat) == 8, "cfl files hold 8-byte complex floats");

// Far beyond any MRI array, small enough that dims*8 cannot overflow int64 before we compare sizes.
constexpr index_t kMaxElements = index_t{1} << 56;
constexpr std::uintmax_t kMaxHeaderBytes = 1 << 20;

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<index_t> parseDimsLine(const std::string& line, const std::string& hdr) {
  std::vector<index_t> dims;
  std::istringstream in(line);
  std::string tok;
  while (in >> tok) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(tok.c_str(), &end, 10);
    if (end == tok.c_str() || *end != '\0')
      throw Error(hdr + ": dimension '" + tok + "' is not an integer");
    if (errno == ERANGE || v > kMaxElements) throw Error(hdr + ": dimension " + tok + " is too large");
    if (v <= 0) throw Error(hdr + ": dimension " + tok + " is not positive");
    dims.push_back(static_cast<index_t>(v));
    if (dims.size() > 64) throw Error(hdr + ": more than 64 dimensions");
  }
  if (dims.empty()) throw Error(hdr + ": the line after '# Dimensions' holds no dimensions");
  return dims;
}

Shape readHeader(const std::string& base) {
  const std::string hdr = base + ".hdr";
  std::error_code ec;
  if (!fs::exists(hdr, ec)) throw Error(hdr + ": no such file");
  if (fs::is_directory(hdr, ec)) throw Error(hdr + ": is a directory, not a BART header");
  requireRegularInput(hdr);
  // A .hdr is a few short lines; a large one is some other file, and reading it line by line could
  // pull gigabytes without a newline into memory.
  const auto hdrBytes = fs::file_size(hdr, ec);
  if (!ec && hdrBytes > kMaxHeaderBytes)
    throw Error(hdr + ": " + std::to_string(hdrBytes) + " bytes is too large for a BART header");
  std::ifstream in(hdr);
  if (!in) throw Error(hdr + ": cannot open");
  std::string line;
  std::vector<index_t> dims;
  bool sawDimensions = false;
  int lines = 0;
  while (std::getline(in, line)) {
    if (++lines > 10000) break;  // a .hdr is a few lines; do not scan a mislabelled data file
    if (trim(line) != "# Dimensions") continue;
    sawDimensions = true;
    std::string next;
    if (!std::getline(in, next)) throw Error(hdr + ": no dimensions after '# Dimensions'");
    dims = parseDimsLine(next, hdr);
    break;
  }
  if (!sawDimensions) throw Error(hdr + ": not a BART header (no '# Dimensions' line)");
  index_t n = 1;
  for (auto d : dims) {
    if (n > kMaxElements / d) throw Error(hdr + ": dimensions " + Shape(dims).str() + " are too large");
    n *= d;
  }
  while (dims.size() > 1 && dims.back() == 1) dims.pop_back();
  return Shape(std::move(dims));
}

// flock(2) on the folder holding a pair: LOCK_EX by writers across the two renames, LOCK_SH by readers.
class FolderLock {
 public:
  FolderLock(const std::string& base, int how) {
    const fs::path p(base);
    const std::string dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
    fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ >= 0)
      while (::flock(fd_, how) != 0 && errno == EINTR) {
      }
  }
  ~FolderLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

std::string cflBasePath(const std::string& path) {
  if (endsWith(path, ".cfl") || endsWith(path, ".hdr")) return path.substr(0, path.size() - 4);
  return path;
}

Shape readCflShape(const std::string& path) { return readHeader(cflBasePath(path)); }

CArray readCfl(const std::string& path) {
  const std::string base = cflBasePath(path);
  const std::string cfl = base + ".cfl";
  Shape shape;
  std::ifstream in;
  std::uintmax_t bytes = 0;
  {
    // The header and the data file's identity under one shared lock: a pair published meanwhile by
    // writeCfl cannot give this header with the other data.
    const FolderLock lock(base, LOCK_SH);
    shape = readHeader(base);
    std::error_code ec;
    if (!fs::exists(cfl, ec)) throw Error(cfl + ": no such file");
    if (fs::is_directory(cfl, ec)) throw Error(cfl + ": is a directory, not BART data");
    requireRegularInput(cfl);
    in.open(cfl, std::ios::binary);
    if (!in) throw Error(cfl + ": cannot open (" + std::strerror(errno) + ")");
    in.seekg(0, std::ios::end);
    const std::streamoff end = in.tellg();
    if (end < 0) throw Error(cfl + ": cannot read its size");
    bytes = static_cast<std::uintmax_t>(end);
    in.seekg(0, std::ios::beg);
  }
  const auto expected = static_cast<std::uintmax_t>(shape.size()) * sizeof(cfloat);
  if (bytes != expected)
    throw Error(cfl + ": holds " + std::to_string(bytes) + " bytes but " + base + ".hdr dimensions " +
                shape.str() + " need " + std::to_string(expected) + " bytes");
  // The memory planner's limit before the allocation (a 12 GB pair is refused, not read until the kernel
  // kills the process).
  recon::requireHostMemory(static_cast<double>(expected), cfl, "the array " + shape.str());
  CArray a;
  try {
    a = CArray(shape);
  } catch (const std::bad_alloc&) {
    throw Error(cfl + ": not enough memory for " + shape.str());
  }
  in.read(reinterpret_cast<char*>(a.data()), static_cast<std::streamsize>(expected));
  if (in.gcount() != static_cast<std::streamsize>(expected))
    throw Error(cfl + ": read " + std::to_string(in.gcount()) + " of " + std::to_string(expected) + " bytes");
  return a;
}

void writeCfl(const std::string& path, const CArray& a) {
  const std::string base = cflBasePath(path);
  if (a.empty()) throw Error(base + ".cfl: cannot write an empty array " + a.shape().str());
  std::vector<index_t> dims = a.shape().dims();
  if (dims.empty()) dims.push_back(1);
  for (std::size_t i = kBartDims; i < dims.size(); ++i)
    if (dims[i] != 1)
      throw Error(base + ".hdr: array " + a.shape().str() + " has more than " + std::to_string(kBartDims) +
                  " dimensions, BART's limit");
  dims.resize(std::max(dims.size(), kBartDims), 1);
  if (dims.size() > kBartDims) dims.resize(kBartDims);

  AtomicFile hdr(base + ".hdr");
  AtomicFile cfl(base + ".cfl");
  {
    std::ofstream out(cfl.tempPath(), std::ios::binary | std::ios::trunc);
    if (!out) throw Error(cfl.target() + ": cannot create (" + std::strerror(errno) + ")");
    out.write(reinterpret_cast<const char*>(a.data()), static_cast<std::streamsize>(a.size() * sizeof(cfloat)));
    out.close();
    if (!out) throw Error(cfl.target() + ": write failed (" + std::strerror(errno) + ")");
  }
  {
    std::ofstream out(hdr.tempPath(), std::ios::trunc);
    if (!out) throw Error(hdr.target() + ": cannot create (" + std::strerror(errno) + ")");
    // BART's own layout: every dimension followed by a space, as write_cfl_header prints it; then BART's
    // "# Creator" section naming Larmor, the provenance by which a later run may replace this pair
    // (output_safety.hpp, rule 5; BART and readCfl skip the section).
    out << "# Dimensions\n";
    for (auto d : dims) out << d << ' ';
    out << "\n# Creator\n" << softwareText() << '\n';
    out.close();
    if (!out) throw Error(hdr.target() + ": write failed (" + std::strerror(errno) + ")");
  }
  // Data first, then the header, as one unit under the folder lock and with signals held back (the
  // protocol at the top of this file).
  const FolderLock lock(base, LOCK_EX);
  const SignalsBlocked blocked;
  cfl.commit();
  hdr.commit();
}

void requireFinite(const CArray& a, const std::string& what) {
  const cfloat* p = a.data();
  for (index_t i = 0; i < a.size(); ++i) {
    const float re = p[i].real(), im = p[i].imag();
    if (std::isfinite(re) && std::isfinite(im)) continue;
    const bool nan = std::isnan(re) || std::isnan(im);
    throw Error(what + ": sample " + std::to_string(i) + (nan ? " is NaN" : " is Inf"));
  }
}

}  // namespace larmor::io
