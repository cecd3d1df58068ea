// lmzoo train: assemble model + training config from preset / JSON / flags, then run the trainer;
// or --resume a run from its last checkpoint. Under torchrun, every rank runs this with the same flags.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>
#include <vector>

#include "data/labelled_text.h"
#include "data/pairs.h"
#include "data/shards.h"
#include "data/tokenizer.h"
#include "models/presets.h"
#include "tools/cli_common.h"
#include "tools/cli_error.h"
#include "tools/commands.h"
#include "train/communicator.h"
#include "train/data_parallel.h"
#include "train/device.h"
#include "train/device_peak.h"
#include "train/distributed_env.h"
#include "train/checkpoint_swap.h"
#include "train/run_lock.h"
#include "train/trainer.h"

namespace lmzoo::cli {

namespace {

std::string absolute_path(const std::string& path) {
  return path.empty() ? path : std::filesystem::weakly_canonical(std::filesystem::absolute(path)).string();
}

// A flag's default, shown in --help and taken when the flag is absent.
template <typename T>
std::shared_ptr<cxxopts::Value> value_with_default(const T& value) {
  if constexpr (std::is_enum_v<T>) {
    return cxxopts::value<std::string>()->default_value(default_text(value));
  } else {
    return cxxopts::value<T>()->default_value(default_text(value));
  }
}

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
      ("objective", enum_help<Objective>() + "; default: causal (gpt), mlm (bert), span (t5), seq2seq (t5 on "
                    "prepared pairs), classify (with --init RUN_DIR)", cxxopts::value<std::string>())
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
               "its family's; classify for a bert on a labelled file)", cxxopts::value<std::string>())
      ("out", "run directory for checkpoints and metrics.jsonl", cxxopts::value<std::string>())
      ("resume", "continue the run in this directory from its last checkpoint", cxxopts::value<std::string>());
}

void add_objective_options(cxxopts::Options& options) {
  const TrainConfig t;
  options.add_options("Masked LM")
      ("mlm-probability", "fraction of tokens selected for prediction", value_with_default(t.mlm_probability))
      ("mask-rate", "of the selected: replaced by [MASK]", value_with_default(t.mask_rate))
      ("random-rate", "of the selected: replaced by a random token (the rest kept)", value_with_default(t.random_rate))
      ("whole-word-mask", "select whole words rather than pieces")
      ("segment-pairs", "frame [CLS] A [SEP] B [SEP] with token types");
  options.add_options("Span corruption (t5)")
      ("noise-density", "fraction of tokens dropped into the targets", value_with_default(t.noise_density))
      ("mean-span-length", "mean length of a noise span", value_with_default(t.mean_span_length));
}

void add_training_options(cxxopts::Options& options) {
  const TrainConfig t;
  options.add_options("Training")
      ("batch-size", "sequences per micro-batch", value_with_default(t.batch_size))
      ("grad-accum", "micro-batches per optimizer step", value_with_default(t.grad_accum))
      ("steps", "optimizer steps in total", value_with_default(t.steps))
      ("lr", "peak learning rate (classify: 5e-05)", value_with_default(t.lr))
      ("min-lr", "final learning rate (classify: 0)", value_with_default(t.min_lr))
      ("warmup", "linear warmup steps (classify: 0)", value_with_default(t.warmup))
      ("schedule", enum_help<Schedule>() + " (classify: linear)", value_with_default(t.schedule))
      ("decay-steps", "step where the decay reaches --min-lr, which holds after it (default: --steps; kept on "
                      "--resume, so extending --steps never moves the rate)", cxxopts::value<int64_t>())
      ("weight-decay", "AdamW weight decay (tensors with >= 2 dims; classify: 0.01)", value_with_default(t.weight_decay))
      ("beta1", "AdamW beta1", value_with_default(t.beta1))
      ("beta2", "AdamW beta2 (classify: 0.999)", value_with_default(t.beta2))
      ("grad-clip", "gradient norm clip (0: off)", value_with_default(t.grad_clip))
      ("eval-interval", "steps between validations and checkpoints", value_with_default(t.eval_interval))
      ("eval-iters", "validation batches per evaluation", value_with_default(t.eval_iters))
      ("log-interval", "steps between progress lines / metrics records", value_with_default(t.log_interval))
      ("seed", "random seed", value_with_default(t.seed))
      ("device", "auto|cpu|cuda[:N]", value_with_default(t.device))
      ("precision", enum_help<Precision>(), value_with_default(t.precision))
      ("max-consecutive-skips", "steps with non-finite gradients are skipped; this many in a row stop the run",
       value_with_default(t.max_consecutive_skips))
      ("tf32", "CUDA: fp32 matmuls on TF32 tensor cores (--tf32=false: full fp32)",
       cxxopts::value<bool>()->implicit_value("true"))
      ("threads", "intra-op CPU threads (default: LibTorch's)", cxxopts::value<int>());
  options.add_options("Distributed (under torchrun)")
      ("dist-timeout", "seconds a rank waits for the others (to join, and in every collective) before it stops "
                       "with an error (at most 86400: one day)", cxxopts::value<double>()->default_value("600"))
      ("shard-optimizer", "ZeRO-1: each rank keeps AdamW's state for about 1/N of the parameters; the same "
                          "weights as without (--shard-optimizer=false on --resume: stop sharding)",
       cxxopts::value<bool>()->implicit_value("true"));
}

