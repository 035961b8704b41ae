#pragma once
// A raw-data file replayed as a scanner streams it (larmor-cli stream): the XML header, then every acquisition
// in the file's order.
#include <functional>
#include <string>

#include "larmor/stream/protocol.hpp"

namespace larmor::stream {

/// The ISMRMRD file `path` (group "dataset"): header(xml), then acquisition(a) for each acquisition. The file
/// is first read the way `larmor-cli recon` reads it (the crash sandbox, every record checked), so a damaged
/// file is one Error before anything is sent. The acquisition header carries the fields Larmor's reader reads
/// (io/ismrmrd_records.hpp); the others are sent as zero.
void replayIsmrmrd(const std::string& path, const std::function<void(const std::string&)>& header,
                   const std::function<void(const Acquisition&)>& acquisition);

}  // namespace larmor::stream
