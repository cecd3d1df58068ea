// trainer_state.json <-> TrainerState (fields added later default when an older checkpoint lacks them).
#include "train/trainer_state.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace lmzoo {

void to_json(nlohmann::json& j, const TrainerState& s) {
  j = {{"step", s.step},
       {"tokens_seen", s.tokens_seen},
       {"elapsed_s", s.elapsed_s},
       {"skipped_steps", s.skipped_steps},
       {"loss_scale", s.loss_scale},
       {"scale_growth_tracker", s.scale_growth_tracker}};
  j["best_val_loss"] = std::isfinite(s.best_val_loss) ? nlohmann::json(s.best_val_loss) : nlohmann::json(nullptr);
}

namespace {

// The integer field NAME, in [0, at_most] (absent: 0 when OPTIONAL); throws a one-line std::runtime_error.
int64_t counter(const nlohmann::json& j, const char* name, bool optional, int64_t at_most = kMaxTrainerCount) {
  if (!j.contains(name) && optional) return 0;
  const nlohmann::json& v = j.at(name);
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(at_most)) ||
      v.get<int64_t>() < 0 || v.get<int64_t>() > at_most) {
    throw std::runtime_error(std::string("trainer_state.json: ") + name + " must be an integer between 0 and " +
                             std::to_string(at_most) + ", got " + v.dump());
  }
  return v.get<int64_t>();
}

// The number field NAME, finite and >= 0 (absent: 0).
double non_negative(const nlohmann::json& j, const char* name) {
  if (!j.contains(name)) return 0.0;
  const nlohmann::json& v = j.at(name);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
    throw std::runtime_error(std::string("trainer_state.json: ") + name + " must be a finite number >= 0, got " +
                             v.dump());
  }
  return v.get<double>();
}

}  // namespace

void from_json(const nlohmann::json& j, TrainerState& s) {
  if (!j.is_object()) throw std::runtime_error("trainer_state.json is not a JSON object");
  s.step = counter(j, "step", /*optional=*/false);
  s.tokens_seen = counter(j, "tokens_seen", true, std::numeric_limits<int64_t>::max());
  s.elapsed_s = non_negative(j, "elapsed_s");
  s.skipped_steps = counter(j, "skipped_steps", true, s.step);
  s.loss_scale = non_negative(j, "loss_scale");
  s.scale_growth_tracker = counter(j, "scale_growth_tracker", true, s.step);
  const nlohmann::json& best = j.at("best_val_loss");
  if (!best.is_null() && (!best.is_number() || !std::isfinite(best.get<double>()))) {
    throw std::runtime_error("trainer_state.json: best_val_loss must be a finite number or null, got " + best.dump());
  }
  s.best_val_loss = best.is_null() ? std::numeric_limits<double>::infinity() : best.get<double>();
}

}  // namespace lmzoo