void add_options(cxxopts::Options& options) {
  add_model_options(options);
  add_data_options(options);
  add_objective_options(options);
  add_training_options(options);
}

void override_model_fields(const cxxopts::ParseResult& r, ModelConfig& model);

bool is_init_scheme(const std::string& value) { return find_enum<InitScheme>(value).has_value(); }

// --init names a checkpoint to fine-tune from (anything but a scheme name; ./bert for a directory "bert").
bool has_init_checkpoint(const cxxopts::ParseResult& r) {
  return r.count("init") && !is_init_scheme(r["init"].as<std::string>());
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

void apply_model_flags(const cxxopts::ParseResult& r, ModelConfig& model) {
  if (model.arch == Arch::kT5) {
    // --n-layer sets both stacks unless --n-decoder-layer is given; a new width or head count keeps T5's
    // proportions (d_ff = 4 d_model, d_kv = d_model / n_head) rather than the preset's absolute sizes.
    if (r.count("n-layer")) model.n_decoder_layer = 0;
    if (r.count("d-model") || r.count("n-head")) model.head_dim = 0;
  } else if (r.count("n-decoder-layer")) {
    throw UsageError("--n-decoder-layer is for --arch t5 (a " + enum_name(model.arch) + " model has one stack)");
  }
  // A new width keeps the feed-forward's proportion (derived d_ff) rather than the preset's absolute size.
  if (r.count("d-model")) model.d_ff = 0;
  // A new head count keeps grouped-query attention's kv heads when they still divide it, else plain heads.
  if (r.count("n-head") && !r.count("n-kv-heads") && model.n_kv_heads > 0 &&
      r["n-head"].as<int64_t>() % model.n_kv_heads != 0) {
    model.n_kv_heads = 0;
  }
  override_model_fields(r, model);
}

// Each model flag given sets its field as it is (no derived sizes): what apply_model_flags ends with, and what a
// resumed run's config is compared with.
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
  if (r.count("config")) {
    model = load_model_config(r["config"].as<std::string>());
    if (model.vocab_size != 0 && model.vocab_size != tokenizer_vocab) {
      throw std::runtime_error("model config vocab_size " + std::to_string(model.vocab_size) +
                               " does not match the data's tokenizer (" + std::to_string(tokenizer_vocab) + ")");
    }
  }
  if (model.arch != arch) {
    throw UsageError("--arch " + enum_name(arch) + " does not match the " + enum_name(model.arch) + " model config");
  }
  model.vocab_size = tokenizer_vocab;
  apply_model_flags(r, model);
  model.validate();
  return model;
}

