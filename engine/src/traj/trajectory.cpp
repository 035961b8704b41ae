#include "larmor/traj/trajectory.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace larmor::traj {


void validate(const RArray& k, int dims, const index_t image[3], const std::string& what) {
  require(dims == 2 || dims == 3, what + ": dims must be 2 or 3, got " + std::to_string(dims));
  require(!k.empty(), what + " is empty: no k-space samples");
  require(k.size() % 3 == 0 && k.shape()[0] == 3,
          what + " " + k.shape().str() + " must hold 3 coordinates per sample ([3, readout, profiles])");
  const index_t readout = std::max<index_t>(k.shape()[1], 1);
  const index_t m = k.size() / 3;
  double limit[3];
  for (int d = 0; d < 3; ++d) {
    require(d >= dims || image[d] >= 1, what + ": image size must be positive");
    limit[d] = d < dims ? 1.01 * 0.5 * static_cast<double>(image[d]) : 0;
  }
  for (index_t j = 0; j < m; ++j) {
    const float* p = k.data() + 3 * j;
    for (int d = 0; d < 3; ++d) {
      if (!std::isfinite(p[d]))
        throw Error(what + ": coordinate " + std::to_string(d) + " of sample " + std::to_string(j) + " is " +
                    (std::isnan(p[d]) ? "NaN" : "Inf"));
    }
    for (int d = 0; d < dims; ++d) {
      if (std::abs(static_cast<double>(p[d])) > limit[d]) {
        // (ostringstream: GCC 12 warns falsely on long chains of string operator+.)
        std::ostringstream m;
        m.precision(4);
        m << what << ": sample " << j % readout << " of profile " << j / readout << " has k = (" << p[0] << ", "
          << p[1] << ", " << p[2] << ") cycles/FOV, beyond the " << image[0] << "x" << image[1];
        if (dims == 3) m << "x" << image[2];
        m << " matrix's +-" << 0.5 * static_cast<double>(image[d])
          << ": wrong trajectory scale? (Larmor expects cycles per FOV, BART's unit)";
        throw Error(m.str());
      }
    }
  }
}

double maxRadius(const RArray& k) {
  double r2 = 0;
  for (index_t j = 0; j + 2 < k.size(); j += 3) {
    const double x = k[j], y = k[j + 1], z = k[j + 2];
    r2 = std::max(r2, x * x + y * y + z * z);
  }
  return std::sqrt(r2);
}

bool profileLine(const float* k, index_t n, double u[3], std::vector<double>& t, double* offLine) {
  index_t far = 0;
  double farNorm = 0;
  for (index_t i = 0; i < n; ++i) {
    const double r = std::sqrt(double(k[3 * i]) * k[3 * i] + double(k[3 * i + 1]) * k[3 * i + 1] +
                               double(k[3 * i + 2]) * k[3 * i + 2]);
    if (r > farNorm) farNorm = r, far = i;
  }
  if (farNorm == 0) return false;
  for (int d = 0; d < 3; ++d) u[d] = k[3 * far + d] / farNorm;
  t.resize(static_cast<std::size_t>(n));
  double off = 0;
  for (index_t i = 0; i < n; ++i) {
    const double dot = k[3 * i] * u[0] + k[3 * i + 1] * u[1] + k[3 * i + 2] * u[2];
    t[static_cast<std::size_t>(i)] = dot;
    if (offLine) {
      const double ox = k[3 * i] - dot * u[0], oy = k[3 * i + 1] - dot * u[1], oz = k[3 * i + 2] - dot * u[2];
      off = std::max(off, std::sqrt(ox * ox + oy * oy + oz * oz));
    }
  }
  if (offLine) *offLine = off;
  return true;
}

namespace {

/// profileLine for a profile within `tol` of its line, u turned to point to increasing readout index.
bool lineOfProfile(const float* k, index_t n, double tol, double u[3], std::vector<double>& t) {
  double off = 0;
  if (!profileLine(k, n, u, t, &off) || off > tol) return false;
  if (n > 1 && t.back() < t.front()) {
    for (int d = 0; d < 3; ++d) u[d] = -u[d];
    for (double& v : t) v = -v;
  }
  return true;
}

}  // namespace

bool isRadialLines(const RArray& k) {
  const index_t n = k.shape()[1], profiles = k.shape()[2];
  if (k.empty() || k.shape()[0] != 3 || n < 2) return false;
  const double tol = 1e-3 * std::max(1.0, maxRadius(k));
  std::vector<double> t;
  double u[3];
  for (index_t p = 0; p < profiles; ++p)
    if (!lineOfProfile(k.data() + 3 * n * p, n, tol, u, t)) return false;
  return true;
}

