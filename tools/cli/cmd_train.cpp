// lmzoo train: the flags (their help, and the refusals that are about flags) turned into a run the library sets up
// and trains (train/run/run_training.h): a new one, from --init, a classifier, or --resume; then the summary line. Under
// torchrun, every rank runs this with the same flags.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "models/presets.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/cli_error.h"
#include "tools/cli/commands.h"
#include "train/device/device_peak.h"
#include "train/device/training_memory.h"
#include "train/distributed/distributed_env.h"
#include "train/peft/lora_setup.h"
#include "train/run/resume_setup.h"
#include "train/run/run_device.h"
#include "train/run/run_inputs.h"
#include "train/run/run_setup.h"
#include "train/run/run_training.h"

namespace lmzoo::cli {

namespace {

// A model field's flag value: enums by their table names, booleans with an implicit "true" (--bias, --bias=false).
template <typename T>
std::shared_ptr<cxxopts::Value> model_flag_value() {
  if constexpr (std::is_enum_v<T>) {
    return cxxopts::value<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    return cxxopts::value<bool>()->implicit_value("true");
  } else {
    return cxxopts::value<T>();
  }
}

// Every ModelConfig field with a flag (models/model_fields.h), in the table's order.
void add_model_field_options(cxxopts::OptionAdder&& add) {
#define LMZOO_MODEL_FIELD_OPTION(type, name, default_value, flag, shape, help) \
  if (*flag) add(flag, help, model_flag_value<type>());
  LMZOO_MODEL_CONFIG_FIELDS(LMZOO_MODEL_FIELD_OPTION)
#undef LMZOO_MODEL_FIELD_OPTION
}

void add_model_options(cxxopts::Options& options) {
  options.add_options("Model")
      ("arch", "architecture: " + enum_help<Arch>() + "; default: the preset's or config's, else gpt",
       cxxopts::value<std::string>())
      ("objective", enum_help<Objective>() + "; default: causal (gpt), chat (gpt on prepared conversations), mlm "
                    "(bert), span (t5), seq2seq (t5 on prepared pairs), classify (with --init RUN_DIR)",
       cxxopts::value<std::string>())
      ("preset", "named preset (see lmzoo presets); default gpt-nano, bert-tiny for --arch bert, t5-small for --arch t5", cxxopts::value<std::string>())
      ("config", "model config JSON (e.g. from lmzoo presets --show)", cxxopts::value<std::string>());
  add_model_field_options(options.add_options("Model"));
}

void add_data_options(cxxopts::Options& options) {
  options.add_options("Data")
      ("data", "prepared data directory (lmzoo prepare); for classify a labelled .tsv/.jsonl file", cxxopts::value<std::string>())
      ("val-data", "classify: labelled validation file", cxxopts::value<std::string>())
      ("init", "weight init scheme " + enum_choices<InitScheme>() + "; or a checkpoint to fine-tune (a run "
               "directory, or lmzoo import's output): its model and tokenizer, trained with --objective (default: "
               "its family's; classify for a bert on a labelled file). A directory named like a scheme is given as "
               "./bert (a bare bert beside such a directory is refused as ambiguous). Not with --resume: a run "
               "keeps its base", cxxopts::value<std::string>())
      ("out", "run directory for checkpoints and metrics.jsonl", cxxopts::value<std::string>())
      ("resume", "continue the run in this directory from its last checkpoint", cxxopts::value<std::string>());
}

void add_training_options(cxxopts::Options& options) {
  add_train_field_options(options, "Masked LM");
  add_train_field_options(options, "Span corruption (t5)");
  add_train_field_options(options, "Chat");
  add_train_field_options(options, "Training");
  options.add_options("Training")("threads", "intra-op CPU threads (default: LibTorch's)", cxxopts::value<int>())
      ("dry-run", "print the predicted peak memory of this run by part (weights, gradients, optimizer state, "
                  "activations, runtime) and exit without training or writing anything (--out not needed)");
  add_train_field_options(options, "Fine-tuning and memory");
  add_host_memory_option(options, "Fine-tuning and memory");
  options.add_options("Distributed (under torchrun)")
      ("dist-timeout", "seconds a rank waits for the others (to join, and in every collective) before it stops "
                       "with an error (at most 86400: one day)", cxxopts::value<double>()->default_value("600"));
  add_train_field_options(options, "Distributed (under torchrun)");
}

void add_options(cxxopts::Options& options) {
  add_model_options(options);
  add_data_options(options);
  add_training_options(options);
}

void override_model_fields(const cxxopts::ParseResult& r, ModelConfig& model);

bool is_init_scheme(const std::string& value) { return find_enum<InitScheme>(value).has_value(); }

// --init names a checkpoint to fine-tune from (anything but a scheme name; ./bert for a directory "bert").
bool has_init_checkpoint(const cxxopts::ParseResult& r) {
  return r.count("init") && !is_init_scheme(r["init"].as<std::string>());
}

// A directory that holds a checkpoint (config.json) or a run (last/, best/).
bool is_checkpoint_or_run_dir(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return false;
  for (const char* entry : {"config.json", "last", "best"}) {
    if (fs::exists(fs::path(path) / entry, ec)) return true;
  }
  return false;
}

// --init gpt2|bert|t5 is a scheme; where a checkpoint or run directory of that name is also here, which was meant
// is not clear, so the run is refused with both readings rather than started from the wrong one.
void refuse_ambiguous_init(const cxxopts::ParseResult& r) {
  if (!r.count("init")) return;
  const std::string name = r["init"].as<std::string>();
  if (!is_init_scheme(name) || !is_checkpoint_or_run_dir(name)) return;
  throw UsageError("--init " + name + " is both a weight init scheme and the checkpoint directory ./" + name +
                   ": give --init ./" + name + " to start from the checkpoint (for the scheme, run elsewhere or set "
                   "\"init\" in a --config)");
}

// The flags that change a model's shape or layers (rejected when fine-tuning an --init checkpoint).
const std::vector<std::string>& model_shape_flags() {
  static const std::vector<std::string> flags = [] {
    std::vector<std::string> out = {"preset", "config"};
#define LMZOO_MODEL_SHAPE_FLAG(type, name, default_value, flag, shape, help) \
  if (shape) out.push_back(flag);
    LMZOO_MODEL_CONFIG_FIELDS(LMZOO_MODEL_SHAPE_FLAG)
#undef LMZOO_MODEL_SHAPE_FLAG
    return out;
  }();
  return flags;
}

// The arch asked for: --arch, else the --config's or --preset's, else gpt.
Arch requested_arch(const cxxopts::ParseResult& r) {
  if (r.count("arch")) return enum_option<Arch>(r, "arch");
  if (r.count("config")) return load_model_config(r["config"].as<std::string>()).arch;
  if (r.count("preset")) return find_preset(r["preset"].as<std::string>()).config.arch;
  return Arch::kGpt;
}

// The ModelConfig fields whose flags were given.
std::set<std::string> given_model_fields(const cxxopts::ParseResult& r) {
  std::set<std::string> given;
#define LMZOO_GIVEN_MODEL_FIELD(type, name, default_value, flag, shape, help) \
  if (*flag && r.count(flag)) given.insert(#name);
  LMZOO_MODEL_CONFIG_FIELDS(LMZOO_GIVEN_MODEL_FIELD)
#undef LMZOO_GIVEN_MODEL_FIELD
  if (r.count("init")) given.insert("init");  // a scheme here (a checkpoint path takes another route)
  return given;
}

// The TrainConfig fields whose flags were given.
std::set<std::string> given_train_fields(const cxxopts::ParseResult& r) {
  std::set<std::string> given;
#define LMZOO_GIVEN_TRAIN_FIELD(type, name, default_value, flag, flag_kind, group, resumable, help) \
  if (*flag && r.count(flag)) given.insert(#name);
  LMZOO_TRAIN_CONFIG_FIELDS(LMZOO_GIVEN_TRAIN_FIELD)
#undef LMZOO_GIVEN_TRAIN_FIELD
  return given;
}

// The flags given on MODEL, which keeps its proportions where they change a size others derive from (resized).
void apply_model_flags(const cxxopts::ParseResult& r, ModelConfig& model) {
  if (model.arch != Arch::kT5 && r.count("n-decoder-layer")) {
    throw UsageError("--n-decoder-layer is for --arch t5 (a " + enum_name(model.arch) + " model has one stack)");
  }
  ModelConfig asked = model;
  override_model_fields(r, asked);
  model = resized(model, asked, given_model_fields(r));
}

// Each model flag given sets its field as it is (no derived sizes): the values apply_model_flags asks for, and
// what a resumed run's config is compared with.
void override_model_fields(const cxxopts::ParseResult& r, ModelConfig& model) {
#define LMZOO_OVERRIDE_MODEL_FIELD(type, name, default_value, flag, shape, help) \
  if (*flag) override_from(r, flag, model.name);
  LMZOO_MODEL_CONFIG_FIELDS(LMZOO_OVERRIDE_MODEL_FIELD)
#undef LMZOO_OVERRIDE_MODEL_FIELD
  override_from(r, "init", model.init);  // --init: a scheme here (a checkpoint path takes another route)
}

ModelConfig model_config_from_flags(const cxxopts::ParseResult& r, int64_t tokenizer_vocab) {
  if (r.count("preset") && r.count("config")) throw UsageError("give --preset or --config, not both");
  const Arch arch = requested_arch(r);
  ModelConfig model = r.count("preset") ? find_preset(r["preset"].as<std::string>()).config : default_preset(arch).config;
  if (r.count("config")) model = sized_to_vocab(load_model_config(r["config"].as<std::string>()), tokenizer_vocab);
  if (model.arch != arch) {
    throw UsageError("--arch " + enum_name(arch) + " does not match the " + enum_name(model.arch) + " model config");
  }
  model.vocab_size = tokenizer_vocab;
  apply_model_flags(r, model);
  model.validate();
  return model;
}

// The objective-specific flags are refused under another objective rather than ignored (also on --resume,
// where the objective is the run's).
void reject_flags_of_other_objectives(const cxxopts::ParseResult& r, Objective objective) {
  auto only_for = [&](std::initializer_list<const char*> flags, Objective owner, const std::string& what) {
    if (objective == owner) return;
    for (const char* flag : flags) {
      if (r.count(flag)) {
        throw UsageError(std::string("--") + flag + " applies to --objective " + enum_name(owner) + " (" + what +
                         "), not to " + enum_name(objective));
      }
    }
  };
  only_for({"noise-density", "mean-span-length"}, Objective::kSpan, "t5 span corruption");
  only_for({"mlm-probability", "mask-rate", "random-rate", "whole-word-mask", "segment-pairs"}, Objective::kMlm,
           "bert masked LM");
  only_for({"max-length", "packing", "truncate"}, Objective::kChat, "the answers of prepared conversations");
  if ((objective == Objective::kClassify || objective == Objective::kSeq2seq || objective == Objective::kChat) &&
      r.count("eval-iters")) {
    throw UsageError("--eval-iters does not apply to --objective " + enum_name(objective) +
                     ": validation scores the whole validation set");
  }
}


// The flag that sets a config field: the field tables' (models/model_fields.h, train/train_fields.h), else the
// flags that set the fields without a flag of their own, else the name with dashes (--arch, --objective, --init).
std::string flag_of_field(std::string field) {
  static const std::map<std::string, std::string> flags = [] {
    std::map<std::string, std::string> out = {
        {"data_dir", "data"}, {"val_data", "val-data"}, {"out_dir", "out"}, {"init_checkpoint", "init"}};
#define LMZOO_MODEL_FIELD_FLAG(type, name, default_value, flag, shape, help) \
  if (*flag) out[#name] = flag;
    LMZOO_MODEL_CONFIG_FIELDS(LMZOO_MODEL_FIELD_FLAG)
#undef LMZOO_MODEL_FIELD_FLAG
#define LMZOO_TRAIN_FIELD_FLAG(type, name, default_value, flag, flag_kind, group, resumable, help) \
  if (*flag) out[#name] = flag;
    LMZOO_TRAIN_CONFIG_FIELDS(LMZOO_TRAIN_FIELD_FLAG)
#undef LMZOO_TRAIN_FIELD_FLAG
    return out;
  }();
  if (const auto it = flags.find(field); it != flags.end()) return it->second;
  std::replace(field.begin(), field.end(), '_', '-');
  return field;
}

// What a refused --resume says may change: the resumable settings (resumable_settings()) as flags, and --threads.
std::string resumable_flags_text() {
  std::string flags;
  for (const auto& field : resumable_settings()) flags += "--" + flag_of_field(field) + ", ";
  return "on resume only " + flags + "and --threads may change";
}

// "--flag VALUE (the run's: STORED)" for each conflict.
void add_conflicts(const std::vector<SettingConflict>& found, std::vector<std::string>& out) {
  for (const auto& c : found) out.push_back("--" + flag_of_field(c.field) + " " + c.asked + " (the run's: " + c.stored + ")");
}

// The training settings a --resume command line asks for: the run's, with the flags given (paths as given).
TrainConfig asked_training(const cxxopts::ParseResult& r, const CheckpointInfo& run) {
  TrainConfig asked = run.train;
  apply_training_flags(r, asked, /*only_given=*/true);
  override_from(r, "objective", asked.objective);
  override_from(r, "data", asked.data_dir);
  override_from(r, "val-data", asked.val_data);
  override_from(r, "out", asked.out_dir);
  return asked;
}

// The flags of a --resume command line that contradict the run's stored configuration.
std::vector<std::string> resume_conflicts(const cxxopts::ParseResult& r, const CheckpointInfo& run) {
  std::vector<std::string> conflicts;
  ModelConfig asked_model = run.model;
  override_model_fields(r, asked_model);
  if (r.count("init") && is_init_scheme(r["init"].as<std::string>())) override_from(r, "init", asked_model.init);
  add_conflicts(model_conflicts(asked_model, run.model), conflicts);
  if (r.count("arch") && enum_option<Arch>(r, "arch") != run.model.arch) {
    conflicts.push_back("--arch " + r["arch"].as<std::string>() + " (the run's: " + enum_name(run.model.arch) + ")");
  }
  for (const char* flag : {"preset", "config"}) {
    if (r.count(flag)) conflicts.push_back(std::string("--") + flag + " (the run's model comes from its checkpoint)");
  }
  add_conflicts(train_conflicts(asked_training(r, run), run.train), conflicts);
  return conflicts;
}

// --init CHECKPOINT with --resume: refused before the run is opened (and its lock taken), naming what the run
// continues from. An --init scheme is compared with the run's like any model setting (resume_conflicts).
void refuse_init_checkpoint_on_resume(const cxxopts::ParseResult& r) {
  if (!r.count("resume") || !has_init_checkpoint(r)) return;
  const std::string run_dir = r["resume"].as<std::string>();
  const TrainConfig run = stored_run(run_dir).train;
  const std::string& base = run.init_checkpoint;
  throw UsageError("--init applies to a new run; --resume " + run_dir + " continues " +
                   (base.empty() ? std::string("its own weights (trained from scratch)")
                    : is_lora_run(run) ? "from its own base (" + base + ")"
                                       : "its own weights (fine-tuned from " + base + ")"));
}

// --resume RUN_DIR: the run's own configuration, with only the flags that may change applied.
TrainRequest resume_from_flags(const cxxopts::ParseResult& r) {
  const std::string run_dir = r["resume"].as<std::string>();
  const CheckpointInfo run = stored_run(run_dir);
  reject_flags_of_other_objectives(r, run.train.objective);
  const auto conflicts = resume_conflicts(r, run);
  if (!conflicts.empty()) {
    std::string list;
    for (const auto& c : conflicts) list += (list.empty() ? "" : ", ") + c;
    throw UsageError("--resume " + run_dir + ": flags contradict the run: " + list + "; " + resumable_flags_text());
  }
  return resume_request(run, asked_training(r, run));
}

void refuse_shape_flags(const cxxopts::ParseResult& r) {
  for (const auto& flag : model_shape_flags()) {
    if (r.count(flag)) throw UsageError("--" + flag + " cannot change the shape of the --init model");
  }
}

// Fine-tuning a classifier: the --init checkpoint's bert with the labels of --data; the optimizer and schedule
// flags not given take classifier_defaults() (HF Trainer's).
TrainRequest classifier_from_flags(const cxxopts::ParseResult& r, RunSpec& spec) {
  if (!has_init_checkpoint(r)) {
    throw UsageError("--init is required for --objective classify: the pretrained bert run directory");
  }
  refuse_shape_flags(r);
  TrainConfig& t = spec.train;
  override_from(r, "val-data", t.val_data);
  t = with_classifier_defaults(t, given_train_fields(r));
  return classifier_request(spec);
}

// Fine-tuning the --init checkpoint PRETRAINED (e.g. lmzoo import's) on a generative objective.
TrainRequest continued_from_flags(const cxxopts::ParseResult& r, const RunSpec& spec, const CheckpointInfo& pretrained) {
  if (r.count("val-data")) throw UsageError("--val-data is for --objective classify");
  refuse_shape_flags(r);
  if (r.count("arch") && enum_option<Arch>(r, "arch") != pretrained.model.arch) {
    throw UsageError("--arch " + r["arch"].as<std::string>() + " differs from the --init model's (" +
                     enum_name(pretrained.model.arch) + ")");
  }
  return continued_run_request(spec);
}

// A new model from the flags, on the data's tokenizer.
TrainRequest new_model_from_flags(const cxxopts::ParseResult& r, RunSpec& spec) {
  if (r.count("val-data")) throw UsageError("--val-data is for --objective classify");
  const Tokenizer tokenizer = data_tokenizer(spec.train.data_dir);
  spec.model = model_config_from_flags(r, tokenizer.vocab_size());
  return new_model_request(spec, tokenizer);
}

// LoRA adapts a pretrained model: its flags need --init, and the others need --lora-rank (a rank of at least 1).
void refuse_lora_flags_without_init(const cxxopts::ParseResult& r, bool has_init) {
  const char* const lora_flags[] = {"lora-rank", "lora-alpha", "lora-dropout", "lora-targets", "trainable",
                                    "base-precision"};
  for (const char* flag : lora_flags) {
    if (r.count(flag) && !has_init) {
      throw UsageError(std::string("--") + flag + " needs --init: the checkpoint whose weights LoRA adapts" +
                       (r.count("init") ? " (--init " + r["init"].as<std::string>() + " names a weight init scheme)"
                                        : std::string()));
    }
  }
  if (r.count("lora-rank") && r["lora-rank"].as<int64_t>() < 1) {
    throw UsageError("--lora-rank must be at least 1 (leave it out for a full fine-tune)");
  }
  for (const char* flag : lora_flags) {
    if (r.count(flag) && !r.count("lora-rank")) throw UsageError(std::string("--") + flag + " applies with --lora-rank");
  }
}

// A new run: its data, objective, model and tokenizer from the flags.
TrainRequest new_run_from_flags(const cxxopts::ParseResult& r) {
  require_option(r, "data");
  if (!r.count("dry-run")) require_option(r, "out");
  RunSpec spec;
  spec.train.data_dir = absolute_path(r["data"].as<std::string>());  // as the run stores it, and messages name it
  if (r.count("out")) spec.train.out_dir = r["out"].as<std::string>();
  apply_training_flags(r, spec.train, /*only_given=*/false);
  std::optional<CheckpointInfo> pretrained;
  if (has_init_checkpoint(r)) pretrained = open_checkpoint(r["init"].as<std::string>());
  spec.train.objective = pretrained ? checkpoint_objective(*pretrained, spec.train.data_dir)
                                    : data_objective(requested_arch(r), spec.train.data_dir);
  override_from(r, "objective", spec.train.objective);
  reject_flags_of_other_objectives(r, spec.train.objective);
  refuse_lora_flags_without_init(r, pretrained.has_value());
  if (pretrained) {
    spec.train.init_checkpoint = r["init"].as<std::string>();
    if (r.count("dropout")) spec.dropout = r["dropout"].as<double>();
  }
  if (spec.train.objective == Objective::kClassify) return classifier_from_flags(r, spec);
  if (pretrained) return continued_from_flags(r, spec, *pretrained);
  return new_model_from_flags(r, spec);
}

// The device a run asks for: --device, else the stored run's on --resume, else TrainConfig's default.
std::string requested_device(const cxxopts::ParseResult& r) {
  if (r.count("device") || !r.count("resume")) return r["device"].as<std::string>();
  return stored_device(r["resume"].as<std::string>());  // resume_from_flags reports a broken checkpoint
}

// The longest --dist-timeout: one day, in seconds (its milliseconds must fit the store's timeout).
constexpr double kMaxDistTimeoutS = 86400;

// Under torchrun: this process's rank joins the others (gloo on the CPU, nccl on cuda:LOCAL_RANK).
std::unique_ptr<Communicator> join_ranks_if_launched(const cxxopts::ParseResult& r) {
  const double timeout_s = r["dist-timeout"].as<double>();  // checked with or without torchrun
  if (!(timeout_s > 0 && timeout_s <= kMaxDistTimeoutS)) {
    throw UsageError("--dist-timeout must be a positive number of seconds, at most " +
                     std::to_string(int64_t(kMaxDistTimeoutS)) + " (one day)");
  }
  const auto env = distributed_env_from_environment();
  if (!env) return nullptr;
  return join_ranks(*env, requested_device(r), std::chrono::milliseconds(int64_t(timeout_s * 1000)));
}

// The summary line: the last JSON line on stdout.
void print_result(const std::string& run_dir, const TrainResult& result) {
  auto finite_or_null = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  std::cout << nlohmann::json({{"step", result.state.step},
                               {"train_loss", result.last_train_loss},
                               {"val_loss", std::isnan(result.last_val_loss) ? nlohmann::json(nullptr)
                                                                             : nlohmann::json(result.last_val_loss)},
                               {"best_val_loss", finite_or_null(result.state.best_val_loss)},
                               {"run_dir", run_dir},
                               {"interrupted", result.interrupted},
                               {"peak_host_memory_bytes", peak_host_memory_bytes()},
                               {"peak_device_memory_bytes", result.peak_device_memory_bytes}})
                   .dump()
            << std::endl;
}

// --dry-run: the run the flags ask for, set up as far as its settings (no model, nothing written), and its
// predicted peak memory on its device: one line per part, the total, then the figures as the JSON line.
int dry_run(const cxxopts::ParseResult& r) {
  const TrainRequest request = r.count("resume") ? resume_from_flags(r) : new_run_from_flags(r);
  request.train.validate();  // as the run would: a setting outside its range ends here (exit 2)
  request.model.validate();
  const torch::Device device = training_device(request.train, nullptr);
  const MemoryEstimate estimate = estimate_training_run(request.model, request.train, device);
  for (const std::string& line : memory_report_lines(estimate, request.model, request.train, device)) {
    std::cout << line << "\n";
  }
  nlohmann::json parts = nlohmann::json::object();
  for (const auto& [name, bytes] : estimate.parts()) parts[name] = bytes;
  std::cout << nlohmann::json({{"dry_run", true},
                               {"device", device.str()},
                               {"parameters", estimate.parameters},
                               {"trainable_parameters", estimate.trainable},
                               {"predicted_peak_bytes", estimate.total()},
                               {"predicted_parts", parts},
                               {"predicted_loading_bytes", estimate.loading}})
                   .dump()
            << std::endl;
  return 0;
}

}  // namespace

int run_train(int argc, char** argv) {
  cxxopts::Options options("lmzoo train", "Train a language model on prepared token shards.");
  add_options(options);
  cxxopts::ParseResult r;
  if (parse_or_help(options, argc, argv, r)) return 0;
  apply_thread_option(r);
  apply_host_memory_option(r);
  refuse_ambiguous_init(r);
  refuse_init_checkpoint_on_resume(r);
  if (r.count("dry-run")) return dry_run(r);

  // Under torchrun the ranks join first; each setup step then succeeds on every rank or stops every rank.
  const std::unique_ptr<Communicator> ranks = join_ranks_if_launched(r);
  RunPlan plan;
  if (r.count("resume")) {
    plan = {r["resume"].as<std::string>(), [&] { return resume_from_flags(r); }};
  } else {
    plan.build_request = [&] { return new_run_from_flags(r); };
  }
  const TrainResult result = run_training(plan, ranks.get());
  const bool lead = !ranks || ranks->rank() == 0;  // rank 0 reports the run
  if (lead) print_result(r.count("resume") ? r["resume"].as<std::string>() : r["out"].as<std::string>(), result);
  return result.interrupted ? 130 : 0;
}

}  // namespace lmzoo::cli
