#include "larmor/recon/settings.hpp"

#include "larmor/util/error.hpp"

namespace larmor::recon {

std::string toString(Method m) {
  switch (m) {
    case Method::Fft: return "fft";
    case Method::Gridding: return "gridding";
    case Method::Tron: return "tron";
    case Method::Dft: return "dft";
    case Method::Cg: return "cg";
    case Method::Grappa: return "grappa";
  }
  return "?";
}

Method methodFromString(const std::string& s) {
  for (Method m : {Method::Fft, Method::Gridding, Method::Tron, Method::Dft, Method::Cg, Method::Grappa})
    if (toString(m) == s) return m;
  throw Error("--method " + s + ": unknown method; expected fft, gridding, tron, dft, cg or grappa");
}

std::string toString(Combine c) { return c == Combine::SumOfSquares ? "sos" : "adaptive"; }

Combine combineFromString(const std::string& s) {
  if (s == "sos") return Combine::SumOfSquares;
  if (s == "adaptive") return Combine::Adaptive;
  throw Error("--combine " + s + ": expected sos or adaptive");
}

nlohmann::json toJson(const ReconSettings& s) {
  return {{"method", toString(s.method)},
          {"combine", toString(s.combine)},
          {"matrix", {s.matrix[0], s.matrix[1], s.matrix[2]}},
          {"keep_coil_images", s.keepCoilImages},
          {"nufft", toJson(s.nufft)},
          {"grappa", toJson(s.grappa)},
          {"iterative", toJson(s.iterative)}};
}

}  // namespace larmor::recon
