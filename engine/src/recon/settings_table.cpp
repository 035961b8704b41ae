// The settings table (settings_table.hpp): every reconstruction setting, once. Defaults are the structs'
// own initialisers (the papers' values, documented at the structs); the ranges here are the only ones.
#include "larmor/recon/settings_table.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "larmor/util/error.hpp"

namespace larmor::recon::settings {
namespace {

/// A field of ReconSettings by reference; `const` access goes through the same accessor.
template <class T, class F>
void bindField(Setting& s, F field) {
  s.get = [field](const ReconSettings& r) -> Value {
    const T& v = field(const_cast<ReconSettings&>(r));
    if constexpr (std::is_same_v<T, int>) return static_cast<long>(v);
    else return v;
  };
  s.put = [field](ReconSettings& r, const Value& v) {
    if constexpr (std::is_same_v<T, int>) field(r) = static_cast<int>(std::get<long>(v));
    else field(r) = std::get<T>(v);
  };
}

Setting base(std::string key, std::string flag, std::string label, std::string group, std::string help,
             Kind kind, MethodMask methods) {
  Setting s;
  s.key = std::move(key);
  s.flag = std::move(flag);
  s.label = std::move(label);
  s.group = std::move(group);
  s.help = std::move(help);
  s.kind = kind;
  s.methods = methods;
  return s;
}

/// A Choice over an enum whose values are 0, 1, ... in the order of `choices`.
template <class E, class F>
Setting choice(std::string key, std::string flag, std::string label, std::string group, std::string help,
               MethodMask methods, std::vector<Choice> choices, F field) {
  Setting s = base(std::move(key), std::move(flag), std::move(label), std::move(group), std::move(help),
                   Kind::Choice, methods);
  s.choices = std::move(choices);
  s.valueName = "NAME";
  const std::vector<Choice> names = s.choices;
  s.get = [field, names](const ReconSettings& r) -> Value {
    return names.at(static_cast<std::size_t>(field(const_cast<ReconSettings&>(r)))).name;
  };
  s.put = [field, names](ReconSettings& r, const Value& v) {
    const auto& n = std::get<std::string>(v);
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i].name == n) field(r) = static_cast<E>(i);
  };
  return s;
}

template <class T, class F>
Setting number(std::string key, std::string flag, std::string label, std::string group, std::string help,
               MethodMask methods, double min, double max, std::string valueName, F field) {
  Setting s = base(std::move(key), std::move(flag), std::move(label), std::move(group), std::move(help),
                   std::is_floating_point_v<T> ? Kind::Real : Kind::Integer, methods);
  s.min = min;
  s.max = max;
  s.valueName = std::move(valueName);
  bindField<T>(s, field);
  return s;
}

template <class F>
Setting flag(std::string key, std::string flag, bool sets, std::string label, std::string group, std::string help,
             MethodMask methods, F field) {
  Setting s = base(std::move(key), std::move(flag), std::move(label), std::move(group), std::move(help), Kind::Flag,
                   methods);
  s.flagSets = sets;
  bindField<bool>(s, field);
  return s;
}

template <class F>
Setting text(std::string key, std::string flag, std::string label, std::string group, std::string help,
             MethodMask methods, std::string valueName, F field) {
  Setting s = base(std::move(key), std::move(flag), std::move(label), std::move(group), std::move(help), Kind::Text,
                   methods);
  s.valueName = std::move(valueName);
  bindField<std::string>(s, field);
  return s;
}

constexpr double kHuge = 1e30;
// kCg: the iterative methods (cg and cs share the encoding, coil maps, lambda and iterations); kCgOnly: the
// l2 solver's own settings.
const MethodMask kCg = bit(Method::Cg) | bit(Method::Cs), kCgOnly = bit(Method::Cg), kGrappa = bit(Method::Grappa);

