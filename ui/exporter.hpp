#pragma once
// Export: PNG of the view (Qt grabs the widgets, VTK content included), the complex image as BART
// .cfl (engine's writer), and DICOM series / NIfTI through the engine's writeImageOutput when this
// build has it (engine/include/larmor/io/export.hpp; detected at compile time).
#include <QImage>
#include <QString>
#include <QStringList>

#include <memory>
#include <vector>

#include "larmor/data/dataset.hpp"
#include "larmor/io/series.hpp"
#include "larmor/quality/display.hpp"
#include "larmor/recon/recon.hpp"

namespace larmor::ui {

struct DicomExportOptions {
  QString seriesDescription;  ///< empty: the series description rule (model::seriesDescription)
  bool anonymize = false;     ///< overrides the patient and study fields
  /// Every frame of a series (each reconstructed with the shown run's settings), or the one on screen.
  enum class Frames {
    Auto,     ///< every frame when each has a run, else the one on screen
    All,      ///< every frame; an error names those without a run
    Current,  ///< the frame on screen
  } frames = Frames::Auto;
  /// DICOM patient and study; empty: the study's fields as last set (model::StudyFields), else the header's.
  QString patientName, patientId, accessionNumber, studyDescription;
  quality::Component component = quality::Component::Magnitude;
  /// The window the user looks at, stored as DICOM WindowCenter/Width (NIfTI cal_min/max); 0 width = auto.
  double windowLow = 0, windowHigh = 0;
};

/// [x, y, z, 1, slices] -> BART's layout (slices at dimension 13, trailing ones dropped), as
/// larmor-cli writes it, so `bart` tools read the GUI's files the same way.
CArray toBartLayout(const CArray& image);
/// Every export first applies the engine's output-safety rules (larmor/io/output_safety.hpp): the path
/// may not be an input (`inputs`, and for DICOM/NIfTI the dataset's source file), a folder must be new,
/// empty or an earlier Larmor export, the format must hold the image and the disk must have room.
/// Writes FILE.cfl/FILE.hdr. Throws Error.
void exportCfl(const QString& path, const CArray& image, const QStringList& inputs = {});
/// Writes atomically (temporary file renamed into place). Throws Error when the image cannot be written.
void exportPng(const QString& path, const QImage& image, const QStringList& inputs = {});

bool dicomExportAvailable();
bool niftiExportAvailable();
/// Writes the series; returns the files written. Throws Error (also when this build has no DICOM
/// writer: "DICOM export is not in this build").
/// DICOM text that leaves the workstation is plain ASCII (no Specific Character Set needed by the PACS):
/// Greek letters spelled out ("λ" -> "lambda"), dashes and signs replaced, anything else dropped.
QString asciiText(const QString& text);
/// The number of DICOM instances (.dcm files) in an export's file list.
int dicomInstanceCount(const QStringList& files);

/// What an export writes: one frame's result, or every frame of `series` (results in frame order, one per
/// frame) with its temporal tags (io::writeSeriesOutput); DICOM's study UID and first series number.
struct ExportImages {
  std::vector<std::shared_ptr<const recon::ReconResult>> results;
  const Dataset* dataset = nullptr;        ///< the frame on screen (one result)
  const io::Series* series = nullptr;      ///< every frame (several results)
  std::string studyUid;
  int seriesNumber = 0;
};

/// `progress`: per file written (the engine's export progress).
QStringList exportDicom(const QString& directory, const ExportImages& images, const DicomExportOptions& options,
                        const Progress& progress = {});
QStringList exportNifti(const QString& path, const ExportImages& images, const DicomExportOptions& options,
                        const Progress& progress = {});
/// One frame (the shown image).
QStringList exportDicom(const QString& directory, const recon::ReconResult& result, const Dataset& dataset,
                        const DicomExportOptions& options, const Progress& progress = {});

}  // namespace larmor::ui
