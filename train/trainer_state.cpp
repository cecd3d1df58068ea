// trainer_state.json <-> TrainerState (fields added later default when an older checkpoint lacks them).
#include "train/trainer_state.h"

#include <cmath>

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

void from_json(const nlohmann::json& j, TrainerState& s) {
  s.step = j.at("step").get<int64_t>();
  s.tokens_seen = j.value("tokens_seen", int64_t{0});
  s.elapsed_s = j.value("elapsed_s", 0.0);
  s.skipped_steps = j.value("skipped_steps", int64_t{0});
  s.loss_scale = j.value("loss_scale", 0.0);
  s.scale_growth_tracker = j.value("scale_growth_tracker", int64_t{0});
  s.best_val_loss = j.at("best_val_loss").is_null() ? std::numeric_limits<double>::infinity()
                                                    : j.at("best_val_loss").get<double>();
}

}  // namespace lmzoo