// --- reconstruction: the method, the matrix and what every method shares -----------------------------------
void addReconstructionSettings(std::vector<Setting>& t) {
  t.push_back(choice<Method>("method", "method", "Method", "reconstruction", "Reconstruction method", kAllMethods,
                             {{"fft", "FFT (Cartesian)"},
                              {"gridding", "Gridding (NUFFT adjoint)"},
                              {"tron", "TRON radial"},
                              {"dft", "Exact DFT"},
                              {"cg", "Iterative (CG, regularized)"},
                              {"grappa", "GRAPPA"},
                              {"cs", "Compressed sensing (FISTA)"}},
                             [](ReconSettings& s) -> Method& { return s.method; }));
  {
    Setting m = base("matrix", "matrix", "Matrix", "reconstruction", "Output matrix", Kind::Dims, kAllMethods);
    m.count = 3;
    m.min = 1;
    m.max = 65536;
    m.valueName = "N[xN[xN]]";
    m.zeroMeans = "hdr";
    m.get = [](const ReconSettings& s) -> Value { return std::vector<long>{s.matrix[0], s.matrix[1], s.matrix[2]}; };
    m.put = [](ReconSettings& s, const Value& v) {
      const auto& d = std::get<std::vector<long>>(v);
      for (int i = 0; i < 3; ++i) s.matrix[i] = d.at(static_cast<std::size_t>(i));
    };
    t.push_back(std::move(m));
  }
  t.push_back(choice<NoiseWhiteningMode>(
      "noise_whitening", "noise-whitening", "Noise pre-whitening", "reconstruction",
      "Whiten the coils with the noise scans' covariance (auto: when the data have noise samples)", kAllMethods,
      {{"auto", "auto (when noise scans exist)"}, {"off", "off"}},
      [](ReconSettings& s) -> NoiseWhiteningMode& { return s.noiseWhitening; }));
  t.push_back(choice<PartialFourierMethod>(
      "partial_fourier", "partial-fourier", "Partial Fourier", "reconstruction",
      "Fill the missing edge of partial-Fourier / asymmetric-echo k-space: POCS (Haacke 1991), homodyne (Noll "
      "1991) or zero-filling; data acquired in full are not touched",
      bit(Method::Fft) | kGrappa,
      {{"pocs", "POCS"}, {"homodyne", "Homodyne"}, {"zerofill", "Zero-fill"}},
      [](ReconSettings& s) -> PartialFourierMethod& { return s.partialFourier; }));
  t.push_back(choice<Combine>("combine", "combine", "Coil combination", "reconstruction",
                              "Coil combination: root sum of squares, or adaptive (Walsh et al. 2000)", kAllMethods,
                              {{"sos", "Sum of squares"}, {"adaptive", "Adaptive (Walsh)"}},
                              [](ReconSettings& s) -> Combine& { return s.combine; }));
  {
    Setting k = flag("keep_coil_images", "", true, "Keep coil images", "reconstruction",
                     "Also return the per-coil images (the GUI shows them)", kAllMethods,
                     [](ReconSettings& s) -> bool& { return s.keepCoilImages; });
    k.scope = Scope::Internal;
    t.push_back(std::move(k));
  }
}

// --- NUFFT / DFT -------------------------------------------------------------------------------------------
void addNufftSettings(std::vector<Setting>& t) {
  t.push_back(number<int>("nufft.width", "width", "Kernel width W", "nufft",
                          "NUFFT Kaiser-Bessel kernel width W: the full width in grid points (Beatty et al. 2005; "
                          "docs/nufft.md)",
                          kNonCartesian, 2, 16, "W", [](ReconSettings& s) -> int& { return s.nufft.width; }));
  {
    Setting o = number<double>("nufft.oversampling", "grid-oversampling", "Oversampling σ", "nufft",
                               "NUFFT grid oversampling σ", kNonCartesian, 1, 4, "S",
                               [](ReconSettings& s) -> double& { return s.nufft.oversampling; });
    o.step = 0.125;
    t.push_back(std::move(o));
  }
  t.push_back(flag("nufft.kernel_table", "kernel-direct", false, "kernel by table lookup", "nufft",
                   "NUFFT: evaluate the kernel by table lookup (the flag --kernel-direct evaluates it directly)",
                   kNonCartesian, [](ReconSettings& s) -> bool& { return s.nufft.kernelTable; }));
  t.push_back(choice<Spreader>("nufft.spreader", "spreader", "GPU spreader", "nufft",
                               "GPU adjoint gridding: 2D the output-parallel gather (TRON's lists if radial), 3D Gregerson's sectors",
                               kNonCartesian, {{"auto", "auto"}, {"sector", "sector"}, {"tron", "tron"}},
                               [](ReconSettings& s) -> Spreader& { return s.nufft.spreader; }));
  t.push_back(choice<DensityCompensation>(
      "nufft.dcf", "dcf", "Density comp.", "nufft", "Density compensation: auto = ramp for radial, Pipe-Menon otherwise",
      kNonCartesian, {{"auto", "auto"}, {"ramp", "ramp"}, {"pipe-menon", "pipe-menon"}, {"none", "none"}},
      [](ReconSettings& s) -> DensityCompensation& { return s.nufft.dcf; }));
  {
    Setting d = number<int>("nufft.dcf_iterations", "dcf-iters", "DCF iterations", "nufft", "Pipe-Menon iterations",
                            kNonCartesian, 1, 1000, "N",
                            [](ReconSettings& s) -> int& { return s.nufft.dcfIterations; });
    d.applies = [](const ReconSettings& s) {
      return s.nufft.dcf == DensityCompensation::PipeMenon || s.nufft.dcf == DensityCompensation::Auto;
    };
    t.push_back(std::move(d));
  }
  t.push_back(choice<TrigMode>("nufft.trig", "trig", "DFT trigonometry", "nufft",
                               "Exact DFT trigonometry: sincospi, fast __sincosf (Stone's GPU.FastTrig) or a phase "
                               "recurrence along each voxel row",
                               bit(Method::Dft) | kCg,
                               {{"accurate", "accurate"}, {"fast", "fast"}, {"recurrence", "recurrence"}},
                               [](ReconSettings& s) -> TrigMode& { return s.nufft.trig; }));
}

