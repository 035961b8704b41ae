// Writes the seed corpora of the fuzz targets: small valid inputs made with Larmor's own writers, so
// that nothing binary lives in git. Usage: fuzz_make_corpus OUTDIR (creates
// OUTDIR/{cfl,rawarray,ismrmrd,twix,nifti,dicom_reference}).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numbers>
#include <random>
#include <sstream>

#include "fuzz_common.hpp"
#include "larmor/io/cfl.hpp"
#include "larmor/io/export.hpp"
#include "larmor/io/nifti.hpp"
#include "larmor/io/rawarray.hpp"
#include "larmor/phantom/simulate.hpp"
#include "larmor/recon/recon.hpp"
#include "support/twix_writer.hpp"
#ifdef LARMOR_HAVE_IO
#include "larmor/io/ismrmrd.hpp"
#include "larmor/stream/protocol.hpp"
#include "larmor/stream/replay.hpp"
#endif

namespace fs = std::filesystem;
using namespace larmor;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void put(const fs::path& file, const std::string& bytes) { std::ofstream(file, std::ios::binary) << bytes; }

CArray randomArray(const Shape& s, unsigned seed) {
  CArray a(s);
  std::mt19937 rng(seed);
  std::normal_distribution<float> g;
  for (index_t i = 0; i < a.size(); ++i) a[i] = cfloat(g(rng), g(rng));
  return a;
}

CArray radialTrajectory(index_t n, index_t spokes) {
  CArray t(Shape{3, n, spokes}, cfloat(0, 0));
  for (index_t p = 0; p < spokes; ++p)
    for (index_t i = 0; i < n; ++i) {
      const double angle = std::numbers::pi * static_cast<double>(p) / static_cast<double>(spokes);
      const double r = (static_cast<double>(i) - static_cast<double>(n) / 2) * 0.5;
      t(0, i, p) = cfloat(static_cast<float>(r * std::cos(angle)), 0);
      t(1, i, p) = cfloat(static_cast<float>(r * std::sin(angle)), 0);
    }
  return t;
}

phantom::SimulateSettings small(index_t nx, index_t ny, index_t nz, index_t slices, int coils, int accel = 1) {
  phantom::SimulateSettings s;
  s.matrix[0] = nx, s.matrix[1] = ny, s.matrix[2] = nz;
  s.slices = slices;
  s.coils = coils;
  s.accel = accel;
  s.acs = 4;
  return s;
}

// BART layout of a Dataset's Cartesian k-space: [readout, pe1, pe2, coils] (+ slices at 13).
CArray bartKspace(const Dataset& d) {
  CArray k = d.kspace;
  const Shape& s = k.shape();
  std::vector<index_t> dims{s[0], s[1], s[2], s[3]};
  if (s[4] > 1) {
    dims.resize(14, 1);
    dims[13] = s[4];
  }
  k.reshape(Shape(dims));
  return k;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_make_corpus OUTDIR\n";
    return 2;
  }
  const fs::path out = argv[1];
  const fs::path tmp = out / "tmp";
  for (const char* d : {"cfl", "rawarray", "ismrmrd", "twix", "nifti", "dicom_reference", "stream", "tmp"}) fs::create_directories(out / d);
  const std::string split(fuzz::kSplit);

  // k-space arrays in BART's layout (name, k-space, optional trajectory).
  struct Case {
    std::string name;
    CArray k;
    CArray traj;
  };
  std::vector<Case> cases;
  cases.push_back({"cart2d", bartKspace(phantom::simulate(small(8, 6, 1, 1, 2))), {}});
  cases.push_back({"accel", bartKspace(phantom::simulate(small(8, 12, 1, 1, 2, 2))), {}});
  cases.push_back({"slices", bartKspace(phantom::simulate(small(6, 6, 1, 3, 1))), {}});
  cases.push_back({"vol3d", bartKspace(phantom::simulate(small(6, 6, 4, 1, 1))), {}});
  cases.push_back({"radial", randomArray(Shape{1, 8, 4, 2}, 1), radialTrajectory(8, 4)});
  cases.push_back({"radial3d", randomArray(Shape{8, 3, 1, 1}, 2), [] {
                     CArray t = radialTrajectory(8, 3);
                     for (index_t i = 2; i < t.size(); i += 3) t[i] = cfloat(0.25f * static_cast<float>(i % 5), 0);
                     return t;
                   }()});

  for (const auto& c : cases) {
    const std::string kb = (tmp / c.name).string();
    io::writeCfl(kb + ".cfl", c.k);
    std::string cfl = slurp(kb + ".hdr") + split + slurp(kb + ".cfl");
    std::string ra = [&] {
      io::writeRawArray(kb + ".ra", c.k);
      return slurp(kb + ".ra");
    }();
    if (!c.traj.empty()) {
      io::writeCfl(kb + "-t.cfl", c.traj);
      io::writeRawArray(kb + "-t.ra", c.traj);
      cfl += split + slurp(kb + "-t.hdr") + split + slurp(kb + "-t.cfl");
      ra += split + slurp(kb + "-t.ra");
    }
    put(out / "cfl" / c.name, cfl);
    put(out / "rawarray" / c.name, ra);
  }
  // A header as BART writes it with its command history.
  put(out / "cfl" / "bart-command", "# Command\nbart phantom -k\n# Dimensions\n4 4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 \n" +
                                       split + slurp((tmp / "cart2d.cfl").string()).substr(0, 128));

