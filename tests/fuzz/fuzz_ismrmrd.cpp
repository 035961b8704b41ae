// libFuzzer target for ISMRMRD (HDF5) files through io::loadDataset. The input is the whole .h5 file;
// the seeds are valid small files (make-corpus.sh), which libFuzzer mutates. After each input no HDF5
// object may remain open: a leaked id on an error path would pile up over a long session in the GUI.
#include <hdf5.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fuzz_common.hpp"
#include "larmor/io/dataset_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace larmor;
  const std::string path = fuzz::scratchDir() + "/in.h5";
  fuzz::writeFile(path, std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    (void)io::loadDataset(path);
  } catch (const Error&) {
    // bad input, reported as it should be
  }
  const ssize_t open = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  if (open > 0) {
    std::fprintf(stderr, "HDF5 objects left open after a load: %zd\n", open);
    std::vector<hid_t> ids(static_cast<std::size_t>(open));
    H5Fget_obj_ids(H5F_OBJ_ALL, H5F_OBJ_ALL, ids.size(), ids.data());
    for (hid_t id : ids) {
      char name[512] = {0};
      H5Iget_name(id, name, sizeof name);
      std::fprintf(stderr, "  id %lld type %d name '%s'\n", static_cast<long long>(id), static_cast<int>(H5Iget_type(id)), name);
    }
    std::abort();
  }
  return 0;
}
