// The request of a run that starts: a new model, a continued run from a checkpoint, a classifier fine-tune.
#include "train/run/run_setup.h"

#include <filesystem>
#include <stdexcept>

#include "data/chat/chat_data.h"
#include "data/corpus/labelled_text.h"
#include "data/corpus/pairs.h"
#include "models/presets.h"
#include "train/run/run_inputs.h"

namespace lmzoo {

namespace {

// A checkpoint's MODEL with the spec's dropout (when it names one), validated.
ModelConfig with_dropout(ModelConfig model, const std::optional<double>& dropout) {
  if (dropout) model.dropout = *dropout;
  model.validate();
  return model;
}

}  // namespace

std::string absolute_path(const std::string& path) {
  return path.empty() ? path : std::filesystem::weakly_canonical(std::filesystem::absolute(path)).string();
}

ChatSettings chat_settings_for(const std::string& data, const ChatSettings& pretrained) {
  return is_chat_dir(data) ? read_chat_settings(data) : pretrained;
}

Objective data_objective(Arch arch, const std::string& data) {
  if (arch == Arch::kGpt && is_chat_dir(data)) return Objective::kChat;
  return default_objective(arch, is_pairs_dir(data));
}

Objective checkpoint_objective(const CheckpointInfo& pretrained, const std::string& data) {
  if (pretrained.model.arch == Arch::kBert && !std::filesystem::is_directory(data)) return Objective::kClassify;
  return data_objective(pretrained.model.arch, data);
}

ModelConfig sized_to_vocab(ModelConfig model, int64_t vocab) {
  if (model.vocab_size != 0 && model.vocab_size != vocab) {
    throw std::runtime_error("model config vocab_size " + std::to_string(model.vocab_size) +
                             " does not match the data's tokenizer (" + std::to_string(vocab) + ")");
  }
  model.vocab_size = vocab;
  return model;
}

TrainRequest new_model_request(const RunSpec& spec, const Tokenizer& tokenizer) {
  TrainRequest request;
  request.train = spec.train;
  request.train.data_dir = absolute_path(spec.train.data_dir);
  ModelConfig model = spec.model;
  if (!spec.preset.empty()) {
    model = find_preset(spec.preset).config;
    model.vocab_size = 0;
  }
  request.model = sized_to_vocab(model, tokenizer.vocab_size());
  request.model.validate();
  request.tokenizer_model = tokenizer.serialized();
  request.chat = chat_settings_for(request.train.data_dir, ChatSettings{});
  return request;
}

TrainRequest continued_run_request(const RunSpec& spec) {
  const CheckpointInfo pretrained = open_checkpoint(spec.train.init_checkpoint);
  if (!pretrained.model.labels.empty()) {
    throw std::invalid_argument("--init " + pretrained.dir + " is a classifier; it trains with --objective classify only");
  }
  TrainRequest request;
  request.train = spec.train;
  request.train.data_dir = absolute_path(spec.train.data_dir);
  request.model = with_dropout(pretrained.model, spec.dropout);
  request.train.init_checkpoint = absolute_path(pretrained.dir);
  request.tokenizer_model = pretrained.tokenizer_model;
  request.chat = chat_settings_for(request.train.data_dir, pretrained.chat);
  check_same_tokenizer(request.train.data_dir, Tokenizer::from_serialized(pretrained.tokenizer_model), pretrained.dir);
  return request;
}

TrainRequest classifier_request(const RunSpec& spec) {
  if (spec.train.init_checkpoint.empty()) {
    throw std::invalid_argument("a classifier fine-tune needs an init_checkpoint: the pretrained bert");
  }
  const CheckpointInfo pretrained = open_checkpoint(spec.train.init_checkpoint);
  if (pretrained.model.arch != Arch::kBert) {
    throw std::invalid_argument("--init " + pretrained.dir + " holds a " + enum_name(pretrained.model.arch) +
                                " model; classification fine-tunes a bert");
  }
  TrainRequest request;
  request.train = spec.train;
  request.train.data_dir = absolute_path(spec.train.data_dir);
  request.train.init_checkpoint = absolute_path(pretrained.dir);
  request.train.val_data = absolute_path(spec.train.val_data);
  ModelConfig classifier = pretrained.model;
  classifier.labels = label_set(read_labelled_text(request.train.data_dir));
  request.model = with_dropout(classifier, spec.dropout);
  request.tokenizer_model = pretrained.tokenizer_model;
  return request;
}

TrainRequest new_run_request(const RunSpec& spec) {
  if (spec.train.objective == Objective::kClassify) return classifier_request(spec);
  if (!spec.train.init_checkpoint.empty()) return continued_run_request(spec);
  return new_model_request(spec, data_tokenizer(absolute_path(spec.train.data_dir)));
}

}  // namespace lmzoo
