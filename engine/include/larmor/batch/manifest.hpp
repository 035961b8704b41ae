#pragma once
// What a batch reconstructs: the items. Inputs are files, folders (every loadable file directly inside,
// sorted by name) and manifests (`@list.txt` or --manifest: one path per line, optionally followed by
// per-item settings in the command line's words, `scan.h5 --lambda 0.01 --method cg`; `#` starts a
// comment; relative paths are relative to the manifest's folder). Each item gets an output name (the
// file's stem; stems that occur more than once get a hash of the path and overrides appended), so every
// process of a batch (all Slurm shards) names the outputs alike.
#include <string>
#include <vector>

#include "larmor/recon/settings.hpp"

namespace larmor::batch {

struct Item {
  std::string input;                   ///< absolute, lexically normal path
  std::vector<std::string> overrides;  ///< "--lambda", "0.01", ...: settings flags of this item only
  std::string name;                    ///< output stem, unique in the batch
  std::string origin;                  ///< where it was listed ("list.txt:3", "argument 2"), for messages
};

/// True for the extensions loadDataset reads as k-space: .h5 .mrd .ismrmrd .cfl .ra .dat (.hdr is the
/// other half of a .cfl pair and not listed twice).
bool isLoadableInput(const std::string& path);

/// Splits a manifest line into words: blanks separate, '...' and "..." quote, `#` outside quotes ends
/// the line. Throws Error for an unterminated quote.
std::vector<std::string> splitWords(const std::string& line);

/// The items of one manifest file; throws Error("FILE:LINE: ...") for a malformed line and
/// Error("FILE: ...") when it cannot be read.
std::vector<Item> readManifest(const std::string& path);

/// Every item of `inputs` (files, folders, "@manifest") and `manifests`, in order, named (assignNames).
/// A path that does not exist is kept as an item: it fails alone when it is reconstructed. A folder
/// without loadable files is an Error.
std::vector<Item> collectItems(const std::vector<std::string>& inputs, const std::vector<std::string>& manifests = {});

/// Gives every item a unique output name (see the header comment).
void assignNames(std::vector<Item>& items);

/// `overrides` over `settings`: `--method` first (then its defaults, as on the command line), then the
/// other settings-table flags; `--traj PATH` sets `trajectory`. A flag that the method does not read is an
/// Error, as in `larmor-cli recon`. `where` prefixes the messages.
void applyOverrides(recon::ReconSettings& settings, std::string& trajectory, const std::vector<std::string>& overrides,
                    const std::string& where);

}  // namespace larmor::batch
