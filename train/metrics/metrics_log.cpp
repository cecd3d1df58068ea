// metrics.jsonl writer (base/durable_io.h's AppendFile), and its cut back to a resumed step.
#include "train/metrics/metrics_log.h"

#include <fstream>

namespace lmzoo {

MetricsLog::MetricsLog(const std::string& path) : file_(path) {}

void MetricsLog::append(const nlohmann::json& record) { file_.append(record.dump() + "\n"); }

void truncate_metrics_after(const std::string& path, int64_t step) {
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  while (std::getline(in, line)) {
    const auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_object() && record.value("step", int64_t{-1}) >= 0 && record.value("step", int64_t{-1}) <= step) {
      kept += line + "\n";
    }
  }
  in.close();
  replace_file_durably(path, kept);
}

}  // namespace lmzoo