// --- iterative: the prior, its weight, the iterations, E^H d and Q (cg, cs) --------------------------------
void addIterativeSolveSettings(std::vector<Setting>& t) {
  t.push_back(choice<ops::RegularizerKind>(
      "iterative.regularizer", "reg", "Regularizer", "iterative",
      "The prior: for cg the l2 term λ||W x||² with W the identity, finite differences, or reference-weighted "
      "finite differences (needs --ref or a dataset reference); for cs total variation or the l1 norm of a "
      "Daubechies wavelet",
      kCg, {{"tikhonov", "Tikhonov (identity)"}, {"fd", "Finite differences"}, {"anatomical", "Anatomical (weighted FD)"},
            {"tv", "Total variation (cs)"}, {"wavelet", "Wavelet ℓ1 (cs)"}},
      [](ReconSettings& s) -> ops::RegularizerKind& { return s.iterative.regularizer; }));
  {
    Setting l = number<double>("iterative.lambda", "lambda", "λ", "iterative",
                               "Regularization weight λ (cg: absolute; cs: relative to max|Eᴴd|)", kCg, 0,
                               kHuge, "L", [](ReconSettings& s) -> double& { return s.iterative.lambda; });
    l.realStyle = RealStyle::Scientific;
    t.push_back(std::move(l));
  }
  t.push_back(choice<LambdaRule>(
      "iterative.lambda_rule", "lambda-rule", "λ rule", "iterative",
      "cs: λ as given, raised to what the data's noise level asks for (noise: noise scans, else the outer "
      "k-space or the calibration matrix), or the one that best predicts a tenth of the samples held out "
      "(cv: seven solves more; docs/iterative.md); auto (cs's default): cv for a 2D slice, the given λ for a 3D "
      "volume or a joint series' λ_t; an explicit --lambda means fixed",
      kCg, {{"fixed", "as given"}, {"noise", "from the noise level"}, {"cv", "by cross-validation"},
            {"auto", "cv where it applies"}},
      [](ReconSettings& s) -> LambdaRule& { return s.iterative.lambdaRule; }));
  t.push_back(number<int>("iterative.iterations", "iters", "Iterations", "iterative",
                          "Iterations (CG or FISTA)", kCg, 1, 100000,
                          "N", [](ReconSettings& s) -> int& { return s.iterative.iterations; }));
  {
    Setting tol = number<double>("iterative.tolerance", "tol", "Tolerance", "iterative",
                                 "Stop at this relative residual (cg) or relative image change (cs); 0: iterations only",
                                 kCg, 0, 1, "X",
                                 [](ReconSettings& s) -> double& { return s.iterative.tolerance; });
    tol.realStyle = RealStyle::Scientific;
    t.push_back(std::move(tol));
  }
  {
    Setting r = text("iterative.reference", "ref", "Reference", "iterative",
                     "Reference image of the anatomical prior (.cfl, or .h5 with a reference)", kCgOnly, "REF",
                     [](ReconSettings& s) -> std::string& { return s.iterative.referencePath; });
    r.applies = [](const ReconSettings& s) { return s.iterative.regularizer == ops::RegularizerKind::Anatomical; };
    t.push_back(std::move(r));
  }
  t.push_back(choice<FhdMethod>("iterative.fhd", "fhd", "Fᴴd by", "iterative",
                                "CG: E^H d by the exact DFT (Stone's F^H d) or a NUFFT", kCg,
                                {{"dft", "exact DFT"}, {"nufft", "NUFFT"}},
                                [](ReconSettings& s) -> FhdMethod& { return s.iterative.fhd; }));
  t.push_back(choice<ToeplitzMethod>("iterative.toeplitz", "toeplitz", "Q by", "iterative",
                                     "CG: the Toeplitz kernel Q by the exact DFT or a NUFFT (auto: as E^H d)", kCg,
                                     {{"auto", "as Fᴴd"}, {"dft", "exact DFT"}, {"nufft", "NUFFT"}},
                                     [](ReconSettings& s) -> ToeplitzMethod& { return s.iterative.toeplitz; }));
  {
    Setting q = choice<QTrig>("iterative.q_trig", "q-trig", "Q trigonometry", "iterative",
                              "CG: trigonometry of the exact Q (auto: as --trig); Q is cached per trajectory",
                              kCg, {{"auto", "as Fᴴd"}, {"accurate", "accurate"}, {"fast", "fast"},
                                    {"recurrence", "recurrence"}},
                              [](ReconSettings& s) -> QTrig& { return s.iterative.qTrig; });
    q.applies = [](const ReconSettings& s) {
      const auto& it = s.iterative;
      return it.toeplitz == ToeplitzMethod::Dft || (it.toeplitz == ToeplitzMethod::Auto && it.fhd == FhdMethod::Dft);
    };
    t.push_back(std::move(q));
  }
}