// Training flags override the config (defaults for a new run, the saved values on resume).
void apply_training_flags(const cxxopts::ParseResult& r, TrainConfig& t, bool only_given) {
  auto set = [&](const std::string& flag, auto& field) {
    using Field = std::decay_t<decltype(field)>;
    if (only_given && !r.count(flag)) return;
    if constexpr (std::is_enum_v<Field>) {
      field = enum_option<Field>(r, flag);
    } else {
      field = r[flag].as<Field>();
    }
  };
  set("batch-size", t.batch_size);
  set("grad-accum", t.grad_accum);
  set("steps", t.steps);
  set("lr", t.lr);
  set("min-lr", t.min_lr);
  set("warmup", t.warmup);
  set("schedule", t.schedule);
  if (r.count("decay-steps")) t.decay_steps = r["decay-steps"].as<int64_t>();
  set("weight-decay", t.weight_decay);
  set("beta1", t.beta1);
  set("beta2", t.beta2);
  set("grad-clip", t.grad_clip);
  set("eval-interval", t.eval_interval);
  set("eval-iters", t.eval_iters);
  set("log-interval", t.log_interval);
  set("seed", t.seed);
  set("max-consecutive-skips", t.max_consecutive_skips);
  set("device", t.device);
  set("precision", t.precision);
  if (r.count("tf32")) t.tf32 = r["tf32"].as<bool>();
  if (r.count("shard-optimizer")) t.shard_optimizer = r["shard-optimizer"].as<bool>();
  set("mlm-probability", t.mlm_probability);
  set("mask-rate", t.mask_rate);
  set("random-rate", t.random_rate);
  set("noise-density", t.noise_density);
  set("mean-span-length", t.mean_span_length);
  if (!only_given || r.count("whole-word-mask")) t.whole_word_mask = r.count("whole-word-mask") > 0;
  if (!only_given || r.count("segment-pairs")) t.segment_pairs = r.count("segment-pairs") > 0;
}

// Fine-tuning a classifier: the model is the --init checkpoint's bert with the labels of --data; its
// tokenizer is the checkpoint's. Defaults follow HF's Trainer (lr 5e-5, linear decay, no warmup).
void setup_classifier(const cxxopts::ParseResult& r, TrainRequest& request) {
  if (!has_init_checkpoint(r)) {
    throw UsageError("--init is required for --objective classify: the pretrained bert run directory");
  }
  for (const auto& flag : model_shape_flags()) {
    if (r.count(flag)) throw UsageError("--" + flag + " cannot change the shape of the --init model");
  }
  const CheckpointInfo pretrained = open_checkpoint(r["init"].as<std::string>());
  if (pretrained.model.arch != Arch::kBert) {
    throw UsageError("--init " + pretrained.dir + " holds a " + enum_name(pretrained.model.arch) +
                     " model; classification fine-tunes a bert");
  }
  TrainConfig& t = request.train;
  t.init_checkpoint = absolute_path(pretrained.dir);
  if (r.count("val-data")) t.val_data = absolute_path(r["val-data"].as<std::string>());
  const TrainConfig defaults = classifier_defaults();
  if (!r.count("lr")) t.lr = defaults.lr;
  if (!r.count("min-lr")) t.min_lr = defaults.min_lr;
  if (!r.count("schedule")) t.schedule = defaults.schedule;
  if (!r.count("warmup")) t.warmup = defaults.warmup;
  if (!r.count("weight-decay")) t.weight_decay = defaults.weight_decay;
  if (!r.count("beta2")) t.beta2 = defaults.beta2;
  request.model = pretrained.model;
  request.model.labels = label_set(read_labelled_text(t.data_dir));
  override_from(r, "dropout", request.model.dropout);
  request.model.validate();
  request.tokenizer_model = pretrained.tokenizer_model;
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
  if ((objective == Objective::kClassify || objective == Objective::kSeq2seq) && r.count("eval-iters")) {
    throw UsageError("--eval-iters does not apply to --objective " + enum_name(objective) +
                     ": validation scores the whole validation set");
  }
}

