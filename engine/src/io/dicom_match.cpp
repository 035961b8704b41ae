// Matching a test series to a reference series of the same scan, image by image (dicom.hpp, matchDicomSeries):
// what `larmor-cli compare` does when both are DICOM series, e.g. Larmor's reconstruction against the
// scanner's own images retrieved from a PACS. Geometry (PS3.3 C.7.6.2: ImagePositionPatient is the centre of
// the first voxel, ImageOrientationPatient the row and column direction cosines, PixelSpacing row then column
// spacing) and frame (EchoNumbers, TemporalPositionIdentifier, TriggerTime) must agree; a greedy match in
// InstanceNumber order pairs each test image with the first unused reference image that agrees.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "larmor/io/dicom.hpp"
#include "larmor/util/error.hpp"

namespace larmor::io {

namespace {

constexpr double kPositionMm = 0.05, kOrientation = 1e-4, kSpacingMm = 1e-4, kTriggerMs = 0.5;

bool near(const std::vector<double>& a, const std::vector<double>& b, double tol) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - b[i]) <= tol)) return false;
  return true;
}

std::string list(const std::vector<double>& v) {
  std::string s = "(";
  char buf[32];
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.6g", i ? ", " : "", v[i]);
    s += buf;
  }
  return s + ")";
}

/// Why `r` is not `t`'s image ("" when it is): the first property that differs.
std::string mismatch(const DicomImageKey& t, const DicomImageKey& r) {
  if (t.rows != r.rows || t.columns != r.columns)
    return "matrix " + std::to_string(t.columns) + "x" + std::to_string(t.rows) + " against the reference's " +
           std::to_string(r.columns) + "x" + std::to_string(r.rows);
  if (!t.spacing.empty() && !r.spacing.empty() && !near(t.spacing, r.spacing, kSpacingMm))
    return "pixel spacing " + list(t.spacing) + " mm against " + list(r.spacing);
  if (!t.orientation.empty() && !r.orientation.empty() && !near(t.orientation, r.orientation, kOrientation))
    return "orientation " + list(t.orientation) + " against " + list(r.orientation);
  if (!near(t.position, r.position, kPositionMm)) return "nothing at its position " + list(t.position) + " mm";
  if (!t.echo.empty() && !r.echo.empty() && t.echo != r.echo) return "echo " + t.echo;
  if (!t.temporalPosition.empty() && !r.temporalPosition.empty() && t.temporalPosition != r.temporalPosition)
    return "temporal position " + t.temporalPosition;
  if (t.triggerTimeMs >= 0 && r.triggerTimeMs >= 0 && !(std::abs(t.triggerTimeMs - r.triggerTimeMs) <= kTriggerMs))
    return "trigger time " + std::to_string(t.triggerTimeMs) + " ms";
  return {};
}

void copyImage(const CArray& from, std::size_t fromIndex, CArray& to, std::size_t toIndex) {
  const index_t n = from.shape()[0] * from.shape()[1];
  std::memcpy(&to[static_cast<index_t>(toIndex) * n], &from[static_cast<index_t>(fromIndex) * n], sizeof(cfloat) * n);
}

}  // namespace

DicomMatch matchDicomSeries(const DicomSeries& test, const DicomSeries& ref, const std::string& testPath,
                            const std::string& refPath) {
  require(!test.images.empty() && !ref.images.empty(), testPath + ": no images to match with " + refPath);
  const index_t nx = test.image.shape()[0], ny = test.image.shape()[1];
  require(ref.image.shape()[0] == nx && ref.image.shape()[1] == ny,
          testPath + ": its images are " + std::to_string(nx) + "x" + std::to_string(ny) + ", the reference " + refPath +
              "'s " + std::to_string(ref.image.shape()[0]) + "x" + std::to_string(ref.image.shape()[1]) +
              " (not the same matrix: reconstruct at the scanner's matrix to compare)");
  DicomMatch m;
  m.referenceImages = ref.images.size();
  m.reference = CArray(Shape{nx, ny, static_cast<index_t>(test.images.size())});
  const auto hasPositions = [](const DicomSeries& s) {
    for (const auto& k : s.images)
      if (k.position.empty()) return false;
    return true;
  };
  if (!hasPositions(test) || !hasPositions(ref)) {
    require(test.images.size() == ref.images.size(),
            testPath + ": " + std::to_string(test.images.size()) + " images against " + std::to_string(ref.images.size()) +
                " in " + refPath + ", and without ImagePositionPatient in both they can only be matched by order");
    m.byOrder = true;
    for (std::size_t i = 0; i < test.images.size(); ++i) copyImage(ref.image, i, m.reference, i);
    return m;
  }
  std::vector<bool> used(ref.images.size(), false);
  for (std::size_t i = 0; i < test.images.size(); ++i) {
    const DicomImageKey& t = test.images[i];
    std::string why;
    std::size_t found = ref.images.size();
    for (std::size_t j = 0; j < ref.images.size() && found == ref.images.size(); ++j) {
      if (used[j]) continue;
      const std::string w = mismatch(t, ref.images[j]);
      if (w.empty()) found = j;
      else if (why.empty() || w.rfind("nothing at", 0) != 0) why = w;  // a property other than position says more
    }
    if (found == ref.images.size())
      throw Error(t.file + ": no image of the reference " + refPath + " matches it by geometry and frame (" +
                  (why.empty() ? "every matching image is already paired" : why) + "; the reference has " +
                  std::to_string(ref.images.size()) + " images)");
    used[found] = true;
    copyImage(ref.image, found, m.reference, i);
  }
  return m;
}

}  // namespace larmor::io
