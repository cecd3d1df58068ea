// A resume's stored run, its conflicts with the settings asked, and its request.
#include "train/run/resume_setup.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "train/checkpoint/checkpoint_swap.h"
#include "train/run/run_inputs.h"
#include "train/run/run_setup.h"

namespace lmzoo {

namespace {

// The paths of a TrainConfig, compared as the files they name.
const std::vector<std::string>& path_fields() {
  static const std::vector<std::string> fields = {"data_dir", "val_data", "out_dir", "init_checkpoint"};
  return fields;
}

std::string value_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The fields of ASKED that differ from STORED (JSON objects of one config type), SKIPPED left out.
std::vector<SettingConflict> changed_fields(const nlohmann::json& asked, const nlohmann::json& stored,
                                            const std::vector<std::string>& skipped) {
  std::vector<SettingConflict> found;
  for (const auto& item : asked.items()) {
    if (std::count(skipped.begin(), skipped.end(), item.key()) || !stored.contains(item.key())) continue;
    if (item.value() != stored.at(item.key())) {
      found.push_back({item.key(), value_text(item.value()), value_text(stored.at(item.key()))});
    }
  }
  return found;
}

// RUN's settings with the resumable ones of ASKED.
TrainConfig with_resumable_settings(const TrainConfig& run, const TrainConfig& asked) {
  nlohmann::json merged = run;
  const nlohmann::json changes = asked;
  for (const auto& field : resumable_settings()) merged[field] = changes.at(field);
  return train_config_from_json(merged);
}

}  // namespace

CheckpointInfo stored_run(const std::string& run_dir) {
  if (!std::filesystem::exists(run_dir + "/last")) {
    throw std::runtime_error(run_dir + " has no last/ checkpoint to resume from");
  }
  CheckpointInfo run = open_checkpoint(run_dir + "/last");
  run.train.out_dir = run_dir;
  // A run written before decay_steps existed decayed over the --steps it was started with.
  if (run.train.decay_steps == 0) run.train.decay_steps = run.train.steps;
  return run;
}

std::string stored_device(const std::string& run_dir) {
  const std::string stored = find_complete_checkpoint(run_dir, "last");
  if (stored.empty()) return TrainConfig().device;
  try {
    return open_checkpoint(stored).train.device;
  } catch (const std::exception&) {
    return TrainConfig().device;
  }
}

const std::vector<std::string>& resumable_settings() {
  static const std::vector<std::string> fields = [] {
    std::vector<std::string> out;
#define LMZOO_RESUMABLE_FIELD(type, name, default_value, flag, flag_kind, group, resumable, help) \
  if (resumable) out.push_back(#name);
    LMZOO_TRAIN_CONFIG_FIELDS(LMZOO_RESUMABLE_FIELD)
#undef LMZOO_RESUMABLE_FIELD
    return out;
  }();
  return fields;
}

std::vector<SettingConflict> model_conflicts(const ModelConfig& asked, const ModelConfig& stored) {
  return changed_fields(nlohmann::json(asked), nlohmann::json(stored), {});
}

std::vector<SettingConflict> train_conflicts(const TrainConfig& asked, const TrainConfig& stored) {
  std::vector<std::string> skipped = resumable_settings();
  skipped.insert(skipped.end(), path_fields().begin(), path_fields().end());
  const nlohmann::json asked_json = asked, stored_json = stored;
  std::vector<SettingConflict> found = changed_fields(asked_json, stored_json, skipped);
  for (const auto& field : path_fields()) {
    const std::string asked_path = asked_json.at(field), stored_path = stored_json.at(field);
    if (absolute_path(asked_path) != absolute_path(stored_path)) found.push_back({field, asked_path, stored_path});
  }
  return found;
}

TrainRequest resume_request(const CheckpointInfo& run, const TrainConfig& asked) {
  const std::string run_dir = run.train.out_dir;
  const std::vector<SettingConflict> conflicts = train_conflicts(asked, run.train);
  if (!conflicts.empty()) {
    std::string list;
    for (const auto& c : conflicts) list += (list.empty() ? "" : ", ") + c.field + " " + c.asked + " (the run's: " + c.stored + ")";
    std::string resumable;
    for (const auto& field : resumable_settings()) resumable += (resumable.empty() ? "" : ", ") + field;
    throw std::invalid_argument("resuming " + run_dir + ": settings differ from the run's: " + list +
                                "; a resume may change only " + resumable);
  }
  TrainRequest request;
  request.model = run.model;
  request.train = with_resumable_settings(run.train, asked);
  request.tokenizer_model = run.tokenizer_model;
  request.chat = run.chat;
  request.resume_dir = run.dir;
  if (run.state.step >= request.train.steps) {
    throw std::invalid_argument("the run is already at step " + std::to_string(run.state.step) + " of " +
                                std::to_string(request.train.steps) + " (pass a larger --steps to continue)");
  }
  if (request.train.objective != Objective::kClassify) {
    check_same_tokenizer(request.train.data_dir, Tokenizer::from_serialized(run.tokenizer_model), run_dir);
  }
  return request;
}

}  // namespace lmzoo