// A complete last/ (or a leftover of a crashed swap that holds one) means a run is already there.
bool holds_checkpoint(const std::string& out_dir) { return !find_complete_checkpoint(out_dir, "last").empty(); }

// What in OUT_DIR belongs to a run: checkpoints (complete or not, hidden swap leftovers included), a non-empty
// metrics.jsonl, curves.svg. Only the lock file and an empty metrics.jsonl (a run killed before it logged) are not.
std::vector<std::string> run_state_in(const std::string& out_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::directory_iterator it(out_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool empty_metrics = name == "metrics.jsonl" && it->is_regular_file() && fs::file_size(it->path(), ec) == 0;
    const bool run_file = name == "last" || name == "best" || name == "metrics.jsonl" || name == "curves.svg" ||
                          !checkpoint_name_of_hidden(name).empty();
    if (run_file && !empty_metrics) found.push_back(name);
  }
  std::sort(found.begin(), found.end());
  return found;
}

// A new run never starts in a directory that holds any run state, whatever part of it is missing.
void refuse_existing_run(const std::string& out_dir) {
  const std::vector<std::string> found = run_state_in(out_dir);
  if (found.empty()) return;
  std::string names;
  for (const auto& name : found) names += (names.empty() ? "" : ", ") + name;
  const std::string how = holds_checkpoint(out_dir) ? "use --resume " + out_dir + " or another --out"
                                                    : "it has no complete last/ to resume from: use another --out, or "
                                                      "move those files away";
  throw UsageError(out_dir + " already holds a run (" + names + "); " + how);
}

// The flags a resumed run may change: how long and where it runs, and the optimizer's knobs (lowering the rate
// after a loss spike is the common case). Every other flag must agree with the run (README: Resuming a run):
// they fix the model, the data stream and the schedule's shape.
const std::set<std::string>& flags_resume_may_change() {
  static const std::set<std::string> flags = {
      "resume", "steps",  "eval-interval", "eval-iters",   "log-interval", "device", "precision", "tf32",
      "threads", "max-consecutive-skips", "lr", "min-lr", "weight-decay", "beta1", "beta2", "grad-clip",
      "shard-optimizer"};
  return flags;
}

// "--flag VALUE (the run's: STORED)" for every field of `asked` that differs from `stored` (JSON objects of
// one config type; field names become flag names).
void list_differences(const nlohmann::json& asked, const nlohmann::json& stored, std::vector<std::string>& out) {
  for (const auto& item : asked.items()) {
    std::string flag = item.key();
    std::replace(flag.begin(), flag.end(), '_', '-');
    if (flag == "max-seq-len") flag = "seq-len";  // the one field whose flag has another name
    if (flags_resume_may_change().count(flag) || !stored.contains(item.key())) continue;
    auto text = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
    if (item.value() != stored.at(item.key())) {
      out.push_back("--" + flag + " " + text(item.value()) + " (the run's: " + text(stored.at(item.key())) + ")");
    }
  }
}

// The flags of a --resume command line that contradict the run's stored configuration.
std::vector<std::string> resume_conflicts(const cxxopts::ParseResult& r, const CheckpointInfo& run) {
  std::vector<std::string> conflicts;
  ModelConfig asked_model = run.model;
  override_model_fields(r, asked_model);
  if (r.count("init") && is_init_scheme(r["init"].as<std::string>())) override_from(r, "init", asked_model.init);
  list_differences(nlohmann::json(asked_model), nlohmann::json(run.model), conflicts);
  if (r.count("arch") && enum_option<Arch>(r, "arch") != run.model.arch) {
    conflicts.push_back("--arch " + r["arch"].as<std::string>() + " (the run's: " + enum_name(run.model.arch) + ")");
  }
  for (const char* flag : {"preset", "config"}) {
    if (r.count(flag)) conflicts.push_back(std::string("--") + flag + " (the run's model comes from its checkpoint)");
  }
  TrainConfig asked_train = run.train;
  apply_training_flags(r, asked_train, /*only_given=*/true);
  override_from(r, "objective", asked_train.objective);
  list_differences(nlohmann::json(asked_train), nlohmann::json(run.train), conflicts);
  auto same_path = [&](const char* flag, const std::string& stored) {
    if (r.count(flag) && absolute_path(r[flag].as<std::string>()) != absolute_path(stored)) {
      conflicts.push_back(std::string("--") + flag + " " + r[flag].as<std::string>() + " (the run's: " + stored + ")");
    }
  };
  same_path("data", run.train.data_dir);
  same_path("val-data", run.train.val_data);
  same_path("out", r["resume"].as<std::string>());
  if (has_init_checkpoint(r)) same_path("init", run.train.init_checkpoint);
  return conflicts;
}

