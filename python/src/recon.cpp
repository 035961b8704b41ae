// larmor.recon: recon::run with the settings given as keyword arguments, named as larmor-cli recon's flags
// ("--lambda-rule" is lambda_rule; lambda is also lam) or by their JSON keys ("iterative.lambda"), parsed and
// checked by the engine's settings table (larmor/recon/settings_table.hpp) as the CLI's are: the method first and
// its defaults, then each other setting; a lambda given fixes the lambda rule unless one is given; a setting
// the method does not read is an error. So the same settings give the CLI's image, bit for bit.
// The GIL is released while the engine works; progress callbacks reach Python through the engine's Progress (its
// reports take the GIL for a moment); Ctrl-C cancels the engine's token at once (interrupt.hpp) and is also seen at
// the reports (a KeyboardInterrupt Python itself made pending, e.g. _thread.interrupt_main).
#include <pybind11/stl.h>

#include <cmath>
#include <optional>
#include <sstream>

#include "bindings.hpp"
#include "device_array.hpp"
#include "interrupt.hpp"
#include "json_convert.hpp"
#include "larmor/io/series.hpp"
#include "larmor/recon/settings_table.hpp"
#include "numpy_arrays.hpp"
#include "recon_result.hpp"
#include "recon_settings.hpp"

namespace larmor::python {

namespace st = recon::settings;

namespace {

/// The table's setting for a keyword: lam and lambda_ are lambda (a Python keyword); underscores are dashes.
const st::Setting& settingFor(const std::string& name) {
  std::string flag = (name == "lam" || name == "lambda_") ? "lambda" : name;
  if (flag.find('.') == std::string::npos)
    for (char& c : flag)
      if (c == '_') c = '-';
  for (const st::Setting& s : st::table())
    if (s.flag == flag || s.key == name) {
      require(s.scope == st::Scope::User, "larmor.recon: " + name + " is an internal setting");
      return s;
    }
  throw Error("larmor.recon: unknown setting " + name + " (larmor.settings() lists them)");
}

/// A Python value as the command line's text: reals by repr (the shortest text that reads back as the same
/// double), sequences of integers as AxB[xC].
std::string asText(const py::handle& v) {
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::float_>(v)) return py::repr(v).cast<std::string>();
  if (py::isinstance<py::int_>(v)) return py::str(v).cast<std::string>();
  if (py::isinstance<py::sequence>(v)) {
    std::string text;
    for (const py::handle& e : v) text += (text.empty() ? "" : "x") + py::str(e).cast<std::string>();
    return text;
  }
  return py::str(v).cast<std::string>();
}

using st::methodNames;

std::string given(const st::Setting& s, const py::handle& v) {
  return s.cliFlag() + (s.kind == st::Kind::Flag ? "" : " " + asText(v));
}

}  // namespace

recon::ReconSettings settingsFrom(const std::string& method, const py::dict& kwargs) {
  recon::ReconSettings s;
  st::set(s, st::find("method"), method);
  st::applyMethodDefaults(s);
  bool lambdaGiven = false, ruleGiven = false;
  for (const auto& [k, v] : kwargs) {
    const st::Setting& setting = settingFor(k.cast<std::string>());
    if (setting.key == "method") throw Error("larmor.recon: give the method as method=...");
    if (setting.kind == st::Kind::Flag) setting.put(s, v.cast<bool>() ? setting.flagSets : !setting.flagSets);
    else st::set(s, setting, asText(v));
    lambdaGiven |= setting.key == "iterative.lambda";
    ruleGiven |= setting.key == "iterative.lambda_rule";
  }
  if (lambdaGiven && !ruleGiven) s.iterative.lambdaRule = recon::LambdaRule::Fixed;
  for (const auto& [k, v] : kwargs) {
    const st::Setting& setting = settingFor(k.cast<std::string>());
    if ((setting.methods & st::bit(s.method)) == 0)
      throw Error(given(setting, v) + ": does not apply to --method " + recon::toString(s.method) + " (it is read by " +
                  methodNames(setting.methods) + ")");
  }
  return s;
}

