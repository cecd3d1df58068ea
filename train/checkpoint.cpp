// Checkpoint directories: atomic write (temp dir + rename), strict read with clear errors.
#include "train/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace lmzoo {

namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary);
  out << data;
  out.flush();
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("checkpoint is incomplete: cannot read " + path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json read_json(const fs::path& path) {
  try {
    return nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error("checkpoint file " + path.string() + " is not valid JSON");
  }
}

}  // namespace

void save_checkpoint(const std::string& dir, const std::shared_ptr<torch::nn::Module>& model,
                     torch::optim::Optimizer* optimizer, const CheckpointInfo& info) {
  const fs::path target(dir);
  const fs::path tmp = target.parent_path() / ("." + target.filename().string() + ".tmp-" + std::to_string(getpid()));
  const fs::path old = target.parent_path() / ("." + target.filename().string() + ".old");
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  nlohmann::json config = {{"format_version", kCheckpointFormatVersion}, {"model", info.model}, {"train", info.train}};
  write_file(tmp / "config.json", config.dump(2) + "\n");
  write_file(tmp / "tokenizer.model", info.tokenizer_model);
  torch::save(model, (tmp / "model.pt").string());
  if (optimizer) torch::save(*optimizer, (tmp / "optimizer.pt").string());
  torch::save(at::detail::getDefaultCPUGenerator().get_state(), (tmp / "rng.pt").string());
  write_file(tmp / "trainer_state.json", nlohmann::json(info.state).dump(2) + "\n");  // written last
  sync();
  fs::remove_all(old);
  if (fs::exists(target)) fs::rename(target, old);
  fs::rename(tmp, target);
  fs::remove_all(old);
}

std::string resolve_checkpoint_dir(const std::string& path) {
  const fs::path p(path);
  if (!fs::exists(p)) throw std::runtime_error("checkpoint " + path + " does not exist");
  if (fs::exists(p / "config.json")) return p.string();
  for (const char* sub : {"best", "last", ".best.old", ".last.old"}) {
    if (fs::exists(p / sub / "trainer_state.json")) return (p / sub).string();
  }
  throw std::runtime_error(path + " is not a checkpoint or run directory (no config.json, best/ or last/)");
}

CheckpointInfo read_checkpoint(const std::string& path) {
  CheckpointInfo info;
  info.dir = resolve_checkpoint_dir(path);
  const fs::path dir(info.dir);
  auto config = read_json(dir / "config.json");
  if (config.value("format_version", 0) > kCheckpointFormatVersion) {
    throw std::runtime_error("checkpoint " + info.dir + " was written by a newer lmzoo (format_version " +
                             std::to_string(config.value("format_version", 0)) + ")");
  }
  if (!config.contains("model")) throw std::runtime_error("checkpoint " + info.dir + " has no model config");
  info.model = model_config_from_json(config.at("model"));
  info.model.validate();
  if (config.contains("train")) info.train = config.at("train").get<TrainConfig>();
  info.state = read_json(dir / "trainer_state.json").get<TrainerState>();
  info.tokenizer_model = read_file(dir / "tokenizer.model");
  return info;
}

void load_weights(const CheckpointInfo& info, const std::shared_ptr<torch::nn::Module>& module) {
  try {
    torch::load(module, (fs::path(info.dir) / "model.pt").string());
  } catch (const c10::Error& e) {
    throw std::runtime_error("cannot load weights from " + info.dir + "/model.pt (corrupt or from another model)");
  }
}

AnyModel load_model(const CheckpointInfo& info, const torch::Device& device) {
  AnyModel model = build_model(info.model);
  load_weights(info, model.module());
  model.module()->to(device);
  return model;
}

void init_from_checkpoint(AnyModel& model, const CheckpointInfo& pretrained) {
  ModelConfig wanted = model.config(), have = pretrained.model;
  const bool into_encoder = model.classifier && have.labels.empty();
  wanted.labels.clear();
  have.labels.clear();
  if (nlohmann::json(wanted) != nlohmann::json(have)) {
    throw std::runtime_error("the model to train does not have the shape of the --init checkpoint " +
                             pretrained.dir + " (train with that checkpoint's model config)");
  }
  load_weights(pretrained, into_encoder ? model.classifier->bert.ptr() : model.module());
}

void load_optimizer_state(const CheckpointInfo& info, torch::optim::Optimizer& optimizer) {
  const auto path = fs::path(info.dir) / "optimizer.pt";
  if (!fs::exists(path)) throw std::runtime_error("checkpoint " + info.dir + " has no optimizer state to resume from");
  try {
    torch::load(optimizer, path.string());
  } catch (const c10::Error& e) {
    throw std::runtime_error("cannot load optimizer state from " + path.string() + " (corrupt)");
  }
  // torch::load puts the moments on the CPU; they belong on the parameters' device.
  const auto& groups = optimizer.param_groups();
  if (groups.empty() || groups[0].params().empty()) return;
  const auto device = groups[0].params()[0].device();
  for (auto& item : optimizer.state()) {
    auto& s = static_cast<torch::optim::AdamWParamState&>(*item.second);
    s.exp_avg(s.exp_avg().to(device));
    s.exp_avg_sq(s.exp_avg_sq().to(device));
    if (s.max_exp_avg_sq().defined()) s.max_exp_avg_sq(s.max_exp_avg_sq().to(device));
  }
}

void restore_rng_state(const CheckpointInfo& info) {
  const auto path = fs::path(info.dir) / "rng.pt";
  if (!fs::exists(path)) return;
  torch::Tensor state;
  torch::load(state, path.string());
  auto generator = at::detail::getDefaultCPUGenerator();  // a handle sharing the global state
  generator.set_state(state);
}

}  // namespace lmzoo
