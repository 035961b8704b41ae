#include "larmor/util/input_file.hpp"

#include <sys/stat.h>

#include "larmor/util/error.hpp"

namespace larmor {

void requireRegularInput(const std::string& path) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return;
  const char* kind = S_ISFIFO(st.st_mode)  ? "a FIFO"
                     : S_ISCHR(st.st_mode) ? "a character device"
                     : S_ISBLK(st.st_mode) ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a file";
  throw Error(path + ": not a regular file (" + std::string(kind) + "); Larmor reads data files only");
}

}  // namespace larmor
