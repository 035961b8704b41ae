#pragma once
// Reconstruction settings: plain structs with defaults from the papers, serialisable to JSON. The GUI
// edits the same structs the CLI parses.
#include <string>

#include <nlohmann/json.hpp>

#include "larmor/recon/dynamic.hpp"
#include "larmor/recon/grappa.hpp"
#include "larmor/recon/iterative.hpp"
#include "larmor/recon/noncartesian.hpp"
#include "larmor/recon/noise.hpp"
#include "larmor/recon/partial_fourier.hpp"

namespace larmor::recon {

enum class Method { Fft, Gridding, Tron, Dft, Cg, Grappa, Cs };
enum class Combine { SumOfSquares, Adaptive };

std::string toString(Method m);
Method methodFromString(const std::string& s);  // throws Error naming the valid choices
std::string toString(Combine c);
Combine combineFromString(const std::string& s);

struct ReconSettings {
  Method method = Method::Fft;
  Combine combine = Combine::SumOfSquares;
  /// Output matrix; 0 = the header's recon matrix.
  long matrix[3] = {0, 0, 0};
  /// Also return the per-coil images (the GUI shows them; the CLI writes only the combined image, and
  /// leaving them on the device saves a download as large as the k-space).
  bool keepCoilImages = true;
  /// Noise pre-whitening (recon/noise.hpp): auto = when the dataset has noise samples.
  NoiseWhiteningMode noiseWhitening = NoiseWhiteningMode::Auto;
  /// Partial Fourier / asymmetric echo (recon/partial_fourier.hpp): the filler of the missing edge, fft and grappa.
  PartialFourierMethod partialFourier = PartialFourierMethod::Pocs;
  NufftSettings nufft;
  GrappaSettings grappa;
  IterativeSettings iterative;
  /// A series' frames (recon/dynamic.hpp): joint with a temporal prior under --method cs, or one by one.
  DynamicSettings dynamic;
};

nlohmann::json toJson(const ReconSettings& s);

}  // namespace larmor::recon
