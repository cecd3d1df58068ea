// What Llama's kin (Qwen2, Mistral) share with Llama: its config fields, its tensor names and the shape every
// Llama-family twin needs.
#pragma once
#include <vector>

#include "models/hf/fields.h"
#include "models/hf_weights.h"

namespace lmzoo::hf {

// Llama's config.json fields into D.config: RoPE (rope_theta from 4.x's key or 5.x's rope_parameters), RMSNorm,
// SwiGLU, grouped-query attention, biases everywhere or nowhere.
void read_llama_config(const HfFields& f, HfModelDescription& d);

// Llama's config.json keys for C, rope_theta written both as 4.x and 5.x read it.
json llama_fields(const ModelConfig& c);

// model.embed_tokens, model.layers.N.{self_attn.q/k/v/o_proj, mlp.gate/up/down_proj, norms}, model.norm, lm_head.
std::vector<HfWeightRule> llama_weights(const ModelConfig& c, HfArchitecture a);

// Whether C is a gpt with rope that GPT-NeoX did not claim; throws "no twin" when it is but is no Llama-family
// decoder (whole-head rope, pre-norm RMSNorm, SwiGLU). FAMILY names the family asking.
bool llama_family_shape(const ModelConfig& c, const std::string& family);

std::string llama_canonical_name(HfArchitecture a, const std::string& name);
bool llama_ignorable(HfArchitecture a, const ModelConfig& c, const std::string& name);

}  // namespace lmzoo::hf
