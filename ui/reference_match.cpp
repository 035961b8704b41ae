// The reconstruction paired with a DICOM reference series by geometry and frame (reference_match.hpp): the
// reconstruction's series written by the export (exporter.hpp) into a QTemporaryDir, read back and matched by the
// engine (io::readDicomSeries, io::matchDicomSeries in larmor/io/dicom.hpp), the code path of `larmor-cli compare`.
// InstanceNumber = 1 + plane + planes x frame in the export, so frame f's planes are images f*planes .. (f+1)*planes-1
// of the matched reference.
#include "reference_match.hpp"

#include <QObject>
#include <QTemporaryDir>
#include <algorithm>

#include "larmor/io/dicom.hpp"
#include "larmor/util/error.hpp"

namespace larmor::ui {

namespace {

#ifdef LARMOR_HAVE_IO
/// `shown` written into `scratch`/`name` and matched with `ref`; frame `frame`'s planes of the matched reference.
MatchedReference matchOnce(const QTemporaryDir& scratch, const QString& name, const ExportImages& shown,
                           std::size_t frame, const io::DicomSeries& ref, const QString& refPath) {
  const QString dir = scratch.filePath(name);
  DicomExportOptions quiet;
  quiet.seriesDescription = QStringLiteral("matching");
  exportDicom(dir, shown, quiet);
  const io::DicomSeries test = io::readDicomSeries(dir.toStdString());
  io::DicomMatch m;
  try {
    m = io::matchDicomSeries(test, ref, "the reconstruction", refPath.toStdString());
  } catch (const std::exception& e) {  // the scratch folder's file names mean nothing to the user
    throw Error(QString::fromUtf8(e.what()).replace(dir + "/", "the reconstruction's ").toStdString());
  }
  const std::size_t frames = std::max<std::size_t>(1, shown.results.size());
  const Shape& s = m.reference.shape();
  const index_t planes = s[2] / static_cast<index_t>(frames), plane = s[0] * s[1];
  require(planes * static_cast<index_t>(frames) == s[2], refPath.toStdString() + ": the reconstruction's series has " +
                                                             std::to_string(s[2]) + " images, not " + std::to_string(frames) + " frames of equal size");
  MatchedReference out;
  out.image = CArray(Shape{s[0], s[1], planes});
  const index_t first = static_cast<index_t>(frames > 1 ? frame : 0) * planes * plane;
  std::copy_n(m.reference.data() + first, planes * plane, out.image.data());
  out.byOrder = m.byOrder;
  out.how = QObject::tr("matched %1 image(s) of %2 in the reference %3")
                .arg(planes)
                .arg(m.referenceImages)
                .arg(m.byOrder ? QObject::tr("by order (no positions)") : QObject::tr("by position and frame"));
  return out;
}
#endif

}  // namespace

MatchedReference matchReferenceSeries(const QString& referencePath, const ExportImages& shown, std::size_t frame) {
#ifdef LARMOR_HAVE_IO
  QTemporaryDir scratch;
  require(scratch.isValid(), referencePath.toStdString() + ": no scratch folder to write the reconstruction in for matching");
  const io::DicomSeries ref = io::readDicomSeries(referencePath.toStdString());
  if (shown.results.size() <= 1) return matchOnce(scratch, "frame", shown, 0, ref, referencePath);
  try {
    return matchOnce(scratch, "series", shown, frame, ref, referencePath);
  } catch (const std::exception& series) {  // a reference of fewer frames: the frame on screen alone
    ExportImages one;
    one.results = {shown.results.at(frame)};
    one.dataset = &shown.series->frames.at(frame);
    try {
      return matchOnce(scratch, "frame", one, 0, ref, referencePath);
    } catch (const std::exception&) {
      throw Error(series.what());
    }
  }
#else
  (void)shown, (void)frame;
  throw Error(referencePath.toStdString() + ": DICOM is not in this build (LARMOR_IO=OFF)");
#endif
}

}  // namespace larmor::ui
