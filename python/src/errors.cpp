// Engine errors as Python exceptions: larmor.Error (a RuntimeError) carries the engine's one-line message as it
// is, larmor.Cancelled a cancelled operation (a progress callback that raised, or Ctrl-C, which comes back as
// KeyboardInterrupt: recon.cpp).
#include "bindings.hpp"
#include "larmor/util/error.hpp"

namespace larmor::python {

void bindErrors(py::module_& m) {
  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<Cancelled> cancelled(m, "Cancelled", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Cancelled& e) {
      cancelled(e.what());
    } catch (const Error& e) {
      error(e.what());
    }
  });
}

}  // namespace larmor::python
