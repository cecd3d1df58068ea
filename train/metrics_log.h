// metrics.jsonl: one JSON object per line, appended and flushed as each record is made.
#pragma once
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace lmzoo {

class MetricsLog {
 public:
  explicit MetricsLog(const std::string& path);
  void append(const nlohmann::json& record);

 private:
  std::ofstream out_;
};

}  // namespace lmzoo
