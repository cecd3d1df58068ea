// TorchScript export of every family: a torch::jit::Module holding the weights and scripted methods that
// run for any batch size and any length up to the context, matching lmzoo's outputs. The model config (JSON
// string attribute config_json) and the serialized tokenizer (uint8 buffer tokenizer_model) travel with it.
// Leaves out: KV caches and generation loops (callers run the scripted forward / decode repeatedly).
#pragma once
#include <string>
#include <vector>

#include <torch/script.h>

#include "models/registry.h"

namespace lmzoo {

// GPT: forward(input_ids (B, T)) -> logits (B, T, V).
torch::jit::Module export_gpt(GPT& model, const std::string& tokenizer_model);

// BERT (torchscript_export_bert.cpp). attention_mask (1 real, 0 pad) and token_type_ids are optional:
//   forward(input_ids, attention_mask=None, token_type_ids=None) -> MLM logits (B, T, V)
//   encode(input_ids, attention_mask=None, token_type_ids=None) -> (hidden states (B, T, C), pooled (B, C))
torch::jit::Module export_bert(Bert& model, const std::string& tokenizer_model);
// BERT classifier: forward(...) -> class logits (B, n_labels), encode(...) as BERT's; attribute
// labels (List[str]), also in config_json.
torch::jit::Module export_bert_classifier(BertClassifier& model, const std::string& tokenizer_model);

// T5 (torchscript_export_t5.cpp):
//   forward(input_ids (B, S), attention_mask (B, S) or None, decoder_input_ids (B, T)) -> logits (B, T, V)
//   encode(input_ids, attention_mask=None) -> encoder hidden states (B, S, C)
//   decode(decoder_input_ids, encoder_hidden, attention_mask=None) -> logits (B, T, V)
torch::jit::Module export_t5(T5& model, const std::string& tokenizer_model);

// The export of any model, with one line per scripted method (its signature with shapes).
struct ExportedModel {
  torch::jit::Module module;
  std::vector<std::string> methods;
};
ExportedModel export_model(const AnyModel& model, const std::string& tokenizer_model);

}  // namespace lmzoo
