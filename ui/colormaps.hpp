#pragma once
// The viewer's colour maps: anchor tables shipped as resources (resources/colormaps/*.txt) turned into
// VTK lookup tables. Grey and viridis for magnitude, a cyclic map for phase, hot for PSNR maps.
#include <QColor>
#include <QString>
#include <QStringList>
#include <QVector>

class vtkLookupTable;
class vtkColorTransferFunction;

namespace larmor::ui {

struct ColormapAnchor {
  double position = 0;  ///< 0..1
  QColor color;
};

/// The colour maps the viewer offers, in menu order.
QStringList colormapNames();
/// The anchors of `name` (":/colormaps/NAME.txt"); grey when the name is unknown.
QVector<ColormapAnchor> colormapAnchors(const QString& name);
/// Fills `lut` (256 entries) with the map over the scalar range [lo, hi]; values outside clamp.
void fillLookupTable(vtkLookupTable* lut, const QString& name, double lo, double hi);
/// The same map as a colour transfer function over [lo, hi] (volume rendering).
void fillTransferFunction(vtkColorTransferFunction* ctf, const QString& name, double lo, double hi);

}  // namespace larmor::ui
