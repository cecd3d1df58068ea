// Checkpoint directories: durable write (fsynced files, marker last, crash-proof swap), strict read with
// clear errors (weights checked against the config both ways, tokenizer against vocab_size).
#include "train/checkpoint/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "base/durable_io.h"
#include "data/tokenizers/tokenizer.h"
#include "models/torch_compat.h"
#include "train/checkpoint/fault_points.h"
#include "train/interchange/weights_check.h"
#include "train/peft/lora_setup.h"

namespace lmzoo {

namespace fs = std::filesystem;

namespace {

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

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// Serializes a torch object straight into a durable file: no second copy of the weights in memory, and
// torch's writer never sees a failed write (the sink keeps the errno for finish() to report).
template <typename T>
void save_torch(const T& value, const fs::path& path) {
  DurableFile file(path.string());
  const std::function<size_t(const void*, size_t)> sink = [&file](const void* data, size_t n) {
    return file.write(data, n);
  };
  try {
    torch::save(value, sink);
  } catch (const c10::Error& e) {
    throw std::runtime_error("cannot write " + path.string() + ": " + first_line(e.what_without_backtrace()));
  }
  file.finish();
}

// The files a serialized tokenizer is stored as: a SentencePiece proto as tokenizer.model (unparsed, as ever),
// another kind as its own files.
TokenizerFiles tokenizer_files(const std::string& serialized) {
  if (serialized.empty() || serialized[0] != '{') return {{"tokenizer.model", serialized}};
  return Tokenizer::from_serialized(serialized).files();
}

// The serialized tokenizer of checkpoint DIR: the Hugging Face files it holds (tokenizer.json first, as
// Tokenizer::load reads a directory), else tokenizer.model as it is.
std::string read_tokenizer(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / "tokenizer.json", ec)) return Tokenizer::load(dir.string()).serialized();
  for (const char* name : {"spiece.model", "vocab.json", "encoder.json", "vocab.txt"}) {
    if (!fs::exists(dir / "tokenizer.model", ec) && fs::exists(dir / name, ec)) {
      return Tokenizer::load(dir.string()).serialized();
    }
  }
  return read_file(dir / "tokenizer.model");
}

// Writes every file of the checkpoint into the fresh directory tmp; the marker last.
void write_checkpoint_files(const fs::path& tmp, const std::shared_ptr<torch::nn::Module>& model,
                            torch::optim::Optimizer* optimizer, const CheckpointInfo& info) {
  nlohmann::json config = {{"format_version", kCheckpointFormatVersion}, {"model", info.model}, {"train", info.train}};
  write_file_durably((tmp / "config.json").string(), config.dump(2) + "\n");
  for (const auto& [name, bytes] : tokenizer_files(info.tokenizer_model)) {
    write_file_durably((tmp / name).string(), bytes);
  }
  write_chat_settings(tmp.string(), info.chat);
  if (is_lora_run(info.train)) {
    save_trainable_tensors((tmp / kAdapterFile).string(), *model);  // the base stays where init_checkpoint says
  } else {
    save_torch(model, tmp / "model.pt");
  }
  if (optimizer) save_torch(*optimizer, tmp / "optimizer.pt");
  save_torch(at::detail::getDefaultCPUGenerator().get_state(), tmp / "rng.pt");
  write_file_durably((tmp / "trainer_state.json").string(), nlohmann::json(info.state).dump(2) + "\n");
  fault_point("files-written");
  mark_checkpoint_complete(tmp.string(), info.state.step);
}

// Cleanup after a failure: the error being reported matters more than one from the cleanup.
void discard_quietly(const std::string& dir) noexcept {
  try {
    discard_checkpoint_dir(dir);
  } catch (...) {
    remove_tree_quietly(dir);
  }
}

// Throws when the serialized tokenizer's vocabulary differs from the config's vocab_size. A tokenizer
// that does not parse is left to the code that uses it, which reports it in its own words.
void check_tokenizer_vocab(const CheckpointInfo& info) {
  int64_t pieces = 0;
  std::string files;
  try {
    const Tokenizer tokenizer = Tokenizer::from_serialized(info.tokenizer_model);
    pieces = tokenizer.vocab_size();
    for (const auto& name : tokenizer.file_names()) files += (files.empty() ? "" : " + ") + name;
  } catch (const std::runtime_error&) {
    return;
  }
  if (info.model.vocab_size != 0 && pieces != info.model.vocab_size) {
    throw std::runtime_error("checkpoint " + info.dir + " does not match its config.json: " + files + " has " +
                             std::to_string(pieces) + " pieces, config.json's vocab_size is " +
                             std::to_string(info.model.vocab_size));
  }
}

}  // namespace

