// metrics.jsonl: one JSON object per line, appended and fsynced as each record is made; a record that cannot be
// written whole is not written at all.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/durable_io.h"

namespace lmzoo {

class MetricsLog {
 public:
  explicit MetricsLog(const std::string& path);
  // Throws one line naming the file and the cause when the write fails (e.g. the disk is full), leaving the file
  // as it was before the record.
  void append(const nlohmann::json& record);

 private:
  AppendFile file_;
};

// On resume: keeps the records up to and including `step` (and drops a line torn by a crash), so the
// steps in the file only go forward. Rewrites the file atomically; a missing file is left missing.
void truncate_metrics_after(const std::string& path, int64_t step);

}  // namespace lmzoo