// --- iterative: the coil maps ------------------------------------------------------------------------------
void addCoilMapSettings(std::vector<Setting>& t) {
  {
    Setting c = base("iterative.coil_maps", "coil-maps", "Coil maps", "iterative",
                     "CG-SENSE coil sensitivities: ESPIRiT (Uecker et al. 2014), Walsh-style low-resolution "
                     "estimate, the dataset's own (simulated data), or a BART .cfl of maps [x,y,z,coils(,slices)]",
                     Kind::Choice, kCg);
    c.choices = {{"espirit", "ESPIRiT"}, {"walsh", "Walsh (low resolution)"}, {"dataset", "from the dataset"}};
    c.aliases = {{"estimate", "walsh"}};
    c.fileSuffix = ".cfl";
    c.valueName = "NAME|FILE.cfl";
    c.get = [](const ReconSettings& s) -> Value {
      static const char* names[] = {"espirit", "walsh", "dataset"};
      if (s.iterative.coilMaps == CoilMapSource::File) return s.iterative.coilMapsPath;
      return std::string(names[static_cast<int>(s.iterative.coilMaps)]);
    };
    c.put = [](ReconSettings& s, const Value& v) {
      const std::string& n = std::get<std::string>(v);
      s.iterative.coilMapsPath.clear();
      if (n == "espirit") s.iterative.coilMaps = CoilMapSource::Espirit;
      else if (n == "walsh" || n == "estimate") s.iterative.coilMaps = CoilMapSource::Walsh;
      else if (n == "dataset") s.iterative.coilMaps = CoilMapSource::Dataset;
      else {
        s.iterative.coilMaps = CoilMapSource::File;
        s.iterative.coilMapsPath = n;
      }
    };
    t.push_back(std::move(c));
  }
  {
    Setting c = number<double>("iterative.calibration_radius", "calibration-radius", "Calibration radius", "iterative",
                               "CG-SENSE, Walsh maps of non-Cartesian data: half the side of the fitted calibration box (cycles/FOV)",
                               kCg, 0, 1e6, "R", [](ReconSettings& s) -> double& { return s.iterative.calibrationRadius; });
    c.minOpen = true;
    c.step = 1;
    c.unit = "cycles/FOV";
    c.applies = [](const ReconSettings& s) { return s.iterative.coilMaps == CoilMapSource::Walsh; };
    t.push_back(std::move(c));
  }
  {
    Setting c = number<int>("iterative.calibration_size", "calibration-size", "Calibration size", "iterative",
                            "Coil maps: calibration region per dimension, clipped to the fully sampled k-space centre "
                            "(BART ecalib -r); ESPIRiT needs at least its kernel (6)",
                            kCg, 1, 4096, "N", [](ReconSettings& s) -> int& { return s.iterative.calibrationSize; });
    c.unit = "samples";
    c.applies = [](const ReconSettings& s) {
      return s.iterative.coilMaps == CoilMapSource::Espirit || s.iterative.coilMaps == CoilMapSource::Walsh;
    };
    t.push_back(std::move(c));
  }
  {
    Setting c = number<double>("iterative.espirit_crop", "espirit-crop", "ESPIRiT crop", "iterative",
                               "ESPIRiT: maps are zero where the eigenvalue is below this (BART ecalib -c)", kCg, 0, 1,
                               "C", [](ReconSettings& s) -> double& { return s.iterative.espiritCrop; });
    c.maxOpen = true;
    c.step = 0.05;
    c.applies = [](const ReconSettings& s) { return s.iterative.coilMaps == CoilMapSource::Espirit; };
    t.push_back(std::move(c));
  }
}

// --- iterative: the prior's and the solver's finer settings, the Q cache, the GPUs -------------------------
void addIterativeTuningSettings(std::vector<Setting>& t) {
  {
    Setting a = number<double>("iterative.anatomical_delta", "anatomical-delta", "Edge scale δ", "iterative",
                               "Anatomical prior: edge scale of the weights (0: from the reference)", kCgOnly, 0, kHuge,
                               "D", [](ReconSettings& s) -> double& { return s.iterative.anatomicalDelta; });
    a.realStyle = RealStyle::Scientific;
    a.applies = [](const ReconSettings& s) { return s.iterative.regularizer == ops::RegularizerKind::Anatomical; };
    t.push_back(std::move(a));
  }
  {
    Setting p = base("iterative.preconditioner", "preconditioner", "Preconditioner", "iterative",
                     "CG preconditioner: Jacobi (diagonal) or none", Kind::Choice, kCgOnly);
    p.choices = {{"jacobi", "Jacobi"}, {"none", "none"}};
    p.valueName = "NAME";
    p.get = [](const ReconSettings& s) -> Value { return std::string(s.iterative.preconditioner ? "jacobi" : "none"); };
    p.put = [](ReconSettings& s, const Value& v) { s.iterative.preconditioner = std::get<std::string>(v) == "jacobi"; };
    t.push_back(std::move(p));
  }
  {
    Setting c = text("iterative.cache_directory", "q-cache", "Q cache folder", "iterative",
                     "Folder of the cached Toeplitz kernels Q (empty: $XDG_CACHE_HOME/larmor; none: no cache)", kCg,
                     "DIR", [](ReconSettings& s) -> std::string& { return s.iterative.cacheDirectory; });
    t.push_back(std::move(c));
  }
  {
    Setting v = number<int>("iterative.tv_iterations", "tv-iters", "TV inner steps", "iterative",
                            "cs with --reg tv: FGP steps of each TV proximal map (warm-started)", bit(Method::Cs), 1,
                            1000, "N", [](ReconSettings& s) -> int& { return s.iterative.tvIterations; });
    v.applies = [](const ReconSettings& s) { return s.iterative.regularizer == ops::RegularizerKind::Tv; };
    t.push_back(std::move(v));
  }
  t.push_back(flag("iterative.multi_gpu", "single-gpu", false, "split over every GPU", "iterative",
                   "CG/CS: a multi-slice dataset's slices over every visible GPU; one slice: the exact F^H d and Q split over them "
                   "(Stone's GPU.Multi; --single-gpu: one GPU)",
                   kCg, [](ReconSettings& s) -> bool& { return s.iterative.multiGpu; }));
}