// --resume RUN_DIR: the run's own configuration, with only the flags that may change applied.
void setup_resume(const cxxopts::ParseResult& r, TrainRequest& request) {
  const std::string run_dir = r["resume"].as<std::string>();
  if (!std::filesystem::exists(run_dir + "/last")) {
    throw std::runtime_error(run_dir + " has no last/ checkpoint to resume from");
  }
  CheckpointInfo info = open_checkpoint(run_dir + "/last");
  reject_flags_of_other_objectives(r, info.train.objective);
  // A run written before decay_steps existed decayed over the --steps it was started with.
  if (info.train.decay_steps == 0) info.train.decay_steps = info.train.steps;
  const auto conflicts = resume_conflicts(r, info);
  if (!conflicts.empty()) {
    std::string list;
    for (const auto& c : conflicts) list += (list.empty() ? "" : ", ") + c;
    throw UsageError("--resume " + run_dir + ": flags contradict the run: " + list + "; on resume only --steps, "
                     "--eval-interval, --eval-iters, --log-interval, --device, --precision, --tf32, --threads, "
                     "--max-consecutive-skips, --shard-optimizer and the optimizer's --lr, --min-lr, --weight-decay, "
                     "--beta1, --beta2 and --grad-clip may change");
  }
  request.model = info.model;
  request.train = info.train;
  apply_training_flags(r, request.train, /*only_given=*/true);
  request.train.out_dir = run_dir;
  request.tokenizer_model = info.tokenizer_model;
  request.resume_dir = info.dir;
  if (info.state.step >= request.train.steps) {
    throw UsageError("the run is already at step " + std::to_string(info.state.step) + " of " +
                     std::to_string(request.train.steps) + " (pass a larger --steps to continue)");
  }
  if (request.train.objective != Objective::kClassify) {
    check_same_tokenizer(request.train.data_dir, Tokenizer::from_serialized(info.tokenizer_model), run_dir);
  }
}

// The objective of a run from an --init checkpoint: its family's, on prepared data; classify for a bert
// given a labelled file.
Objective init_objective(const cxxopts::ParseResult& r, const std::string& data) {
  const CheckpointInfo pretrained = open_checkpoint(r["init"].as<std::string>());
  if (pretrained.model.arch == Arch::kBert && !std::filesystem::is_directory(data)) return Objective::kClassify;
  return default_objective(pretrained.model.arch, is_pairs_dir(data));
}

// Fine-tuning an --init checkpoint (e.g. lmzoo import's) on a generative objective: its model, weights and
// tokenizer, on data prepared with that tokenizer.
void setup_continued(const cxxopts::ParseResult& r, TrainRequest& request) {
  for (const auto& flag : model_shape_flags()) {
    if (r.count(flag)) throw UsageError("--" + flag + " cannot change the shape of the --init model");
  }
  const CheckpointInfo pretrained = open_checkpoint(r["init"].as<std::string>());
  if (r.count("arch") && enum_option<Arch>(r, "arch") != pretrained.model.arch) {
    throw UsageError("--arch " + r["arch"].as<std::string>() + " differs from the --init model's (" +
                     enum_name(pretrained.model.arch) + ")");
  }
  if (!pretrained.model.labels.empty()) {
    throw UsageError("--init " + pretrained.dir + " is a classifier; it trains with --objective classify only");
  }
  request.model = pretrained.model;
  override_from(r, "dropout", request.model.dropout);
  request.model.validate();
  request.train.init_checkpoint = absolute_path(pretrained.dir);
  request.tokenizer_model = pretrained.tokenizer_model;
  check_same_tokenizer(request.train.data_dir, Tokenizer::from_serialized(pretrained.tokenizer_model), pretrained.dir);
}

