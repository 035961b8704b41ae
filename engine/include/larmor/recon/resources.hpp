#pragma once
// The resource planner: before a reconstruction starts, estimate its peak host and
// device memory from the dataset's sizes and the settings, and refuse with one line naming the estimate
// and the memory available when it cannot fit, instead of growing until the kernel kills the process.
// The formula of each method is written beside its code in resources.cpp and in docs/reliability.md;
// measured peaks are in docs/reliability.md ("Memory: estimated and refused up front").
#include <cstdint>
#include <string>
#include <vector>

#include "larmor/backend/backend.hpp"
#include "larmor/data/dataset.hpp"
#include "larmor/recon/settings.hpp"

namespace larmor::recon {

struct MemoryEstimate {
  double datasetBytes = 0;  ///< the loaded Dataset (already resident when recon::run starts)
  double workBytes = 0;     ///< the reconstruction's own peak on the backend, beyond the dataset
  double resultBytes = 0;   ///< the downloaded images and the writer's copy of them (host)
  double untrackedBytes = 0;  ///< host memory beyond workBytes that no backend buffer holds (the CPU's Eigen temporaries)
  bool onDevice = false;    ///< workBytes live in GPU memory (else in host memory)
  std::string rule;         ///< "fft: ...", the terms that decided the peak, for messages and provenance
  std::string source;       ///< the dataset's file (Dataset::source), named in refusals
  /// Peak host memory of the reconstruction, dataset included.
  double hostBytes() const { return datasetBytes + resultBytes + (onDevice ? 0 : workBytes + untrackedBytes); }
  double deviceBytes() const { return onDevice ? workBytes : 0; }
};

/// The estimate for `s` on `d` with the working set on a GPU (`gpu`) or in host memory. `d` may hold only
/// its header (io::LoadOptions::beforeData): the k-space size then comes from the header (a lower bound
/// for non-Cartesian data, whose sample count the header does not give).
MemoryEstimate estimateMemory(const Dataset& d, const ReconSettings& s, bool gpu);
/// The same for the backend `dev` describes: GRAPPA's batch follows its memory (grappa::batchPlan).
MemoryEstimate estimateMemory(const Dataset& d, const ReconSettings& s, const DeviceInfo& dev);

/// The joint reconstruction of a series' frames (recon/dynamic.hpp) on the backend `dev` describes: every frame's
/// problem kept (its samples, E^H d, x, Jacobi diagonal and Toeplitz kernel), one frame's transient work, the coil
/// maps once, FISTA's five series-sized vectors and the TV dual (three), and the merged copy of the samples.
MemoryEstimate estimateDynamicMemory(const std::vector<Dataset>& frames, const ReconSettings& s, const DeviceInfo& dev);
/// The same, checked (checkMemory) before any work: refused with one line when it cannot fit.
MemoryEstimate planDynamicMemory(const std::vector<Dataset>& frames, const ReconSettings& s, const DeviceInfo& dev);

/// Extra memory of an FFT of an array of X bytes, as a fraction of X: the CPU FFT's shift temporary (1),
/// cuFFT's work area on a GPU (1/2, measured; resources.cpp).
double fftTransientFactor(bool gpu);

/// Host memory the process can still take: /proc/meminfo MemAvailable, or LARMOR_MEMORY_LIMIT (bytes,
/// for tests and for a user who wants a cap) when that is set and smaller; 0 when unknown.
std::uint64_t availableHostBytes();
/// This process's resident set now (VmRSS) and its peak so far (VmHWM), in bytes; 0 when unknown.
std::uint64_t residentBytes();
std::uint64_t peakResidentBytes();

/// "34.6 GB", "512 MB": sizes in messages.
std::string bytesText(double bytes);

/// For the readers, before they allocate what a header implies: throws Error("FILE: WHAT needs X of memory,
/// Y available (MemAvailable or LARMOR_MEMORY_LIMIT)") when `bytes` more than fits in availableHostBytes().
void requireHostMemory(double bytes, const std::string& file, const std::string& what);

/// Throws Error("recon: ... needs about X of host memory ..., Y available ...") when the estimate does not
/// fit (`datasetLoaded`: the dataset is resident already, else still to be read): the host part against availableHostBytes() (less what is resident already: the dataset is), the
/// device part against dev.memoryBytes. The message names the estimate, the memory available, and a
/// lower-memory path where one exists.
void checkMemory(const MemoryEstimate& e, const DeviceInfo& dev, bool datasetLoaded = true);

/// The estimate for `dev`, checked (checkMemory). With `autoDevice` (--device auto) a GPU whose memory
/// is too small gives way to the host when the host has the room: `cpuInstead` is then set and the
/// returned estimate is the host's.
MemoryEstimate planMemory(const Dataset& d, const ReconSettings& s, const DeviceInfo& dev, bool autoDevice,
                          bool datasetLoaded, bool* cpuInstead = nullptr);

}  // namespace larmor::recon