// --- dynamic imaging: a series' frames jointly (recon/dynamic.hpp) -----------------------------------------
void addDynamicSettings(std::vector<Setting>& t) {
  t.push_back(flag("dynamic.frames_independent", "frames-independent", true, "frames one by one", "dynamic",
                   "cs on a series: every frame alone (no temporal prior) instead of the frames jointly",
                   bit(Method::Cs), [](ReconSettings& s) -> bool& { return s.dynamic.framesIndependent; }));
  {
    Setting p = choice<TemporalPrior>(
        "dynamic.temporal_prior", "temporal-prior", "Temporal prior", "dynamic",
        "cs on a series: TV along time (ttv), spatio-temporal TV with --lambda for space (sttv), or locally "
        "low-rank blocks (llr)",
        bit(Method::Cs),
        {{"ttv", "temporal TV"}, {"sttv", "spatio-temporal TV"}, {"llr", "locally low-rank"}},
        [](ReconSettings& s) -> TemporalPrior& { return s.dynamic.prior; });
    p.applies = [](const ReconSettings& s) { return !s.dynamic.framesIndependent; };
    t.push_back(std::move(p));
  }
  {
    Setting l = number<double>("dynamic.temporal_lambda", "temporal-lambda", "Temporal λ", "dynamic",
                               "cs on a series: the temporal prior's weight, relative to max|Eᴴd| of the series",
                               bit(Method::Cs), 0, kHuge, "L",
                               [](ReconSettings& s) -> double& { return s.dynamic.temporalLambda; });
    l.realStyle = RealStyle::Scientific;
    l.applies = [](const ReconSettings& s) { return !s.dynamic.framesIndependent; };
    t.push_back(std::move(l));
  }
  {
    Setting b = number<int>("dynamic.llr_block", "llr-block", "LLR block", "dynamic",
                            "cs on a series with --temporal-prior llr: the blocks' side", bit(Method::Cs), 1, 64, "B",
                            [](ReconSettings& s) -> int& { return s.dynamic.lowRankBlock; });
    b.unit = "voxels";
    b.applies = [](const ReconSettings& s) {
      return !s.dynamic.framesIndependent && s.dynamic.prior == TemporalPrior::LowRank;
    };
    t.push_back(std::move(b));
  }
}

// --- GRAPPA: the calibration and its kernel ----------------------------------------------------------------
void addGrappaKernelSettings(std::vector<Setting>& t) {
  const auto basic = [](const ReconSettings& s) { return s.grappa.calibration == GrappaCalibration::Basic; };
  t.push_back(choice<GrappaCalibration>("grappa.calibration", "grappa-calibration", "Calibration", "grappa",
                                        "GRAPPA calibration: Schneider's findWsImproved (a KPE x KRO kernel) or "
                                        "findWs (Nb blocks, one weight set per segment)",
                                        kGrappa, {{"basic", "basic (blocks × segments)"}, {"improved", "improved (kernel)"}},
                                        [](ReconSettings& s) -> GrappaCalibration& { return s.grappa.calibration; }));
  {
    Setting k = base("grappa.kernel", "grappa-kernel", "Kernel PE × RO", "grappa",
                     "GRAPPA improved kernel: source lines (PE) x source columns (RO)", Kind::Dims, kGrappa);
    k.count = 2;
    k.min = 1;
    k.max = 64;
    k.valueName = "KPExKRO";
    k.dimsAsText = true;
    k.applies = [basic](const ReconSettings& s) { return !basic(s); };
    k.get = [](const ReconSettings& s) -> Value { return std::vector<long>{s.grappa.kernelPe, s.grappa.kernelRo}; };
    k.put = [](ReconSettings& s, const Value& v) {
      const auto& d = std::get<std::vector<long>>(v);
      s.grappa.kernelPe = static_cast<int>(d.at(0));
      s.grappa.kernelRo = static_cast<int>(d.at(1));
    };
    t.push_back(std::move(k));
  }
  {
    Setting k = number<int>("grappa.kernel_pe2", "grappa-kernel-pe2", "Kernel PE2", "grappa",
                            "GRAPPA with pe2 acceleration: source partitions along pe2 (Rz apart)", kGrappa, 1, 64,
                            "N", [](ReconSettings& s) -> int& { return s.grappa.kernelPe2; });
    t.push_back(std::move(k));
  }
  {
    Setting b = number<int>("grappa.blocks", "blocks", "Source blocks", "grappa",
                            "GRAPPA basic: Nb source blocks along phase encoding (Schneider Table 5.1)", kGrappa, 1, 64,
                            "N", [](ReconSettings& s) -> int& { return s.grappa.blocks; });
    b.applies = basic;
    t.push_back(std::move(b));
  }
  {
    Setting g = number<int>("grappa.segment", "segment", "Segment width", "grappa",
                            "GRAPPA basic: readout columns per weight set Δs (Schneider Table 5.1)", kGrappa, 1, 65536,
                            "N", [](ReconSettings& s) -> int& { return s.grappa.segment; });
    g.max = 1 << 24;
    g.unit = "columns";
    g.applies = basic;
    t.push_back(std::move(g));
  }
  {
    Setting g = flag("grappa.interpolate_segments", "grappa-interpolate", true, "interpolate between segments",
                     "grappa", "GRAPPA basic: weights interpolated linearly between the segment centres", kGrappa,
                     [](ReconSettings& s) -> bool& { return s.grappa.interpolateSegments; });
    g.applies = basic;
    t.push_back(std::move(g));
  }
}

