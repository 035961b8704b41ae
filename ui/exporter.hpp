#pragma once
// Export: PNG of the view (Qt grabs the widgets, VTK content included), the complex image as BART
// .cfl (engine's writer), and DICOM series / NIfTI through the engine's writeImageOutput when this
// build has it (engine/include/larmor/io/export.hpp; detected at compile time).
#include <QImage>
#include <QString>
#include <QStringList>

#include "larmor/data/dataset.hpp"
#include "larmor/quality/display.hpp"
#include "larmor/recon/recon.hpp"

namespace larmor::ui {

struct DicomExportOptions {
  QString seriesDescription;  ///< empty: the engine's "Larmor <method>"
  bool anonymize = false;
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

/// `progress`: per file written (the engine's export progress).
QStringList exportDicom(const QString& directory, const recon::ReconResult& result, const Dataset& dataset,
                        const DicomExportOptions& options, const Progress& progress = {});
QStringList exportNifti(const QString& path, const recon::ReconResult& result, const Dataset& dataset,
                        const DicomExportOptions& options, const Progress& progress = {});

}  // namespace larmor::ui
