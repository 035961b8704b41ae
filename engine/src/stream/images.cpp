// Reconstructed slices as MRD IMAGE messages and back (larmor/stream/images.hpp).
#include "larmor/stream/images.hpp"

#include <ismrmrd/meta.h>
#include <ismrmrd/version.h>

#include <cstring>
#include <sstream>

#include "larmor/io/output_safety.hpp"
#include "larmor/util/error.hpp"

namespace larmor::stream {

Image imageMessage(const CArray& image, const FinishedSlice& s, int index, int series, const std::string& comment) {
  const Shape& sh = image.shape();
  require(sh.rank() >= 3 && sh.size() == sh[0] * sh[1] * sh[2], "a streamed image must be one slice, got " + sh.str());
  for (int k = 0; k < 3; ++k)
    require(sh[k] >= 1 && sh[k] <= 65535, "a streamed image dimension must be 1..65535, got " + sh.str());
  Image m;
  auto& h = m.head;
  std::memset(&h, 0, sizeof h);
  h.version = ISMRMRD_VERSION_MAJOR;
  h.data_type = ISMRMRD::ISMRMRD_CXFLOAT;
  h.image_type = ISMRMRD::ISMRMRD_IMTYPE_COMPLEX;
  h.channels = 1;
  const Header& hd = s.dataset.header;
  const Geometry& g = hd.geometry;
  for (int k = 0; k < 3; ++k) {
    h.matrix_size[k] = static_cast<std::uint16_t>(sh[k]);
    h.field_of_view[k] = hd.reconFovMm[k];
    h.position[k] = g.position[k];
    h.read_dir[k] = g.readDir[k], h.phase_dir[k] = g.phaseDir[k], h.slice_dir[k] = g.sliceDir[k];
  }
  h.slice = static_cast<std::uint16_t>(s.slice);
  h.contrast = static_cast<std::uint16_t>(s.key.contrast), h.phase = static_cast<std::uint16_t>(s.key.phase);
  h.repetition = static_cast<std::uint16_t>(s.key.repetition), h.set = static_cast<std::uint16_t>(s.key.set);
  h.image_index = static_cast<std::uint16_t>(index);
  h.image_series_index = static_cast<std::uint16_t>(series);
  ISMRMRD::MetaContainer meta;
  meta.set("DataRole", "Image");
  meta.set("ImageComment", comment.c_str());
  meta.set("Software", io::softwareText().c_str());
  std::stringstream xml;
  ISMRMRD::serialize(meta, xml);
  m.attributes = xml.str();
  m.pixels.resize(static_cast<std::size_t>(image.size()) * sizeof(cfloat));
  std::memcpy(m.pixels.data(), image.data(), m.pixels.size());
  return m;
}

CArray imagePixels(const Image& image) {
  const auto& h = image.head;
  require(h.data_type == ISMRMRD::ISMRMRD_CXFLOAT,
          "IMAGE message: data_type " + std::to_string(h.data_type) + " (Larmor's client takes complex float, 7)");
  CArray a(Shape{h.matrix_size[0], h.matrix_size[1], h.matrix_size[2], h.channels});
  require(image.pixels.size() == static_cast<std::size_t>(a.size()) * sizeof(cfloat),
          "IMAGE message: the pixels do not match the header");
  std::memcpy(a.data(), image.pixels.data(), image.pixels.size());
  return a;
}

}  // namespace larmor::stream