// --- GRAPPA: the weights' fit (regularization, normalization, clipping), coil compression ------------------
void addGrappaFitSettings(std::vector<Setting>& t) {
  {
    Setting c = number<double>("grappa.chi", "chi", "χ", "grappa",
                               "GRAPPA regularization χ: λ = χ·trace(AᴴA)/rows(A) (Schneider Listing 4.1)", kGrappa, 0,
                               kHuge, "X", [](ReconSettings& s) -> double& { return s.grappa.chi; });
    c.realStyle = RealStyle::Scientific;
    t.push_back(std::move(c));
  }
  {
    Setting e = number<double>("grappa.eta", "eta", "η", "grappa",
                               "GRAPPA normalization η: each group of equations scaled by p^(-η/2), p its power",
                               kGrappa, 0, 1000, "X", [](ReconSettings& s) -> double& { return s.grappa.eta; });
    e.step = 0.1;
    t.push_back(std::move(e));
  }
  {
    Setting k = number<double>("grappa.kappa", "kappa", "κ", "grappa",
                               "GRAPPA improved: fraction κ of the strongest equations dropped (power clipping)",
                               kGrappa, 0, 1, "X", [](ReconSettings& s) -> double& { return s.grappa.kappa; });
    k.maxOpen = true;
    k.step = 0.01;
    t.push_back(std::move(k));
  }
  {
    Setting o = number<int>("grappa.out_coils", "out-coils", "Output coils", "grappa",
                            "SVD coil compression to N virtual coils before GRAPPA (0: off)", kGrappa, 0, 4096, "N",
                            [](ReconSettings& s) -> int& { return s.grappa.outCoils; });
    o.zeroMeans = "no compression";
    t.push_back(std::move(o));
  }
}

/// The table, group by group in the order the CLI's help and the GUI show them.
std::vector<Setting> build() {
  std::vector<Setting> t;
  addReconstructionSettings(t);
  addNufftSettings(t);
  addIterativeSolveSettings(t);
  addCoilMapSettings(t);
  addIterativeTuningSettings(t);
  addDynamicSettings(t);
  addGrappaKernelSettings(t);
  addGrappaFitSettings(t);
  return t;
}

std::string number(double v) {
  std::ostringstream o;
  o.precision(6);
  o << v;
  return o.str();
}

std::string rangeText(const Setting& s) {
  const auto bound = [&](double v) { return s.kind == Kind::Real ? number(v) : std::to_string(static_cast<long>(v)); };
  if (s.kind == Kind::Real && s.max >= kHuge) return std::string(s.minOpen ? "> " : ">= ") + bound(s.min);
  if (s.kind == Kind::Integer || s.kind == Kind::Dims) return bound(s.min) + ".." + bound(s.max);
  return std::string(s.minOpen ? "(" : "[") + bound(s.min) + ", " + bound(s.max) + (s.maxOpen ? ")" : "]");
}

std::string choiceList(const Setting& s) {
  std::string out;
  for (std::size_t i = 0; i < s.choices.size(); ++i)
    out += (i == 0 ? "" : i + 1 == s.choices.size() ? " or " : ", ") + s.choices[i].name;
  return out;
}

[[noreturn]] void fail(const Setting& s, const std::string& text, const std::string& expected,
                       const std::string& what = {}) {
  throw Error((s.flag.empty() ? s.key : s.cliFlag()) + " " + text + ": " + (what.empty() ? "" : what + ", ") +
              "expected " + expected);
}

bool inRange(const Setting& s, double v) {
  if (!std::isfinite(v)) return false;
  if (s.minOpen ? v <= s.min : v < s.min) return false;
  if (s.maxOpen ? v >= s.max : v > s.max) return false;
  return true;
}

std::string expectedNumber(const Setting& s) {
  return std::string(s.kind == Kind::Real ? "a number " : "an integer ") + rangeText(s);
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, sep)) parts.push_back(part);
  if (!text.empty() && text.back() == sep) parts.emplace_back();
  return parts;
}

}  // namespace

bool Setting::usedBy(const ReconSettings& s) const {
  return (methods & bit(s.method)) != 0 && (!applies || applies(s));
}

const std::vector<Setting>& table() {
  static const std::vector<Setting> t = build();
  return t;
}

const Setting& find(std::string_view keyOrFlag) {
  for (const Setting& s : table())
    if (s.key == keyOrFlag || (!s.flag.empty() && s.flag == keyOrFlag)) return s;
  throw Error("no reconstruction setting named '" + std::string(keyOrFlag) + "'");
}

const std::string& choiceName(std::string_view key, int index) {
  const Setting& s = find(key);
  require(index >= 0 && static_cast<std::size_t>(index) < s.choices.size(), s.key + ": no choice " + std::to_string(index));
  return s.choices[static_cast<std::size_t>(index)].name;
}

