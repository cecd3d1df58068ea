// Hugging Face config.json <-> ModelConfig for the classes lmzoo maps: which HF fields change the math, which values
// lmzoo can represent, and the config transformers reads back. Each family's rules are its file in models/hf/.
// Leaves out: the weights (hf_weights.h) and the tokenizer files.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_table.h"
#include "models/config.h"

namespace lmzoo {

// The Hugging Face model classes lmzoo imports and exports; names as in config.json's "architectures".
enum class HfArchitecture {
  kGpt2LMHeadModel,
  kBertForMaskedLM,
  kBertModel,
  kBertForSequenceClassification,
  kT5ForConditionalGeneration,
  kLlamaForCausalLM,
  kQwen2ForCausalLM,
  kMistralForCausalLM,
  kGptNeoXForCausalLM,
  kRobertaForMaskedLM,
  kDistilBertForMaskedLM,
  kPhi3ForCausalLM,
};

template <>
struct EnumTable<HfArchitecture> {
  static constexpr const char* what = "Hugging Face architecture";
  static constexpr EnumEntry<HfArchitecture> entries[] = {
      {HfArchitecture::kGpt2LMHeadModel, "GPT2LMHeadModel", "GPT-2 with its tied LM head"},
      {HfArchitecture::kBertForMaskedLM, "BertForMaskedLM", "BERT encoder with the masked-LM head"},
      {HfArchitecture::kBertModel, "BertModel", "BERT encoder with its pooler, no head"},
      {HfArchitecture::kBertForSequenceClassification, "BertForSequenceClassification",
       "BERT encoder, pooler and a classifier"},
      {HfArchitecture::kT5ForConditionalGeneration, "T5ForConditionalGeneration", "T5 v1.0 / v1.1 encoder-decoder"},
      {HfArchitecture::kLlamaForCausalLM, "LlamaForCausalLM", "Llama (grouped-query attention, rope)"},
      {HfArchitecture::kQwen2ForCausalLM, "Qwen2ForCausalLM", "Qwen2 / Qwen2.5: Llama with q/k/v biases"},
      {HfArchitecture::kMistralForCausalLM, "MistralForCausalLM", "Mistral: Llama with a sliding attention window"},
      {HfArchitecture::kGptNeoXForCausalLM, "GPTNeoXForCausalLM",
       "GPT-NeoX / Pythia (parallel residual, partial rotary, untied embed_out)"},
      {HfArchitecture::kRobertaForMaskedLM, "RobertaForMaskedLM",
       "RoBERTa: BERT with positions from pad_token_id + 1 and its LM head"},
      {HfArchitecture::kDistilBertForMaskedLM, "DistilBertForMaskedLM", "DistilBERT: no token types, its own names"},
      {HfArchitecture::kPhi3ForCausalLM, "Phi3ForCausalLM",
       "Phi-3 / Phi-3.5: Llama with fused qkv_proj and gate_up_proj (imported; exported as Llama or Mistral)"},
  };
};

// A config or checkpoint that lmzoo cannot represent (or transformers could not load); one line naming the field.
class HfFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// config.json itself is what lmzoo refuses (a field's value, type or absence): bad input, not a damaged file.
class HfConfigError : public HfFormatError {
 public:
  using HfFormatError::HfFormatError;
};

// The JSON in the file PATH (a config.json, adapter_config.json): HfFormatError(MISSING) when the file cannot be
// read, HfFormatError "PATH is not valid JSON" when it does not parse.
nlohmann::json read_hf_json_file(const std::string& path, const std::string& missing);

struct HfModelDescription {
  HfArchitecture architecture;
  ModelConfig config;      // vocab_size = the embedding rows of the HF model (vocab_multiple 1)
  std::vector<std::string> notes;  // settings read loosely (e.g. dropouts lmzoo merges), one line each
  // T5 as transformers 5 saves v1.1: tied (no lm_head.weight in the file) but unscaled, which lmzoo holds as an
  // untied model whose lm_head starts as a copy of shared.weight.
  bool lm_head_from_shared = false;
};

// Reads a Hugging Face config.json object. Throws HfConfigError naming the first field whose value changes the
// model in a way lmzoo does not implement (e.g. "position_embedding_type 'relative_key' is not supported").
HfModelDescription model_config_from_hf(const nlohmann::json& hf);

// The HF class a lmzoo config maps onto, or HfFormatError with the reason there is none
// (e.g. "a gpt with position alibi has no Hugging Face twin: GPT-2 needs learned positions, Llama rope").
HfArchitecture hf_architecture_of(const ModelConfig& config);

// Token ids written into the exported config.json (-1: none).
struct HfTokenIds {
  int64_t pad = -1, bos = -1, eos = -1;
};

// The config.json transformers builds ARCHITECTURE from; its vocab_size is config.padded_vocab() (every row).
nlohmann::json hf_config_from_model(const ModelConfig& config, HfArchitecture architecture, const HfTokenIds& ids);

// Rows per vocab_multiple such that a tokenizer of TOKENS ids fills an embedding of ROWS rows:
// the smallest power of two m with ceil(tokens / m) * m == rows, else rows itself. Throws if tokens > rows.
int64_t vocab_multiple_for(int64_t tokens, int64_t rows);

}  // namespace lmzoo