void save_checkpoint(const std::string& dir, const std::shared_ptr<torch::nn::Module>& model,
                     torch::optim::Optimizer* optimizer, const CheckpointInfo& info) {
  fs::path target(dir);
  if (!target.has_filename() && target.has_parent_path()) target = target.parent_path();  // "run/last/"
  const std::string tmp = checkpoint_tmp_dir(target.string());
  if (target.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) throw std::runtime_error("cannot create " + target.parent_path().string() + ": " + ec.message());
  }
  try {
    remove_tree(tmp);  // left by an earlier process that had this pid
    make_directory(tmp);
    write_checkpoint_files(tmp, model, optimizer, info);
    swap_in_checkpoint(tmp, target.string());
  } catch (...) {
    discard_quietly(tmp);
    throw;
  }
}

std::string resolve_checkpoint_dir(const std::string& path) {
  fs::path p(path);
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();  // "run/last/"
  if (complete_checkpoint_step(p.string(), /*legacy_ok=*/true)) return p.string();
  std::error_code ec;
  const bool has_config = fs::exists(p / "config.json", ec);
  if (!has_config && fs::is_directory(p, ec)) {  // a run directory
    for (const char* name : {"best", "last"}) {
      const std::string found = find_complete_checkpoint(p.string(), name);
      if (!found.empty()) return found;
    }
  }
  // RUN/last missing or incomplete (a swap in progress, or a dead process's), or a hidden sibling that
  // has moved since: the complete checkpoint of that name.
  std::string name = p.filename().string();
  if (const std::string of_hidden = checkpoint_name_of_hidden(name); !of_hidden.empty()) name = of_hidden;
  if (!name.empty() && name != "." && name != "..") {
    const std::string found = find_complete_checkpoint(p.has_parent_path() ? p.parent_path().string() : ".", name);
    if (!found.empty()) return found;
  }
  if (has_config) return p.string();  // incomplete: read_checkpoint names the missing file
  if (!fs::exists(p, ec)) throw std::runtime_error("checkpoint " + path + " does not exist");
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
  if (config.contains("train")) {
    info.train = train_config_from_json(config.at("train"));
    info.train.validate();
  }
  const nlohmann::json state = read_json(dir / "trainer_state.json");
  try {
    info.state = state.get<TrainerState>();
  } catch (const std::exception& e) {  // a field missing, of the wrong type or out of its range
    throw std::runtime_error("checkpoint " + info.dir + " is damaged: " + e.what());
  }
  info.tokenizer_model = read_tokenizer(dir);
  check_tokenizer_vocab(info);
  info.chat = read_chat_settings(dir.string());
  return info;
}

namespace {

// Drops the values of MODULE's parameters, keeping their shapes, dtypes and devices (one element broadcast to each
// shape), so that reading a checkpoint's copy of them never holds two copies of the weights at once.
void release_parameter_values(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& p : module.parameters()) p.set_data(torch::zeros({1}, p.options()).expand(p.sizes()));
}

}  // namespace

void load_weights(const CheckpointInfo& info, const std::shared_ptr<torch::nn::Module>& module) {
  if (is_lora_run(info.train)) {
    throw std::runtime_error("checkpoint " + info.dir + " holds LoRA adapters, not a whole model: fold them into " +
                             "its base first (lmzoo merge-lora " + info.dir + " --out DIR)");
  }
  const fs::path path = fs::path(info.dir) / "model.pt";
  if (!fs::exists(path)) throw std::runtime_error("checkpoint is incomplete: cannot read " + path.string());
  std::string mismatch;
  try {
    release_parameter_values(*module);  // the module's own values are replaced (a failed load leaves it unusable)
    torch::serialize::InputArchive archive;
    archive.load_from(path.string());
    mismatch = weight_mismatches(archive, *module);
    if (mismatch.empty()) module->load(archive);
  } catch (const c10::Error& e) {
    throw std::runtime_error("cannot load weights from " + path.string() + " (corrupt or from another model)");
  }
  if (!mismatch.empty()) throw std::runtime_error("checkpoint " + info.dir + " does not match its config.json: " + mismatch);
}