/// A Choice's text as stored: a choice's name, an alias's choice, or a path with the setting's file suffix.
static std::string choiceValue(const Setting& s, const std::string& text) {
  for (const Choice& c : s.choices)
    if (c.name == text) return text;
  for (const auto& [alias, name] : s.aliases)
    if (alias == text) return name;
  const std::string& f = s.fileSuffix;
  if (!f.empty() && text.size() > f.size() && text.compare(text.size() - f.size(), f.size(), f) == 0) return text;
  fail(s, text, choiceList(s) + (f.empty() ? "" : ", or FILE" + f));
}

int choiceIndex(std::string_view key, const std::string& name) {
  const Setting& s = find(key);
  for (std::size_t i = 0; i < s.choices.size(); ++i)
    if (s.choices[i].name == name) return static_cast<int>(i);
  fail(s, name, choiceList(s));
}

Value parse(const Setting& s, const std::string& text) {
  switch (s.kind) {
    case Kind::Choice:
      return choiceValue(s, text);
    case Kind::Integer: {
      char* end = nullptr;
      errno = 0;
      const long v = std::strtol(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || errno == ERANGE || !inRange(s, static_cast<double>(v)))
        fail(s, text, expectedNumber(s));
      return v;
    }
    case Kind::Real: {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      // "nan" and "inf" parse as doubles; say what they are rather than that they are out of range.
      if (!text.empty() && *end == '\0' && !std::isfinite(v))
        fail(s, text, expectedNumber(s), std::isnan(v) ? "not a number" : "not a finite number");
      if (text.empty() || *end != '\0' || !inRange(s, v)) fail(s, text, expectedNumber(s));
      return v;
    }
    case Kind::Flag:
      if (text == "true" || text == "1" || text == "on") return true;
      if (text == "false" || text == "0" || text == "off") return false;
      fail(s, text, "true or false");
    case Kind::Text:
      return text;
    case Kind::Dims: {
      const std::string shape = s.count == 3 ? "N, NxN or NxNxN" : "AxB";
      const std::vector<std::string> parts = split(text, 'x');
      if (parts.empty() || parts.size() > static_cast<std::size_t>(s.count) || (s.count == 2 && parts.size() != 2))
        fail(s, text, shape + " with each in " + rangeText(s));
      std::vector<long> d;
      for (const auto& p : parts) {
        char* end = nullptr;
        const long v = std::strtol(p.c_str(), &end, 10);
        if (p.empty() || *end != '\0' || !inRange(s, static_cast<double>(v)))
          fail(s, text, shape + " with each in " + rangeText(s));
        d.push_back(v);
      }
      // The output matrix: "N" is N x N, a missing z is one partition (2D).
      if (s.count == 3) {
        if (d.size() == 1) d.push_back(d[0]);
        if (d.size() == 2) d.push_back(1);
      }
      return d;
    }
  }
  fail(s, text, "a value");
}

void check(const Setting& s, const Value& v) {
  const auto wrongType = [&] { throw Error(s.key + ": a value of the wrong type"); };
  switch (s.kind) {
    case Kind::Choice:
      if (!std::holds_alternative<std::string>(v)) wrongType();
      choiceValue(s, std::get<std::string>(v));
      return;
    case Kind::Integer:
      if (!std::holds_alternative<long>(v)) wrongType();
      if (!inRange(s, static_cast<double>(std::get<long>(v)))) fail(s, format(s, v), expectedNumber(s));
      return;
    case Kind::Real:
      if (!std::holds_alternative<double>(v)) wrongType();
      if (!inRange(s, std::get<double>(v))) fail(s, format(s, v), expectedNumber(s));
      return;
    case Kind::Flag:
      if (!std::holds_alternative<bool>(v)) wrongType();
      return;
    case Kind::Text:
      if (!std::holds_alternative<std::string>(v)) wrongType();
      return;
    case Kind::Dims: {
      if (!std::holds_alternative<std::vector<long>>(v)) wrongType();
      const auto& d = std::get<std::vector<long>>(v);
      if (d.size() != static_cast<std::size_t>(s.count)) wrongType();
      // 0 is "unset" where the setting says what 0 means (the header's size along that axis).
      for (long x : d)
        if (!(x == 0 && !s.zeroMeans.empty()) && !inRange(s, static_cast<double>(x)))
          fail(s, format(s, v), "each in " + rangeText(s));
      return;
    }
  }
}

std::string format(const Setting& s, const Value& v) {
  switch (s.kind) {
    case Kind::Choice:
    case Kind::Text:
      return std::get<std::string>(v);
    case Kind::Integer:
      return std::to_string(std::get<long>(v));
    case Kind::Real:
      return number(std::get<double>(v));
    case Kind::Flag:
      return std::get<bool>(v) ? "true" : "false";
    case Kind::Dims: {
      const auto& d = std::get<std::vector<long>>(v);
      std::size_t n = d.size();
      if (s.count == 3 && n == 3 && d[2] == 1) n = 2;  // 2D: NxN
      std::string out;
      for (std::size_t i = 0; i < n; ++i) out += (i ? "x" : "") + std::to_string(d[i]);
      return out;
    }
  }
  return {};
}

