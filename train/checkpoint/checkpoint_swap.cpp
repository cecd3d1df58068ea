// Crash-proof checkpoint swap: completeness marker, hidden tmp/old siblings, read-only lookup and the
// recovery of leftovers. Concurrent writers of one run directory are excluded by the run's lock, not here.
#include "train/checkpoint/checkpoint_swap.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/durable_io.h"
#include "train/checkpoint/fault_points.h"

namespace lmzoo {

namespace fs = std::filesystem;

namespace {

fs::path hidden_sibling(const std::string& target, const std::string& suffix) {
  fs::path t(target);
  if (!t.has_filename() && t.has_parent_path()) t = t.parent_path();  // "run/last/"
  return t.parent_path() / ("." + t.filename().string() + "." + suffix);
}

std::optional<std::string> read_small_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<int64_t> parse_step(const std::string& text) {
  size_t end = text.find_last_not_of("\n ");
  if (text.empty() || end == std::string::npos) return std::nullopt;
  const std::string digits = text.substr(0, end + 1);
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  try {
    return std::stoll(digits);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The step in trainer_state.json of a directory without a marker (older lmzoo), when it and config.json exist.
std::optional<int64_t> legacy_step(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "config.json", ec)) return std::nullopt;
  const auto state = read_small_file(dir / "trainer_state.json");
  if (!state) return std::nullopt;
  const auto j = nlohmann::json::parse(*state, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) return std::nullopt;
  return j["step"].get<int64_t>();
}

struct Hidden {
  fs::path path;
  bool is_tmp = false;
};

// The .NAME.tmp-* and .NAME.old entries of dir.
std::vector<Hidden> hidden_siblings(const fs::path& dir, const std::string& name) {
  std::vector<Hidden> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    const bool is_old = file.size() > 4 && file.compare(file.size() - 4, 4, ".old") == 0;
    if (checkpoint_name_of_hidden(file) == name) found.push_back({it->path(), !is_old});
  }
  return found;
}

std::optional<int64_t> hidden_step(const Hidden& h) {
  return complete_checkpoint_step(h.path.string(), /*legacy_ok=*/!h.is_tmp);
}

// The complete hidden sibling with the highest step, or nullptr.
const Hidden* newest_complete(const std::vector<Hidden>& hidden) {
  const Hidden* best = nullptr;
  int64_t best_step = -1;
  for (const auto& h : hidden) {
    const auto step = hidden_step(h);
    if (step && *step > best_step) best = &h, best_step = *step;
  }
  return best;
}

void recover_checkpoint(const fs::path& run_dir, const std::string& name) {
  const fs::path target = run_dir / name;
  std::vector<Hidden> hidden = hidden_siblings(run_dir, name);
  bool target_complete = complete_checkpoint_step(target.string(), /*legacy_ok=*/true).has_value();
  std::error_code ec;
  if (!target_complete && !fs::exists(fs::symlink_status(target, ec))) {
    if (const Hidden* newest = newest_complete(hidden)) {
      rename_path(newest->path.string(), target.string());
      sync_directory(run_dir.string());
      hidden.erase(hidden.begin() + (newest - hidden.data()));
      target_complete = true;
    }
  }
  for (const auto& h : hidden) {
    if (target_complete || !hidden_step(h)) discard_checkpoint_dir(h.path.string());
  }
}

}  // namespace

std::string checkpoint_tmp_dir(const std::string& target) {
  return hidden_sibling(target, "tmp-" + std::to_string(::getpid())).string();
}

std::string checkpoint_old_dir(const std::string& target) { return hidden_sibling(target, "old").string(); }

void mark_checkpoint_complete(const std::string& dir, int64_t step) {
  write_file_durably((fs::path(dir) / kCompleteMarker).string(), std::to_string(step) + "\n");
  sync_directory(dir);
}

std::optional<int64_t> complete_checkpoint_step(const std::string& dir, bool legacy_ok) {
  const fs::path d(dir);
  std::error_code ec;
  if (!fs::is_directory(d, ec)) return std::nullopt;
  if (fs::exists(d / kCompleteMarker, ec)) {
    const auto text = read_small_file(d / kCompleteMarker);
    return text ? parse_step(*text) : std::nullopt;
  }
  return legacy_ok ? legacy_step(d) : std::nullopt;
}

void swap_in_checkpoint(const std::string& tmp, const std::string& target) {
  fault_point("marker-written");
  const std::string old = checkpoint_old_dir(target);
  const std::string parent = fs::path(old).parent_path().string();
  std::error_code ec;
  if (fs::exists(fs::symlink_status(old, ec))) discard_checkpoint_dir(old);  // a dead process's leftover
  const bool had_target = fs::exists(fs::symlink_status(target, ec));
  if (had_target) {
    rename_path(target, old);
    fault_point("old-moved");
  }
  try {
    rename_path(tmp, target);
  } catch (...) {
    if (had_target) ::rename(old.c_str(), target.c_str());
    throw;
  }
  fault_point("new-moved");
  sync_directory(parent.empty() ? "." : parent);
  if (had_target) {
    discard_checkpoint_dir(old);
    fault_point("old-removed");
  }
}

void discard_checkpoint_dir(const std::string& dir) {
  const fs::path d(dir);
  std::error_code ec;
  if (fs::is_directory(fs::symlink_status(d, ec))) {
    bool unlinked = false;
    for (const char* first : {kCompleteMarker, "trainer_state.json"}) {
      const fs::path file = d / first;
      if (::unlink(file.c_str()) == 0) unlinked = true;
      else if (errno != ENOENT) throw std::runtime_error("cannot remove " + file.string() + ": " + std::strerror(errno));
    }
    if (unlinked) sync_directory(dir);
  }
  remove_tree(dir);
}

std::string find_complete_checkpoint(const std::string& dir, const std::string& name) {
  const fs::path target = fs::path(dir) / name;
  if (complete_checkpoint_step(target.string(), /*legacy_ok=*/true)) return target.string();
  const auto hidden = hidden_siblings(dir, name);
  const Hidden* newest = newest_complete(hidden);
  return newest ? newest->path.string() : std::string();
}

std::string checkpoint_name_of_hidden(const std::string& filename) {
  if (filename.size() < 2 || filename[0] != '.') return "";
  const std::string rest = filename.substr(1);
  const std::string old_suffix = ".old";
  if (rest.size() > old_suffix.size() && rest.compare(rest.size() - old_suffix.size(), old_suffix.size(), old_suffix) == 0) {
    return rest.substr(0, rest.size() - old_suffix.size());
  }
  const size_t tmp = rest.rfind(".tmp-");
  if (tmp == std::string::npos || tmp == 0 || tmp + 5 == rest.size()) return "";
  for (size_t i = tmp + 5; i < rest.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(rest[i]))) return "";
  }
  return rest.substr(0, tmp);
}

void recover_run_dir(const std::string& run_dir) {
  for (const char* name : {"last", "best"}) recover_checkpoint(run_dir, name);
}

}  // namespace lmzoo
