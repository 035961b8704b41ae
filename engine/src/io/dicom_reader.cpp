// Reading DICOM files back with DCMTK: what the export tests and `info` use to see what a viewer sees.
#include <dcmtk/config/osconfig.h>  // must come first: DCMTK's build configuration
#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcfilefo.h>
#include <dcmtk/dcmdata/dcitem.h>
#include <dcmtk/dcmdata/dcelem.h>

#include <cstdlib>
#include <cstring>

#include "larmor/io/dicom.hpp"

namespace larmor::io {

std::string DicomInstance::get(std::uint16_t group, std::uint16_t element) const {
  const auto it = values.find((static_cast<std::uint32_t>(group) << 16) | element);
  return it == values.end() ? std::string() : it->second;
}

double DicomInstance::value(index_t i) const {
  const std::string slope = get(0x0028, 0x1053), intercept = get(0x0028, 0x1052);
  const double m = slope.empty() ? 1.0 : std::strtod(slope.c_str(), nullptr);
  const double b = intercept.empty() ? 0.0 : std::strtod(intercept.c_str(), nullptr);
  const std::uint16_t w = pixels.at(static_cast<std::size_t>(i));
  double stored = w;
  if (signedPixels) {
    std::int16_t s;
    std::memcpy(&s, &w, sizeof s);
    stored = s;
  }
  return stored * m + b;
}

DicomInstance readDicomFile(const std::string& path) {
  DcmFileFormat file;
  const OFCondition c = file.loadFile(path.c_str());
  if (c.bad()) throw Error(path + ": cannot read as DICOM (" + std::string(c.text()) + ")");
  DcmDataset& ds = *file.getDataset();
  DicomInstance out;
  for (unsigned long i = 0; i < ds.card(); ++i) {
    DcmElement* e = ds.getElement(i);
    if (!e) continue;
    const DcmTagKey key = e->getTag().getXTag();
    if (key == DCM_PixelData) continue;
    OFString text;
    if (e->isLeaf()) e->getOFStringArray(text);
    out.values[(static_cast<std::uint32_t>(key.getGroup()) << 16) | key.getElement()] = text.c_str();
  }
  Uint16 rows = 0, columns = 0, representation = 0;
  ds.findAndGetUint16(DCM_Rows, rows);
  ds.findAndGetUint16(DCM_Columns, columns);
  ds.findAndGetUint16(DCM_PixelRepresentation, representation);
  out.rows = rows, out.columns = columns, out.signedPixels = representation == 1;
  const Uint16* px = nullptr;
  unsigned long count = 0;
  if (ds.findAndGetUint16Array(DCM_PixelData, px, &count).good() && px) out.pixels.assign(px, px + count);
  // The private block: find the element reserved by creator "LARMOR" rather than assuming 0x10.
  for (Uint16 block = 0x10; block <= 0xff; ++block) {
    const char* creator = nullptr;
    if (ds.findAndGetString(DcmTagKey(kLarmorPrivateGroup, block), creator).bad() || !creator) continue;
    if (std::string(creator) != kLarmorPrivateCreator) continue;
    const Uint16 element = static_cast<Uint16>((block << 8) | (kLarmorProvenanceElement & 0xff));
    OFString json;
    if (ds.findAndGetOFStringArray(DcmTagKey(kLarmorPrivateGroup, element), json).good()) out.provenanceJson = json.c_str();
    break;
  }
  return out;
}

}  // namespace larmor::io