std::string help(const Setting& s) {
  std::string h = s.help;
  if (s.kind == Kind::Choice) h += ": " + choiceList(s) + (s.fileSuffix.empty() ? "" : ", or FILE" + s.fileSuffix);
  else if (s.kind == Kind::Integer || s.kind == Kind::Real) h += " (" + rangeText(s) + ")";
  else if (s.kind == Kind::Dims) h += " (each " + rangeText(s) + ")";
  if (!s.unit.empty()) h += ", " + s.unit;
  if (s.kind != Kind::Flag) {
    const Value d = s.get(ReconSettings{});
    const std::string text = format(s, d);
    if (s.kind == Kind::Dims && !s.zeroMeans.empty() && std::get<std::vector<long>>(d)[0] == 0)
      h += "; default: the header's";
    else if (!text.empty())
      h += "; default " + text;
  }
  return h;
}

void set(ReconSettings& settings, const Setting& s, const std::string& text) { s.put(settings, parse(s, text)); }

void validate(const ReconSettings& settings, std::string_view group) {
  for (const Setting& s : table())
    if (group.empty() || s.group == group) check(s, s.get(settings));
  if (!group.empty() && group != "iterative") return;
  const auto reg = settings.iterative.regularizer;
  const std::string name = choiceName("iterative.regularizer", static_cast<int>(reg));
  if (settings.method == Method::Cs && !ops::isSparsityPrior(reg))
    throw Error("--reg " + name + ": --method cs takes a sparsity prior (tv or wavelet); " + name +
                " is an l2 prior of --method cg");
  if (settings.method == Method::Cg && ops::isSparsityPrior(reg))
    throw Error("--reg " + name + ": a sparsity prior needs --method cs (--method cg takes tikhonov, fd or anatomical)");
}

void applyMethodDefaults(ReconSettings& settings) {
  IterativeSettings& it = settings.iterative;
  const IterativeSettings cg;
  if (settings.method == Method::Cs) {
    it.regularizer = ops::RegularizerKind::Tv;
    it.lambda = 3e-4;  // what the rule falls back to, and where it does not apply
    it.lambdaRule = LambdaRule::Auto;
    it.iterations = 100;
    it.tolerance = 1e-4;
  } else if (settings.method == Method::Cg) {
    it.regularizer = cg.regularizer;
    it.lambda = cg.lambda;
    it.lambdaRule = cg.lambdaRule;
    it.iterations = cg.iterations;
    it.tolerance = cg.tolerance;
  }
}

nlohmann::json toJson(const ReconSettings& settings) {
  nlohmann::json j = nlohmann::json::object();
  for (const Setting& s : table()) {
    nlohmann::json* node = &j;
    const std::vector<std::string> path = split(s.key, '.');
    for (std::size_t i = 0; i + 1 < path.size(); ++i) node = &(*node)[path[i]];
    const Value v = s.get(settings);
    nlohmann::json& out = (*node)[path.back()];
    std::visit([&](const auto& x) { out = x; }, v);
    if (s.kind == Kind::Dims && s.dimsAsText) out = format(s, v);
  }
  return j;
}

ReconSettings fromJson(const nlohmann::json& j, ReconSettings base, std::vector<std::string>* problems) {
  if (!j.is_object()) {
    const std::string msg = "settings: expected a JSON object";
    if (!problems) throw Error(msg);
    problems->push_back(msg);
    return base;
  }
  for (const Setting& s : table()) {
    const nlohmann::json* node = &j;
    for (const std::string& part : split(s.key, '.')) {
      node = node->is_object() && node->contains(part) ? &(*node)[part] : nullptr;
      if (!node) break;
    }
    if (!node) continue;
    try {
      Value v;
      switch (s.kind) {
        case Kind::Choice:
        case Kind::Text: v = node->get<std::string>(); break;
        case Kind::Integer:
          require(node->is_number_integer(), s.key + ": expected an integer");
          v = node->get<long>();
          break;
        case Kind::Real:
          require(node->is_number(), s.key + ": expected a number");
          v = node->get<double>();
          break;
        case Kind::Flag: v = node->get<bool>(); break;
        case Kind::Dims:
          if (node->is_string()) v = parse(s, node->get<std::string>());
          else v = node->get<std::vector<long>>();
          break;
      }
      check(s, v);
      s.put(base, v);
    } catch (const std::exception& e) {
      const std::string msg = std::string("settings ") + s.key + ": " + e.what();
      if (!problems) throw Error(msg);
      problems->push_back(msg);
    }
  }
  return base;
}

std::vector<std::string> toCliArguments(const ReconSettings& settings) {
  std::vector<std::string> args;
  for (const Setting& s : table()) {
    if (s.scope != Scope::User || s.flag.empty() || !s.usedBy(settings)) continue;
    const Value v = s.get(settings);
    if (s.kind == Kind::Flag) {
      if (std::get<bool>(v) == s.flagSets) args.push_back(s.cliFlag());
      continue;
    }
    if (s.kind == Kind::Text && std::get<std::string>(v).empty()) continue;  // empty: the default behaviour
    if (s.kind == Kind::Dims && !s.zeroMeans.empty() && std::get<std::vector<long>>(v)[0] == 0) continue;
    args.push_back(s.cliFlag());
    args.push_back(format(s, v));
  }
  return args;
}

std::string methodNames(MethodMask mask) {
  std::string names;
  for (int m = 0; m <= static_cast<int>(Method::Cs); ++m)
    if (mask & bit(static_cast<Method>(m)))
      names += (names.empty() ? "" : ", ") + recon::toString(static_cast<Method>(m));
  return names;
}

}  // namespace larmor::recon::settings
