// Engine errors as Python exceptions: larmor.Error (a RuntimeError) carries the engine's one-line message as it
// is, larmor.Cancelled a cancelled operation (a progress callback that raised, or Ctrl-C, which comes back as
// KeyboardInterrupt: recon.cpp).
#include "bindings.hpp"
#include "larmor/util/error.hpp"

namespace larmor::python {

void bindErrors(py::module_& m) {
  // Kept for the life of the process (never destroyed: a destructor after the interpreter's end would need the GIL).
  static auto* error = new py::exception<Error>(m, "Error", PyExc_RuntimeError);
  static auto* cancelled = new py::exception<Cancelled>(m, "Cancelled", error->ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Cancelled& e) {
      (*cancelled)(e.what());
    } catch (const Error& e) {
      (*error)(e.what());
    }
  });
}

}  // namespace larmor::python
