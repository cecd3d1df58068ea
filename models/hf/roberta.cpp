// RoBERTa (RobertaForMaskedLM): BERT whose learned positions start at pad_token_id + 1, with its own LM head names.
#include "models/hf/bert.h"
#include "models/hf/family.h"

namespace lmzoo::hf {
namespace {

// BERT's fields; the position rows before pad_token_id + 1 are kept as position_offset, and the LM head applies erf
// GELU whatever hidden_act says.
void read(const HfFields& f, HfModelDescription& d) {
  read_bert_config(f, d);
  ModelConfig& c = d.config;
  const int64_t pad = f.integer("pad_token_id", 1);
  if (pad < 0) throw HfFormatError("config.json: pad_token_id " + std::to_string(pad) + " is negative");
  if (c.max_seq_len <= pad + 1) {
    throw HfFormatError("config.json: max_position_embeddings " + std::to_string(c.max_seq_len) +
                        " leaves no positions after RoBERTa's first pad_token_id + 1 = " + std::to_string(pad + 1) +
                        " rows");
  }
  c.position_offset = pad + 1;
  c.max_seq_len -= c.position_offset;
  if (c.activation != Activation::kGelu) {
    throw HfFormatError("config.json: hidden_act '" + f.text("hidden_act", "gelu") +
                        "' is not supported for RobertaForMaskedLM (its LM head applies gelu whatever hidden_act "
                        "says; lmzoo's head uses the encoder's activation)");
  }
}

// Claims a BERT-family encoder with token types whose positions start past 0.
std::optional<HfArchitecture> twin(const ModelConfig& c) {
  if (!bert_family_shape(c) || c.position_offset == 0 || c.type_vocab_size == 0) return std::nullopt;
  const std::string roberta = "RoBERTa";
  require_twin(c.labels.empty(), c, roberta,
               "its own classification head (dense + tanh + out_proj with dropouts), not lmzoo's pooler + classifier");
  require_twin(c.activation == Activation::kGelu, c, roberta, "activation gelu (its LM head applies gelu)");
  return HfArchitecture::kRobertaForMaskedLM;
}

json write(const ModelConfig& c, HfArchitecture, const HfTokenIds& ids) {
  // HF finds pads and counts positions by pad_token_id: it must name the row before position 0's.
  if (ids.pad >= 0 && ids.pad != c.position_offset - 1) {
    throw HfFormatError("this bert model has no Hugging Face twin: RoBERTa needs the tokenizer's pad id (" +
                        std::to_string(ids.pad) + ") to be position_offset - 1 = " +
                        std::to_string(c.position_offset - 1));
  }
  json j = bert_fields(c);
  j["pad_token_id"] = c.position_offset - 1;
  return j;
}

// BERT's encoder under "roberta." (no pooler in this class; roberta-base's file holds one, imported when present,
// never exported), lm_head.{dense, layer_norm, bias} (decoder tied unless untied).
std::vector<HfWeightRule> weights(const ModelConfig& c, HfArchitecture) {
  RuleList r(true);
  bert_encoder_rules(r, c, "", "roberta.");
  r.linear("mlm_dense", "lm_head.dense");
  r.norm("mlm_ln", "lm_head.layer_norm");
  r.tensor("mlm_bias", "lm_head.bias");
  // transformers 4.48 ties lm_head.bias to lm_head.decoder.bias by taking the decoder's: without this copy (which
  // its own save_pretrained leaves out) from_pretrained loses the output bias.
  r.also_written_as("lm_head.decoder.bias");
  if (!c.tie_embeddings) r.tensor("mlm_decoder.weight", "lm_head.decoder.weight");
  const size_t pooler = r.size();
  r.linear("pooler", "roberta.pooler.dense");
  r.mark_optional_from(pooler);
  return r.take();
}

std::string canonical_name(HfArchitecture, const std::string& name) { return with_encoder_prefix(name, "roberta."); }

// lm_head.decoder.bias is lm_head.bias; the decoder's weight, when tied, the embeddings.
bool ignorable(HfArchitecture, const ModelConfig& c, const std::string& name) {
  return ends_with(name, "embeddings.token_type_ids") || name == "lm_head.decoder.bias" ||
         (c.tie_embeddings && name == "lm_head.decoder.weight");
}

}  // namespace

const HfFamily& roberta_family() {
  static const HfFamily family{"roberta", {HfArchitecture::kRobertaForMaskedLM}, read, twin, write, weights,
                               canonical_name, ignorable};
  return family;
}

}  // namespace lmzoo::hf