namespace {

/// Reports to a Python callable (fraction, stage) and turns Ctrl-C into a cancellation. The engine's Progress
/// points to it (no Python object is copied or freed while the GIL is released).
struct PythonProgress {
  py::object callback;
  bool interrupted = false;
  std::optional<py::error_already_set> raised;  ///< what the callback raised, raised again by run()

  void report(double f, const std::string& stage) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {  // Ctrl-C: its KeyboardInterrupt stays pending for run() to raise
      interrupted = true;
      throw Cancelled();
    }
    if (callback.is_none()) return;
    try {
      callback(f, stage);
    } catch (py::error_already_set& e) {
      raised = std::move(e);
      throw Cancelled();
    }
  }
  Progress progress(const CancelToken* token) {
    return Progress([this](double f, const std::string& stage) { report(f, stage); }, token);
  }
};

recon::ReconRequest request(const std::string& method, const std::string& device, bool keepCoilImages,
                            const py::kwargs& kwargs) {
  recon::ReconRequest req;
  req.settings = settingsFrom(method, kwargs);
  req.settings.keepCoilImages = keepCoilImages;
  req.device = device;
  st::validate(req.settings);
  req.backend = backendFor(device);
  return req;
}

/// work() with the GIL released and the progress reported to `progress`; a cancellation by Ctrl-C or by the
/// callback's exception comes back as that exception.
template <class Work>
auto reporting(const py::object& progress, Work work) {
  PythonProgress reporter;
  reporter.callback = progress;
  CancelToken token;
  const Progress engineProgress = reporter.progress(&token);
  const InterruptCancels interrupt(token);  // Ctrl-C stops the engine at its next check, not its next report
  try {
    py::gil_scoped_release release;
    return work(engineProgress);
  } catch (const Cancelled&) {
    if (reporter.interrupted) throw py::error_already_set();  // the KeyboardInterrupt pending
    if (interrupt.interrupted() && PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (reporter.raised) throw *reporter.raised;
    throw;
  }
}

/// An image of the result as a DeviceArray on `backend` (named `device`): one upload of the engine's host image.
py::object deviceCopy(const CArray& image, const std::shared_ptr<Backend>& backend, const std::string& device) {
  if (image.empty()) return py::none();
  PyDeviceArray a(backend, device, image.shape());
  {
    py::gil_scoped_release release;
    backend->upload(*a.buffer, image.data(), a.bytes());
    backend->synchronize();
  }
  return py::cast(std::move(a));
}

PyReconResult run(const Dataset& d, const std::string& method, const std::string& device, bool keepCoilImages,
                  const py::object& progress, const std::string& out, const py::kwargs& kwargs) {
  if (out != "numpy" && out != "device")
    throw py::value_error("larmor.recon: out=" + out + " is not one of numpy, device");
  recon::ReconRequest req = request(method, device, keepCoilImages, kwargs);
  req.dataset = &d;
  PyReconResult r;
  r.result = reporting(progress, [&](const Progress& p) { return recon::run(req, p); });
  if (out == "device") {
    // The device that ran it: the request's, or the CPU where "auto" gave way to it.
    const bool same = r.result.device == req.backend->info().id;
    const std::shared_ptr<Backend> be = same ? req.backend : backendFor("cpu");
    const std::string name = same ? device : "cpu";
    r.deviceImage = deviceCopy(r.result.image, be, name);
    r.deviceCoilImages = deviceCopy(r.result.coilImages, be, name);
  }
  return r;
}

/// Every frame of a series, as larmor-cli recon does with a file of several frames: jointly with the temporal
/// prior where the settings say so (cs on 2D frames), else one by one (recon::runFrames).
py::list runSeries(const io::Series& series, const std::string& method, const std::string& device, bool keepCoilImages,
                   const py::object& progress, const py::kwargs& kwargs) {
  const recon::ReconRequest req = request(method, device, keepCoilImages, kwargs);
  std::vector<recon::ReconResult> results =
      reporting(progress, [&](const Progress& p) { return recon::runFrames(series.frames, req, p); });
  py::list out;
  for (auto& r : results) out.append(PyReconResult{std::move(r), {}, {}});
  return out;
}

py::dict timings(const Timings& t) {
  py::dict o;
  for (const StageTiming& s : t.stages()) o[py::str(s.stage)] = s.milliseconds;
  return o;
}

py::list settingsTable() {
  py::list out;
  for (const st::Setting& s : st::table()) {
    if (s.scope != st::Scope::User) continue;
    py::dict o;
    o["name"] = [&] { std::string n = s.flag; for (char& c : n) if (c == '-') c = '_'; return n; }();
    o["flag"] = s.flag.empty() ? std::string() : s.cliFlag();
    o["key"] = s.key;
    o["help"] = st::help(s);
    out.append(o);
  }
  return out;
}

/// A NumPy view of one of the result's images, kept alive by the result object.
py::object imageView(py::object self, CArray recon::ReconResult::*member) {
  CArray& a = self.cast<PyReconResult&>().result.*member;
  if (a.empty()) return py::none();
  return py::array_t<cfloat>(numpyShape(a.shape()), a.data(), self);
}

void bindResult(py::module_& m) {
  py::class_<PyReconResult>(m, "ReconResult", "recon::run's result: images (NumPy views), timings, convergence, metrics.")
      .def_property_readonly("image", [](py::object self) {
        const auto& r = self.cast<const PyReconResult&>();
        return r.deviceImage ? r.deviceImage : imageView(self, &recon::ReconResult::image);
      }, "complex64 (slices, 1, z, y, x), coil-combined: NumPy, or a DeviceArray (out=\"device\")")
      .def_property_readonly("coil_images", [](py::object self) {
        const auto& r = self.cast<const PyReconResult&>();
        return r.deviceImage ? r.deviceCoilImages : imageView(self, &recon::ReconResult::coilImages);
      }, "complex64 (slices, coils, z, y, x), or None (keep_coil_images=False); a DeviceArray with out=\"device\"")
      .def_property_readonly("timings", [](const PyReconResult& r) { return timings(r.result.timings); })
      .def_property_readonly("convergence", [](const PyReconResult& r) { return toPython(r.result.convergence); })
      .def_property_readonly("metrics", [](const PyReconResult& r) { return toPython(r.result.metrics); })
      .def_property_readonly("provenance", [](const PyReconResult& r) { return toPython(r.result.provenance); })
      .def_property_readonly("device", [](const PyReconResult& r) { return r.result.device; })
      .def_property_readonly("device_name", [](const PyReconResult& r) { return r.result.deviceName; })
      .def_property_readonly("warnings", [](const PyReconResult& r) { return r.result.warnings; })
      .def("__repr__", [](const PyReconResult& r) {
        std::ostringstream s;
        s << "<larmor.ReconResult " << r.result.image.shape().str() << " on " << r.result.device << ", "
          << r.result.timings.totalMilliseconds() << " ms>";
        return s.str();
      });
}

}  // namespace

void bindRecon(py::module_& m) {
  bindResult(m);
  m.def("recon", &run, py::arg("dataset"), py::kw_only(), py::arg("method") = "fft", py::arg("device") = "cpu",
        py::arg("keep_coil_images") = false, py::arg("progress") = py::none(), py::arg("out") = "numpy",
        "Reconstructs a Dataset as `larmor-cli recon` does; settings as keyword arguments named as the CLI's flags "
        "(lambda_rule=..., lam=..., iters=...). progress(fraction, stage) is called as it goes; Ctrl-C cancels. "
        "out=\"device\": the images as DeviceArrays on the device that ran it.");
  m.def("recon_series", &runSeries, py::arg("series"), py::kw_only(), py::arg("method") = "fft", py::arg("device") = "cpu",
        py::arg("keep_coil_images") = false, py::arg("progress") = py::none(),
        "Every frame of a Series (read_series) as larmor-cli recon does: jointly with a temporal prior for cs on 2D "
        "frames, else one by one; a list of ReconResult, one per frame.");
  m.def("settings", &settingsTable, "The reconstruction settings (name, flag, JSON key, help), from the engine's table.");
}

}  // namespace larmor::python
