#include "larmor/util/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "larmor/util/error.hpp"
#include "larmor/util/temp_registry.hpp"

namespace fs = std::filesystem;

namespace larmor {

std::string randomTempSuffix() { return randomLettersAndDigits(kTempSuffixLength); }

AtomicFile::AtomicFile(std::string target) : target_(std::move(target)) {
  require(!target_.empty(), "output path is empty");
  const fs::path p(target_);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(target_ + ": cannot write, directory " + dir.string() + " does not exist");
  if (fs::is_directory(p, ec)) throw Error(target_ + ": cannot write, it is a directory");
  reserved_ = reserveTemporary(target_, TempKind::File);
  temp_ = reserved_.path;
}

AtomicFile::~AtomicFile() {
  if (!committed_ && !temp_.empty()) {
    std::error_code ec;
    fs::remove(temp_, ec);  // best effort: a destructor must not throw
  }
  releaseTemporary(reserved_);
}

void AtomicFile::commit() {
  require(!committed_, target_ + ": committed twice");
  std::error_code ec;
  if (!fs::exists(temp_, ec)) throw Error(target_ + ": cannot write, nothing was written");
  // std::rename replaces an existing target atomically on POSIX.
  if (std::rename(temp_.c_str(), target_.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    fs::remove(temp_, ec);
    throw Error(target_ + ": cannot write (" + why + ")");
  }
  committed_ = true;
  releaseTemporary(reserved_);
}

}  // namespace larmor
