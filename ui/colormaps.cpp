#include "colormaps.hpp"

#include <QFile>
#include <QHash>
#include <QTextStream>

#include <vtkColorTransferFunction.h>
#include <vtkLookupTable.h>
#include <vtkNew.h>

namespace larmor::ui {

QStringList colormapNames() { return {"grey", "viridis", "phase", "hot"}; }

QVector<ColormapAnchor> colormapAnchors(const QString& name) {
  // Parsed once per map: the files are tiny but views ask on every window change.
  static QHash<QString, QVector<ColormapAnchor>> cache;
  const QString key = colormapNames().contains(name) ? name : QStringLiteral("grey");
  auto it = cache.find(key);
  if (it != cache.end()) return *it;
  QVector<ColormapAnchor> anchors;
  QFile f(":/colormaps/" + key + ".txt");
  if (f.open(QIODevice::ReadOnly | QIODevice::Text)) {
    QTextStream in(&f);
    while (!in.atEnd()) {
      const QString line = in.readLine().trimmed();
      if (line.isEmpty() || line.startsWith('#')) continue;
      const QStringList p = line.split(' ', Qt::SkipEmptyParts);
      if (p.size() != 4) continue;
      anchors.push_back({p[0].toDouble(), QColor(p[1].toInt(), p[2].toInt(), p[3].toInt())});
    }
  }
  if (anchors.size() < 2) anchors = {{0.0, QColor(0, 0, 0)}, {1.0, QColor(255, 255, 255)}};
  cache.insert(key, anchors);
  return anchors;
}

void fillTransferFunction(vtkColorTransferFunction* ctf, const QString& name, double lo, double hi) {
  ctf->RemoveAllPoints();
  ctf->SetColorSpaceToRGB();
  ctf->ClampingOn();
  for (const auto& a : colormapAnchors(name))
    ctf->AddRGBPoint(lo + a.position * (hi - lo), a.color.redF(), a.color.greenF(), a.color.blueF());
}

void fillLookupTable(vtkLookupTable* lut, const QString& name, double lo, double hi) {
  // The transfer function interpolates between anchors; the table samples it at 256 levels (more than
  // an 8-bit display shows) so VTK's texture mapping stays a plain table lookup.
  vtkNew<vtkColorTransferFunction> ctf;
  fillTransferFunction(ctf, name, 0.0, 1.0);
  constexpr int n = 256;
  lut->SetNumberOfTableValues(n);
  for (int i = 0; i < n; ++i) {
    double rgb[3];
    ctf->GetColor(static_cast<double>(i) / (n - 1), rgb);
    lut->SetTableValue(i, rgb[0], rgb[1], rgb[2], 1.0);
  }
  lut->SetRange(lo, hi < lo ? lo : hi);
  lut->SetUseBelowRangeColor(false);
  lut->SetUseAboveRangeColor(false);
  lut->Modified();
}

}  // namespace larmor::ui