std::optional<RadialInfo> detectRadial(const RArray& k) {
  const index_t n = k.shape()[1], profiles = k.shape()[2];
  if (k.empty() || k.shape()[0] != 3 || n < 2 || profiles < 1) return std::nullopt;
  const double tol = 1e-3 * std::max(1.0, maxRadius(k));
  RadialInfo info;
  info.readout = n;
  info.spokes = profiles;
  info.anglesRad.resize(static_cast<std::size_t>(profiles));
  std::vector<double> t;
  double u[3];
  double start = 0, step = 0;
  for (index_t p = 0; p < profiles; ++p) {
    const float* kp = k.data() + 3 * n * p;
    for (index_t i = 0; i < n; ++i)
      if (std::abs(kp[3 * i + 2]) > tol) return std::nullopt;
    if (!lineOfProfile(kp, n, tol, u, t)) return std::nullopt;
    const double s0 = t.front(), ds = (t.back() - t.front()) / static_cast<double>(n - 1);
    if (ds <= 0) return std::nullopt;
    for (index_t i = 0; i < n; ++i)
      if (std::abs(t[static_cast<std::size_t>(i)] - (s0 + ds * static_cast<double>(i))) > tol) return std::nullopt;
    if (p == 0) {
      start = s0, step = ds;
    } else if (std::abs(s0 - start) > tol || std::abs(ds - step) * static_cast<double>(n) > tol) {
      return std::nullopt;
    }
    info.anglesRad[static_cast<std::size_t>(p)] = static_cast<float>(std::atan2(u[1], u[0]));
  }
  info.kStart = static_cast<float>(start);
  info.kStep = static_cast<float>(step);
  return info;
}

std::optional<StackInfo> detectStack(const RArray& k) {
  const index_t n = k.shape()[1], profiles = k.shape()[2];
  if (k.empty() || k.shape()[0] != 3 || n < 1 || profiles < 2) return std::nullopt;
  const double tol = 1e-4 * std::max(1.0, maxRadius(k));
  // kz of every profile (constant along it), and the distinct planes in ascending order.
  std::vector<double> kz(static_cast<std::size_t>(profiles));
  for (index_t p = 0; p < profiles; ++p) {
    const double z0 = k(2, 0, p);
    for (index_t i = 1; i < n; ++i)
      if (std::abs(k(2, i, p) - z0) > tol) return std::nullopt;
    kz[static_cast<std::size_t>(p)] = z0;
  }
  std::vector<double> planes = kz;
  std::sort(planes.begin(), planes.end());
  planes.erase(std::unique(planes.begin(), planes.end(), [&](double a, double b) { return b - a <= tol; }),
               planes.end());
  if (planes.size() < 2) return std::nullopt;
  const double spacing = (planes.back() - planes.front()) / static_cast<double>(planes.size() - 1);
  for (std::size_t q = 0; q < planes.size(); ++q)
    if (std::abs(planes[q] - (planes.front() + spacing * static_cast<double>(q))) > tol) return std::nullopt;
  const index_t perPlane = profiles / static_cast<index_t>(planes.size());
  if (perPlane * static_cast<index_t>(planes.size()) != profiles) return std::nullopt;
  StackInfo st;
  st.kzSpacing = spacing;
  st.profileInPlane.resize(static_cast<std::size_t>(profiles));
  std::vector<index_t> count(planes.size(), 0), firstOfPlane0;
  std::vector<std::size_t> planeOf(static_cast<std::size_t>(profiles));
  for (index_t p = 0; p < profiles; ++p) {
    const auto q = static_cast<std::size_t>(std::lround((kz[static_cast<std::size_t>(p)] - planes.front()) / spacing));
    planeOf[static_cast<std::size_t>(p)] = q;
    if (count[q] >= perPlane) return std::nullopt;
    st.profileInPlane[static_cast<std::size_t>(p)] = count[q]++;
    if (q == 0) firstOfPlane0.push_back(p);
  }
  // Every plane repeats plane 0's profiles, in order.
  for (index_t p = 0; p < profiles; ++p) {
    const index_t ref = firstOfPlane0[static_cast<std::size_t>(st.profileInPlane[static_cast<std::size_t>(p)])];
    for (index_t i = 0; i < n; ++i)
      if (std::abs(k(0, i, p) - k(0, i, ref)) > tol || std::abs(k(1, i, p) - k(1, i, ref)) > tol) return std::nullopt;
  }
  st.plane = RArray(Shape{3, n, perPlane}, 0.f);
  for (index_t c = 0; c < perPlane; ++c)
    for (index_t i = 0; i < n; ++i) {
      st.plane(0, i, c) = k(0, i, firstOfPlane0[static_cast<std::size_t>(c)]);
      st.plane(1, i, c) = k(1, i, firstOfPlane0[static_cast<std::size_t>(c)]);
    }
  return st;
}

std::uint64_t hash(const RArray& k) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&](const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    // FNV-1a over 8-byte words (then the tail), fast enough for millions of samples.
    std::size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      h = (h ^ w) * 1099511628211ull;
      h ^= h >> 29;
    }
    for (; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  for (index_t d : k.shape().dims()) mix(&d, sizeof d);
  mix(k.data(), static_cast<std::size_t>(k.size()) * sizeof(float));
  return h;
}

NufftGeometry geometry(const RArray& k, int dims, const index_t image[3], std::optional<RadialInfo> radial) {
  NufftGeometry g;
  g.dims = dims;
  g.image[0] = image[0];
  g.image[1] = image[1];
  g.image[2] = dims == 3 ? image[2] : 1;
  g.trajectory = k;
  g.radial = std::move(radial);
  return g;
}

}  // namespace larmor::traj
