// The items of a batch (larmor/batch/manifest.hpp): files, folders and manifests; per-item settings
// through the settings table, with the same rules as `larmor-cli recon`'s flags.
#include "larmor/batch/manifest.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "larmor/batch/journal.hpp"
#include "larmor/recon/settings_table.hpp"
#include "larmor/util/error.hpp"

namespace larmor::batch {
namespace fs = std::filesystem;
namespace st = recon::settings;

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string absolutePath(const fs::path& p) {
  std::error_code ec;
  fs::path a = fs::absolute(p, ec);
  return (ec ? p : a).lexically_normal().string();
}

void addPath(std::vector<Item>& items, const fs::path& path, std::vector<std::string> overrides,
             const std::string& origin) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    require(overrides.empty(), origin + ": " + path.string() + " is a folder; per-item settings apply to one file");
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.is_regular_file() && isLoadableInput(e.path().string())) files.push_back(e.path());
    require(!ec, origin + ": " + path.string() + ": cannot list the folder (" + ec.message() + ")");
    require(!files.empty(), origin + ": " + path.string() + ": no loadable file (.h5 .mrd .ismrmrd .cfl .ra .dat) in the folder");
    std::sort(files.begin(), files.end());
    for (const auto& f : files) items.push_back({absolutePath(f), {}, {}, origin});
    return;
  }
  items.push_back({absolutePath(path), std::move(overrides), {}, origin});
}

}  // namespace

namespace {

struct Given {
  const st::Setting* setting;
  std::string value;
};

std::vector<Given> parseOverrides(const std::vector<std::string>& words, const std::string& where, std::string& trajectory) {
  std::vector<Given> given;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    require(w.size() > 2 && w.rfind("--", 0) == 0, where + ": " + w + ": expected a setting flag such as --lambda");
    std::string flag = w.substr(2), value;
    bool hasValue = false;
    if (const auto eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1), flag = flag.substr(0, eq), hasValue = true;
    }
    if (flag == "traj") {
      if (!hasValue) {
        require(i + 1 < words.size(), where + ": --traj needs a path");
        value = words[++i];
      }
      trajectory = value;
      continue;
    }
    const st::Setting* s = nullptr;
    for (const auto& e : st::table())
      if (e.scope == st::Scope::User && e.flag == flag) s = &e;
    require(s != nullptr, where + ": --" + flag + ": not a reconstruction setting (see larmor-cli recon --help)");
    if (s->kind != st::Kind::Flag && !hasValue) {
      require(i + 1 < words.size(), where + ": --" + flag + " needs a value");
      value = words[++i];
    }
    if (s->kind != st::Kind::Flag) {
      try {
        (void)st::parse(*s, value);
      } catch (const Error& e) {
        throw Error(where + ": " + e.what());
      }
    }
    given.push_back({s, value});
  }
  return given;
}

}  // namespace

bool isLoadableInput(const std::string& path) {
  const std::string e = lower(fs::path(path).extension().string());
  return e == ".h5" || e == ".mrd" || e == ".ismrmrd" || e == ".cfl" || e == ".ra" || e == ".dat";
}