CheckpointInfo read_lora_base(const CheckpointInfo& adapters, const std::string& base_path) {
  const std::string base = base_path.empty() ? adapters.train.init_checkpoint : base_path;
  CheckpointInfo base_info;
  try {
    base_info = read_checkpoint(base);
  } catch (const std::exception& e) {
    throw std::runtime_error("the base of LoRA checkpoint " + adapters.dir + " cannot be read: " + e.what());
  }
  const std::string digest = weights_digest(base_info.dir);
  if (digest != adapters.train.lora_base_digest) {
    throw LoraBaseMismatch("the LoRA checkpoint " + adapters.dir + " was trained on other weights than " +
                           base_info.dir + " holds (digest " + digest + ", the adapters': " +
                           adapters.train.lora_base_digest + ")");
  }
  return base_info;
}

AnyModel load_model(const CheckpointInfo& info, const torch::Device& device, const std::string& base_path) {
  AnyModel model = build_model(info.model);
  if (is_lora_run(info.train)) {
    init_from_checkpoint(model, read_lora_base(info, base_path));
    attach_lora(*model.module(), lora_settings(info.train));
    load_trainable_tensors((fs::path(info.dir) / kAdapterFile).string(), *model.module());
  } else {
    load_weights(info, model.module());
  }
  model.module()->to(device);
  return model;
}

void init_from_checkpoint(AnyModel& model, const CheckpointInfo& pretrained) {
  ModelConfig wanted = model.config(), have = pretrained.model;
  const bool into_encoder = model.is<BertClassifier>() && have.labels.empty();
  wanted.labels.clear();
  have.labels.clear();
  wanted.dropout = have.dropout;  // fine-tuning may change the dropout rate (--dropout): no tensor depends on it
  if (nlohmann::json(wanted) != nlohmann::json(have)) {
    throw std::runtime_error("the model to train does not have the shape of the --init checkpoint " +
                             pretrained.dir + " (train with that checkpoint's model config)");
  }
  load_weights(pretrained, into_encoder ? model.as<BertClassifier>()->bert.ptr() : model.module());
}

namespace {

// "checkpoint DIR: FILE is damaged (WHY); --resume cannot continue from it".
std::runtime_error damaged_part(const CheckpointInfo& info, const char* file, const std::string& why) {
  return std::runtime_error("checkpoint " + info.dir + ": " + file + " is damaged (" + why +
                            "); --resume cannot continue from it");
}

// The first line of a LibTorch error, without its source location.
std::string torch_reason(const c10::Error& e) {
  const std::string what = e.what_without_backtrace();
  return what.substr(0, what.find('\n'));
}

// Each parameter that has AdamW moments must have them in its own shape.
void require_moment_shapes(const CheckpointInfo& info, torch::optim::Optimizer& optimizer) {
  using StateKey = std::remove_reference_t<decltype(optimizer.state())>::key_type;
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) {
      const auto it = optimizer.state().find(compat::optimizer_state_key<StateKey>(p));
      if (it == optimizer.state().end()) continue;
      const auto* s = dynamic_cast<const torch::optim::AdamWParamState*>(it->second.get());
      if (!s || !s->exp_avg().defined() || !s->exp_avg_sq().defined() || s->exp_avg().sizes() != p.sizes() ||
          s->exp_avg_sq().sizes() != p.sizes()) {
        throw damaged_part(info, "optimizer.pt", "its AdamW moments do not have the model's parameter shapes");
      }
    }
  }
}

}  // namespace

void load_optimizer_state(const CheckpointInfo& info, torch::optim::Optimizer& optimizer) {
  const auto path = fs::path(info.dir) / "optimizer.pt";
  if (!fs::exists(path)) throw std::runtime_error("checkpoint " + info.dir + " has no optimizer state to resume from");
  try {
    torch::load(optimizer, path.string());
  } catch (const c10::Error& e) {
    throw damaged_part(info, "optimizer.pt", "not the optimizer state of this model: " + torch_reason(e));
  }
  require_moment_shapes(info, optimizer);
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
  auto generator = at::detail::getDefaultCPUGenerator();  // a handle sharing the global state
  const torch::Tensor expected = generator.get_state();
  torch::Tensor state;
  try {
    torch::load(state, path.string());
  } catch (const c10::Error& e) {
    throw damaged_part(info, "rng.pt", "not a random-generator state: " + torch_reason(e));
  }
  if (!state.defined() || state.scalar_type() != expected.scalar_type() || state.sizes() != expected.sizes()) {
    throw damaged_part(info, "rng.pt", "not a CPU random-generator state of " + std::to_string(expected.numel()) +
                                           " bytes");
  }
  try {
    generator.set_state(state);
  } catch (const c10::Error& e) {
    throw damaged_part(info, "rng.pt", torch_reason(e));
  }
}

}  // namespace lmzoo
