#pragma once
// Helpers for the GUI tests: waiting on the event loop, small phantoms, picture statistics.
#include <QImage>
#include <QJsonObject>
#include <QString>
#include <functional>

#include "larmor/io/image_geometry.hpp"
#include "larmor/phantom/simulate.hpp"

namespace larmor::ui::test {

/// Processes events until `done` is true or `ms` pass; returns done().
bool waitUntil(const std::function<bool()>& done, int ms);

/// A small Shepp-Logan phantom: n x n (x n3 when n3 > 1), `coils` coils, on `traj`.
phantom::SimulateSettings smallPhantom(TrajectoryKind traj, int n, int coils, int accel = 1, int acs = 0, int n3 = 1);

/// Standard deviation of the grey level (0..255) over the picture, and the number of distinct colours:
/// a blank or uniformly filled region has (close to) zero of the first and one of the second.
double greyStdDev(const QImage& image);
int distinctColours(const QImage& image);

/// A fresh directory under the build's test-tmp for one test.
QString scratchDir(const QString& name);

/// The exports read back by independent readers (tests/gui/check_export.py: pydicom for the DICOM series in
/// `dicomDir`, nibabel for the NIfTI file `nifti`; "" leaves one out), run by /usr/bin/python3 (or
/// $LARMOR_TEST_PYTHON).
struct ExportReadBack {
  bool readersMissing = false;  ///< no /usr/bin/python3 with pydicom, nibabel and numpy: the caller QSKIPs
  QString error;                ///< the reader failed (a broken file): the caller fails
  QJsonObject json;
};
ExportReadBack readExportsIndependently(const QString& dicomDir, const QString& nifti);

/// The read-back exports against the image on screen: `image` [x, y, z, 1, slices] (its magnitude is what
/// the files hold), the patient geometry `g` they must carry (ImagePositionPatient = g.topLeft[plane],
/// ImageOrientationPatient = g.row, g.column, PixelSpacing; the NIfTI sform = the same in RAS), and the
/// window [lo, hi] on screen (WindowCenter / WindowWidth, cal_min / cal_max). "" when all agree, else the
/// first difference.
QString compareExports(const QJsonObject& readBack, const CArray& image, const io::ImageGeometry& g, double lo, double hi);

}  // namespace larmor::ui::test
