#pragma once
// A raw-data file replayed as a scanner streams it (larmor-cli stream): the XML header, then every acquisition
// in the file's order. A BART .cfl or a Siemens twix .dat (and its trajectory) is first loaded as `larmor-cli
// recon` loads it and written as an ISMRMRD file (io::writeIsmrmrdSeries), whose acquisitions are then what is streamed.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "larmor/stream/protocol.hpp"

namespace larmor::stream {

/// The ISMRMRD file `path` (group "dataset"): header(xml), then acquisition(a) for each acquisition. The file
/// is first read the way `larmor-cli recon` reads it (the crash sandbox, every record checked), so a damaged
/// file is one Error before anything is sent. The acquisition header carries the fields Larmor's reader reads
/// (io/ismrmrd_records.hpp); the others are sent as zero.
void replayIsmrmrd(const std::string& path, const std::function<void(const std::string&)>& header,
                   const std::function<void(const Acquisition&)>& acquisition);

/// A whole scan in memory, ready to stream: what a client sends after its configuration.
struct RecordedScan {
  std::string header;                      ///< the XML header
  std::vector<Acquisition> acquisitions;   ///< in the file's order; acquisition_time_stamp set from the file
};

/// The scan of an ISMRMRD .h5 (replayIsmrmrd's acquisitions) or of a BART .cfl or twix .dat with `trajectory`
/// ("" for Cartesian k-space; a file or a spec such as radial:180, as recon --traj), loaded as recon loads it. Uses libhdf5 (not thread-safe): callers that load other ISMRMRD
/// files on other threads hold their lock. Error names the file.
RecordedScan recordScan(const std::string& path, const std::string& trajectory = "");

/// The acquisition_time_stamp of every acquisition of ISMRMRD file `path` (ticks of 2.5 ms, as scanners write
/// them; 0 where the file does not say).
std::vector<std::uint32_t> acquisitionTimeStamps(const std::string& path, const std::string& group = "dataset");

/// When each acquisition of `scan` is sent, in ms from the first, at the acquisition's own pace: from the time
/// stamps where they advance, else one acquisition per `trMs` (> 0). Error when neither says.
std::vector<double> acquisitionSchedule(const RecordedScan& scan, double trMs, const std::string& label);

}  // namespace larmor::stream
