// libFuzzer target for ISMRMRD (HDF5) files through io::loadDataset, read whole and structure only (as `info`
// reads them). The input is the whole .h5 file;
// the seeds are valid small files (make-corpus.sh), which libFuzzer mutates. After each input no HDF5
// object may remain open: a leaked id on an error path would pile up over a long session in the GUI.
#include <hdf5.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "larmor/io/dataset_io.hpp"

// The reader first reads each file in larmor-h5check, its crash sandbox (docs/dicom.md), which in this
// build is instrumented too. There a crash of libhdf5 (not instrumented) must stay a plain signal, as in
// production, so the sandbox turns it into an Error; but a sanitizer report (only Larmor's code and the
// allocator interceptors are instrumented) is a finding: it reaches us as the Error's text, and aborts here.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Read by the helper processes only (this process read its options at start-up).
  setenv("ASAN_OPTIONS",
         "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_abort=0:allocator_may_return_null=1:"
         "detect_leaks=0:exitcode=86",
         1);
  setenv("UBSAN_OPTIONS", "halt_on_error=1:exitcode=86:print_stacktrace=1", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace larmor;
  const std::string path = fuzz::scratchDir() + "/in.h5";
  fuzz::writeFile(path, std::string_view(reinterpret_cast<const char*>(data), size));
  // The full read, and the structure-only read of `info` (whose samples are checked by helper threads).
  for (const bool structureOnly : {false, true}) {
    try {
      io::LoadOptions options;
      options.structureOnly = structureOnly;
      (void)io::loadDataset(path, options);
    } catch (const Error& e) {
      // bad input, reported as it should be; unless the sandbox's helper hit a sanitizer report
      const std::string what = e.what();
      // (A sanitizer's WARNING, e.g. an impossible allocation refused with allocator_may_return_null, is the
      // production behaviour of malloc; only reports count. A helper's Error carries no sanitizer text.)
      if (what.find("ERROR: AddressSanitizer") != std::string::npos ||
          what.find("ERROR: UndefinedBehaviorSanitizer") != std::string::npos ||
          what.find("ERROR: LeakSanitizer") != std::string::npos || what.find("runtime error:") != std::string::npos) {
        std::fprintf(stderr, "larmor-h5check (the crash sandbox) reported:\n%s\n", what.c_str());
        std::abort();
      }
    }
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
