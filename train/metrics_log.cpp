// metrics.jsonl writer.
#include "train/metrics_log.h"

#include <stdexcept>

namespace lmzoo {

MetricsLog::MetricsLog(const std::string& path) : out_(path, std::ios::app) {
  if (!out_) throw std::runtime_error("cannot open " + path + " for writing");
}

void MetricsLog::append(const nlohmann::json& record) {
  out_ << record.dump() << "\n";
  out_.flush();
}

}  // namespace lmzoo
