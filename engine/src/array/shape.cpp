#include "larmor/array/array.hpp"

#include <sstream>

namespace larmor {

bool Shape::operator==(const Shape& o) const {
  const std::size_t n = std::max(rank(), o.rank());
  for (std::size_t i = 0; i < n; ++i)
    if ((*this)[i] != o[i]) return false;
  return true;
}

std::string Shape::str() const {
  std::ostringstream s;
  s << '[';
  for (std::size_t i = 0; i < dims_.size(); ++i) s << (i ? ", " : "") << dims_[i];
  s << ']';
  return s.str();
}

}  // namespace larmor