// A new run: its data, objective, model and tokenizer from the flags.
void setup_new_run(const cxxopts::ParseResult& r, TrainRequest& request) {
  require_option(r, "data");
  require_option(r, "out");
  // Stored absolute, so that --resume works from any working directory.
  request.train.data_dir = absolute_path(r["data"].as<std::string>());
  request.train.out_dir = r["out"].as<std::string>();
  apply_training_flags(r, request.train, /*only_given=*/false);
  request.train.objective = has_init_checkpoint(r) ? init_objective(r, request.train.data_dir)
                                                   : default_objective(requested_arch(r), is_pairs_dir(request.train.data_dir));
  override_from(r, "objective", request.train.objective);
  reject_flags_of_other_objectives(r, request.train.objective);
  if (request.train.objective == Objective::kClassify) {
    setup_classifier(r, request);
  } else if (has_init_checkpoint(r)) {
    if (r.count("val-data")) throw UsageError("--val-data is for --objective classify");
    setup_continued(r, request);
  } else {
    if (r.count("val-data")) throw UsageError("--val-data is for --objective classify");
    const auto manifest = read_manifest(request.train.data_dir);
    const Tokenizer tokenizer = Tokenizer::load(request.train.data_dir);
    request.tokenizer_model = tokenizer.serialized();
    if (manifest.value("tokenizer_hash", "") != tokenizer.hash()) {
      throw std::runtime_error("the tokenizer in " + request.train.data_dir +
                               " does not match the manifest's tokenizer hash");
    }
    request.model = model_config_from_flags(r, tokenizer.vocab_size());
  }
}

// The device a run asks for: --device, else the stored run's on --resume, else TrainConfig's default.
std::string requested_device(const cxxopts::ParseResult& r) {
  if (r.count("device") || !r.count("resume")) return r["device"].as<std::string>();
  const std::string stored = find_complete_checkpoint(r["resume"].as<std::string>(), "last");
  if (stored.empty()) return TrainConfig().device;
  try {
    return open_checkpoint(stored).train.device;
  } catch (const std::exception&) {
    return TrainConfig().device;  // setup_resume reports the broken checkpoint
  }
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
  const std::string device_setting = requested_device(r);
  torch::Device device = resolve_device(device_setting);
  if (device.is_cuda()) {
    if (device_setting.find(':') != std::string::npos) {
      throw UsageError("--device " + device_setting + ": under torchrun each rank trains on cuda:LOCAL_RANK; pass "
                       "--device cuda (or auto)");
    }
    device = torch::Device(torch::kCUDA, int8_t(env->local_rank));
  } else {
    device = torch::kCPU;
  }
  return connect_ranks(*env, device, std::chrono::milliseconds(int64_t(timeout_s * 1000)));
}

// Every setting a rank trains with, as one string the ranks compare.
std::string run_settings(const TrainRequest& request) {
  return nlohmann::json({{"model", request.model}, {"train", request.train},
                         {"tokenizer_bytes", request.tokenizer_model.size()},
                         {"tokenizer_digest", std::hash<std::string>()(request.tokenizer_model)}})
      .dump();
}

