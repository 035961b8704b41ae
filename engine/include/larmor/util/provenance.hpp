#pragma once
// Provenance JSON: what produced an image (settings, version, device, timings, input), written by
// --json, stored with exported images; and the form an anonymized export stores (no dates, hosts, paths).
#include <string>

#include <nlohmann/json.hpp>

#include "larmor/util/timer.hpp"

namespace larmor {

std::string versionString();  ///< "0.1.0"
/// ISO 8601 UTC time now, e.g. "2026-11-22T14:03:00Z".
std::string utcNow();
nlohmann::json toJson(const Timings& t);
nlohmann::json provenance(const nlohmann::json& settings, const std::string& device, const std::string& deviceName,
                          const Timings& timings, const std::string& input);

/// The provenance as an anonymized export carries it (docs/reliability.md, "What exported files contain"):
/// no date (`created_utc` goes) and no host, path or file name of the user's, at any depth. The string
/// values of path keys (input, output, host, reference, coil_maps, cache_directory, and keys ending in
/// path, file, dir, directory or folder) become "removed (anonymized)" unless empty or a keyword (espirit,
/// walsh, dataset, estimate, none, "none (one coil)", auto, default); every other string goes through withoutPaths, and one
/// that is nothing but a path becomes "removed (anonymized)" too. Numbers, booleans and keys are kept.
nlohmann::json anonymizedProvenance(nlohmann::json provenance);

/// `text` with every word that looks like a path (holds '/' or '\\') or a file name (NAME.ext, ext 1-8
/// letters, digits or '_', starting with a letter) replaced by "<path removed>"; brackets, quotes and
/// trailing punctuation around a word stay. Errs towards removing: "e.g." goes too.
std::string withoutPaths(const std::string& text);

/// Whether `word` (no white space) looks like a path or a file name in withoutPaths' sense.
bool looksLikePath(const std::string& word);

}  // namespace larmor