#ifdef LARMOR_HAVE_IO
  auto ismrmrd = [&](const std::string& name, const Dataset& d) {
    const std::string path = (tmp / (name + ".h5")).string();
    io::writeIsmrmrd(d, path);
    put(out / "ismrmrd" / name, slurp(path));
    stream::MemorySink wire;  // the same scan as a client streams it to `larmor-cli serve`
    stream::writeConfigFile(wire, "default.xml");
    stream::replayIsmrmrd(
        path, [&](const std::string& xml) { stream::writeText(wire, stream::kHeader, xml); },
        [&](const stream::Acquisition& a) { stream::writeAcquisition(wire, a); });
    stream::writeClose(wire);
    put(out / "stream" / name, std::string(wire.bytes.begin(), wire.bytes.end()));
  };
  ismrmrd("cart2d", phantom::simulate(small(8, 6, 1, 1, 2)));
  ismrmrd("accel", phantom::simulate(small(8, 12, 1, 1, 2, 2)));
  ismrmrd("slices", phantom::simulate(small(6, 6, 1, 2, 1)));
  ismrmrd("vol3d", phantom::simulate(small(6, 6, 4, 1, 1)));
  {
    Dataset d;
    d.source = "fuzz seed";
    Header& h = d.header;
    h.trajectory = TrajectoryKind::Radial;
    h.encoded[0] = h.encoded[1] = h.recon[0] = h.recon[1] = 8;
    h.coils = 2;
    d.kspace = randomArray(Shape{8, 4, 1, 2, 1}, 3);
    const CArray t = radialTrajectory(8, 4);
    d.trajectory = RArray(Shape{3, 8, 4});
    for (index_t i = 0; i < t.size(); ++i) d.trajectory[i] = t[i].real();
    ismrmrd("radial", d);
  }
#endif
  // Siemens twix: VB and VD/VE, Cartesian (with noise, reference, reflected and sync scans) and radial.
  for (bool vd : {false, true}) {
    test::TwixSpec spec;
    spec.vd = vd;
    spec.measurements = vd ? 2 : 1;
    spec.measYaps = test::twixProtocol(4, 6) + "sPat.lAccelFactPE = 2\n";
    spec.meas = test::twixXprot(2.0);
    const std::uint64_t masks[] = {1ull << 25, 0, 1ull << 22, (1ull << 22) | (1ull << 23), 1ull << 24, 0, 1ull << 21};
    std::uint16_t lin = 0;
    for (std::uint64_t m : masks) {
      test::TwixScanSpec s;
      s.mask = m, s.lin = lin++ % 6, s.samples = 8, s.channels = 2, s.centreColumn = 4, s.centreLine = 3;
      const CArray v = randomArray(Shape{16}, 10 + lin);
      s.data.assign(v.data(), v.data() + 16);
      spec.scans.push_back(s);
    }
    test::TwixScanSpec sync;
    sync.mask = 1ull << 5, sync.syncBytes = 64;
    spec.scans.insert(spec.scans.begin() + 2, sync);
    const std::string name = vd ? "vd" : "vb";
    put(out / "twix" / (name + "-cart"), test::twixBytes(spec));
    spec.scans.erase(spec.scans.begin(), spec.scans.begin() + 1);  // radial: lines 1..6 -> 0..5 as profiles
    for (auto& s : spec.scans) s.mask = s.syncBytes ? s.mask : 0, s.lin = s.lin ? s.lin - 1 : 5;
    put(out / "twix" / (name + "-radial"), test::twixBytes(spec) + split + "r");
  }
  // Reference images: the phantom reconstructed on the CPU, exported as NIfTI (plain and gzip; float32
  // magnitude and complex64) and as a DICOM series of two slices (its files joined by the separator).
  {
    Dataset d = phantom::simulate(small(8, 6, 1, 2, 2));
    recon::ReconRequest req;
    req.dataset = &d;
    req.device = "cpu";
    req.settings.keepCoilImages = false;
    const recon::ReconResult r = recon::run(req);
    io::ImageGeometry g;
    g.nx = 8, g.ny = 6, g.nz = 3;
    g.threeD = true;
    for (int z = 0; z < 3; ++z) g.topLeft.push_back({-4, -3, static_cast<double>(z)});
    g.planeSpacing = 1;
    const CArray img = randomArray(Shape{8, 6, 3, 1, 1}, 4);
    for (bool complex : {false, true}) {
      io::NiftiOptions o;
      o.complex = complex;
      const std::string nii = (tmp / (complex ? "c.nii" : "m.nii")).string();
      io::writeNifti(nii, img, g, o);
      put(out / "nifti" / (complex ? "complex64" : "float32"), slurp(nii));
    }
    io::writeImageOutput((tmp / "phantom.nii").string(), r, d);
    put(out / "nifti" / "phantom", slurp((tmp / "phantom.nii").string()));
#ifdef LARMOR_HAVE_IO
    io::writeImageOutput((tmp / "series").string() + "/", r, d);
    std::vector<fs::path> files;
    for (const auto& e : fs::recursive_directory_iterator(tmp / "series"))
      if (e.is_regular_file() && e.path().extension() == ".dcm") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    std::string series;
    for (const auto& f : files) series += (series.empty() ? "" : split) + slurp(f.string());
    put(out / "dicom_reference" / "phantom", series);
    if (!files.empty()) put(out / "dicom_reference" / "one-slice", slurp(files.front().string()));
#endif
  }
  fs::remove_all(tmp);
  for (const char* d : {"cfl", "rawarray", "ismrmrd", "twix", "nifti", "dicom_reference"}) {
    std::size_t n = 0, bytes = 0;
    for (const auto& e : fs::directory_iterator(out / d)) ++n, bytes += fs::file_size(e.path());
    std::cout << (out / d).string() << ": " << n << " seeds, " << bytes << " bytes\n";
  }
  return 0;
}