// The run's request, its settings agreed by every rank, and its directory taken (locked, leftovers recovered).
// Returns true when the run directory did not exist before.
bool set_up_request(const cxxopts::ParseResult& r, Communicator* ranks, bool lead, TrainRequest& request,
                    std::unique_ptr<RunLock>& run_lock) {
  if (r.count("resume")) {
    const std::string run_dir = r["resume"].as<std::string>();
    on_ranks_agreeing(ranks, lead, [&] {
      if (!std::filesystem::is_directory(run_dir)) throw std::runtime_error(run_dir + " has no last/ checkpoint to resume from");
      run_lock = std::make_unique<RunLock>(run_dir);
      recover_run_dir(run_dir);  // a swap a crash cut short: its complete checkpoint back in place as last/
    }, "open the run " + run_dir);
    on_ranks_agreeing(ranks, true, [&] { setup_resume(r, request); }, "set up the run");
  } else {
    on_ranks_agreeing(ranks, true, [&] { setup_new_run(r, request); }, "set up the run");
  }
  on_ranks_agreeing(ranks, true, [&] {
    request.train.validate();
    // A bad --device, or fp16 off CUDA, is refused before the run directory is made.
    if (!resolve_device(request.train.device).is_cuda() && request.train.precision == Precision::kFp16) {
      throw UsageError("--precision fp16 needs a CUDA device (on the CPU use bf16)");
    }
  }, "set up the run");
  if (ranks) require_same_settings(*ranks, run_settings(request));
  const std::string run_dir = request.train.out_dir;
  const bool new_run_dir = !std::filesystem::exists(run_dir);
  if (!r.count("resume")) {  // (a resumed run's directory was taken above)
    on_ranks_agreeing(ranks, lead, [&] {
      refuse_existing_run(run_dir);  // before the lock creates the directory
      run_lock = std::make_unique<RunLock>(run_dir);
      refuse_existing_run(run_dir);  // a run that finished meanwhile
      recover_run_dir(run_dir);      // leftovers of a run killed before its first checkpoint
    }, "take the run directory " + run_dir);
  }
  return new_run_dir;
}

// train_model; a new run directory refused before the run logged or saved anything is removed.
TrainResult train_cleaning_up(const TrainRequest& request, bool lead, bool new_run_dir) {
  const std::string run_dir = request.train.out_dir;
  try {
    return train_model(request);
  } catch (...) {
    if (!lead) throw;
    std::error_code ec;
    const auto metrics_size = std::filesystem::file_size(run_dir + "/metrics.jsonl", ec);
    const bool nothing_written = !holds_checkpoint(run_dir) && (ec || metrics_size == 0);
    if (new_run_dir && nothing_written) std::filesystem::remove_all(run_dir, ec);
    throw;
  }
}

// The summary line: the last JSON line on stdout.
void print_result(const TrainRequest& request, const TrainResult& result) {
  auto finite_or_null = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  std::cout << nlohmann::json({{"step", result.state.step},
                               {"train_loss", result.last_train_loss},
                               {"val_loss", std::isnan(result.last_val_loss) ? nlohmann::json(nullptr)
                                                                             : nlohmann::json(result.last_val_loss)},
                               {"best_val_loss", finite_or_null(result.state.best_val_loss)},
                               {"run_dir", request.train.out_dir},
                               {"interrupted", result.interrupted},
                               {"peak_host_memory_bytes", peak_host_memory_bytes()},
                               {"peak_device_memory_bytes", result.peak_device_memory_bytes}})
                   .dump()
            << std::endl;
}

}  // namespace

int run_train(int argc, char** argv) {
  cxxopts::Options options("lmzoo train", "Train a language model on prepared token shards.");
  add_options(options);
  cxxopts::ParseResult r;
  if (parse_or_help(options, argc, argv, r)) return 0;
  apply_thread_option(r);

  // Under torchrun the ranks join first; each setup step then succeeds on every rank or stops every rank.
  const std::unique_ptr<Communicator> ranks = join_ranks_if_launched(r);
  const bool lead = !ranks || ranks->rank() == 0;  // rank 0 owns the run directory

  TrainRequest request;
  std::unique_ptr<RunLock> run_lock;  // one live run per run directory, held until this process ends
  const bool new_run_dir = set_up_request(r, ranks.get(), lead, request, run_lock);
  request.run_dir_locked = true;
  request.ranks = ranks.get();
  const TrainResult result = train_cleaning_up(request, lead, new_run_dir);
  if (!lead) return result.interrupted ? 130 : 0;  // rank 0 reports the run
  print_result(request, result);
  return result.interrupted ? 130 : 0;
}

}  // namespace lmzoo::cli
