#pragma once
// A Cartesian ISMRMRD file built with libismrmrd's own API, for tests of the reader: a one-encoding header
// (nx x ny, 256 x 256 x 5 mm, the pe1 limit given; more set through enc()) and the acquisitions, written in
// order by write().
#include <ismrmrd/dataset.h>
#include <ismrmrd/ismrmrd.h>
#include <ismrmrd/xml.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace larmor::testing {

struct IsmrmrdFile {
  ISMRMRD::IsmrmrdHeader header;
  std::vector<ISMRMRD::Acquisition> acquisitions;
  ISMRMRD::Encoding& enc() { return header.encoding[0]; }
  IsmrmrdFile(unsigned short nx, unsigned short ny, ISMRMRD::Limit pe1) {
    header.version = ISMRMRD_XMLHDR_VERSION;
    ISMRMRD::Encoding e;
    e.encodedSpace.matrixSize = ISMRMRD::MatrixSize(nx, ny, 1);
    e.encodedSpace.fieldOfView_mm = {256, 256, 5};
    e.reconSpace = e.encodedSpace;
    e.encodingLimits.kspace_encoding_step_1 = pe1;
    e.trajectory = ISMRMRD::TrajectoryType::CARTESIAN;
    header.encoding.push_back(e);
  }
  std::string write(const std::string& path) {
    std::filesystem::remove(path);
    ISMRMRD::Dataset ds(path.c_str(), "dataset", true);
    std::ostringstream xml;
    ISMRMRD::serialize(header, xml);
    ds.writeHeader(xml.str());
    for (auto& a : acquisitions) ds.appendAcquisition(a);
    return path;
  }
};

}  // namespace larmor::testing