std::vector<std::string> splitWords(const std::string& line) {
  std::vector<std::string> words;
  std::string cur;
  bool inWord = false;
  char quote = 0;
  for (char c : line) {
    if (quote) {
      if (c == quote) quote = 0;
      else cur += c;
      continue;
    }
    if (c == '#') break;
    if (c == '\'' || c == '"') {
      quote = c;
      inWord = true;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      if (inWord) words.push_back(cur), cur.clear(), inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  require(quote == 0, std::string("unterminated ") + quote + " quote");
  if (inWord) words.push_back(cur);
  return words;
}

std::vector<Item> readManifest(const std::string& path) {
  std::ifstream in(path);
  require(static_cast<bool>(in), path + ": cannot read the manifest");
  const fs::path base = fs::path(absolutePath(path)).parent_path();
  std::vector<Item> items;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string where = path + ":" + std::to_string(n);
    std::vector<std::string> words;
    try {
      words = splitWords(line);
    } catch (const Error& e) {
      throw Error(where + ": " + e.what());
    }
    if (words.empty()) continue;
    const std::string file = words.front();
    require(file.rfind("--", 0) != 0, where + ": the line starts with the option " + file + "; expected a path first");
    std::vector<std::string> overrides(words.begin() + 1, words.end());
    // A trajectory file named relative to the manifest, like the input.
    for (std::size_t k = 0; k + 1 < overrides.size(); ++k)
      if (overrides[k] == "--traj" && fs::path(overrides[k + 1]).is_relative() && fs::exists(base / overrides[k + 1]))
        overrides[k + 1] = (base / overrides[k + 1]).lexically_normal().string();
    // Check the overrides' words now (a typo fails the whole batch before any work, naming the line);
    // whether they apply to the method is known once the settings file is read.
    std::string traj;
    (void)parseOverrides(overrides, where, traj);
    fs::path p(file);
    if (p.is_relative()) p = base / p;
    addPath(items, p, std::move(overrides), where);
  }
  require(!in.bad(), path + ": read error");
  return items;
}

std::vector<Item> collectItems(const std::vector<std::string>& inputs, const std::vector<std::string>& manifests) {
  std::vector<Item> items;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string& in = inputs[i];
    if (!in.empty() && in[0] == '@') {
      auto m = readManifest(in.substr(1));
      items.insert(items.end(), m.begin(), m.end());
    } else {
      addPath(items, in, {}, "argument " + std::to_string(i + 1));
    }
  }
  for (const auto& m : manifests) {
    auto list = readManifest(m);
    items.insert(items.end(), list.begin(), list.end());
  }
  require(!items.empty(), "batch: no inputs (give files, folders, @list.txt or --manifest)");
  // The same input with the same settings listed twice (a folder and a manifest) is one item: two would
  // write the same outputs.
  std::set<std::pair<std::string, std::vector<std::string>>> seen;
  std::vector<Item> unique;
  for (auto& it : items)
    if (seen.insert({it.input, it.overrides}).second) unique.push_back(std::move(it));
  items = std::move(unique);
  assignNames(items);
  return items;
}

void assignNames(std::vector<Item>& items) {
  auto stem = [](const std::string& path) {
    std::string s = fs::path(path).stem().string();
    return s.empty() ? std::string("item") : s;
  };
  std::map<std::string, int> count;
  for (const auto& it : items) count[stem(it.input)]++;
  for (auto& it : items) {
    it.name = stem(it.input);
    // Names of the batch's own files in the output folder are taken (contact-sheet.png, summary.json, ...).
    static const std::set<std::string> reserved = {"contact-sheet", "summary", "journal", "batch-plan",
                                                   "manifest", "settings", "larmor-batch", "slurm-logs"};
    if (count[it.name] > 1 || reserved.count(it.name) > 0) {
      std::string key = it.input;
      for (const auto& o : it.overrides) {
        key.push_back('\0');
        key += o;
      }
      it.name += '-';
      it.name += hex64(fnv1a(key)).substr(0, 8);
    }
  }
}

void applyOverrides(recon::ReconSettings& settings, std::string& trajectory, const std::vector<std::string>& words,
                    const std::string& where) {
  const std::vector<Given> given = parseOverrides(words, where, trajectory);
  try {
    for (const auto& g : given)
      if (g.setting->key == "method") {
        st::set(settings, *g.setting, g.value);
        st::applyMethodDefaults(settings);
      }
    for (const auto& g : given) {
      if (g.setting->key == "method") continue;
      if (g.setting->kind == st::Kind::Flag) g.setting->put(settings, g.setting->flagSets);
      else st::set(settings, *g.setting, g.value);
    }
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
  for (const auto& g : given)
    require((g.setting->methods & st::bit(settings.method)) != 0,
            where + ": --" + g.setting->flag + ": does not apply to --method " + recon::toString(settings.method));
}

}  // namespace larmor::batch
