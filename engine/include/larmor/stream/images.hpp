#pragma once
// Reconstructed slices as MRD IMAGE messages and back (docs/streaming.md): complex float pixels (MRD_CXFLOAT),
// so the client receives the reconstruction's values bit for bit; the slice, frame indices, matrix, field of
// view and orientation in the ImageHeader; a MetaContainer naming the software and the method.
#include <string>

#include "larmor/stream/assembler.hpp"
#include "larmor/stream/protocol.hpp"

namespace larmor::stream {

/// `image` ([x, y, z, 1, 1], one slice) as an IMAGE message of slice `s`, image_index `index` (1-based) in
/// series `series`; `comment` goes into the attributes' ImageComment.
Image imageMessage(const CArray& image, const FinishedSlice& s, int index, int series, const std::string& comment);

/// A received MRD_CXFLOAT image's pixels as [x, y, z, channels]; Error for another data type.
CArray imagePixels(const Image& image);

}  // namespace larmor::stream
