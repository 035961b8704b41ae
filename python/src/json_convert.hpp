#pragma once
// nlohmann::json -> Python objects (dicts, lists, numbers, strings), through Python's json module.
#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>

namespace larmor::python {

inline pybind11::object toPython(const nlohmann::json& j) {
  if (j.is_null()) return pybind11::none();
  return pybind11::module_::import("json").attr("loads")(j.dump());
}

}  // namespace larmor::python
