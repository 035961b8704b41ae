// The _larmor extension module: the engine's data, reconstruction and building blocks for Python
// (docs/python.md). The larmor package (python/larmor/__init__.py) re-exports it.
#include "bindings.hpp"

PYBIND11_MODULE(_larmor, m) {
  using namespace larmor::python;
  m.doc() = "Larmor's MRI reconstruction engine (NumPy arrays: the engine's axes reversed, C order)";
  bindErrors(m);
  bindDevices(m);
  bindData(m);
  bindSeries(m);
  bindRecon(m);
  bindDeviceArray(m);
  bindNufft(m);
  bindOps(m);
  bindPriors(m);
  bindMaps(m);
  bindSense(m);
  bindGrappa(m);
}
