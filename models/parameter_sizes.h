// The parameters a model of a config holds, by checkpoint name with their element counts, from the config alone
// (no module is built), and the one parameter count: their sum less the parts a published convention leaves out.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/config.h"

namespace lmzoo {

struct NamedSize {
  std::string name;  // as the built module's named_parameters() gives it ("h.0.attn.c_attn.weight")
  int64_t elements = 0;
  bool projection = false;  // an attention or feed-forward projection's weight matrix inside a block
};

// Every parameter of the model CONFIG builds (a tied head once, under the embedding's name), in no fixed order.
std::vector<NamedSize> parameter_sizes(const ModelConfig& config);

// Elements of the parameters whose name contains any of PARTS.
int64_t elements_named(const std::vector<NamedSize>& sizes, const std::vector<std::string>& parts);

// Parts of a model that published counts leave out, each known by its modules' checkpoint names.
enum class ParameterPart {
  kPositionTable,  // a learned position table: wpe (gpt, t5 stacks), position_embeddings (bert); bias tables stay
  kPooler,         // bert's pooler (Hugging Face's RoBERTa and DistilBERT masked-LM classes have none)
  kMlmHead,        // bert's MLM head: mlm_dense, mlm_ln, mlm_decoder, mlm_bias (Google's BERT counts leave it out)
};

// Whether the parameter NAME belongs to PART: one of its dotted components is one of the part's module names.
bool in_part(const std::string& name, ParameterPart part);

// The parameters of the model CONFIG builds (parameter_sizes: a tied head once, a classifier's head included),
// less those in the EXCLUDED parts. MFU's N leaves out kPositionTable; gpt2: 124,439,808 in all.
int64_t parameter_count(const ModelConfig& config, const std::vector<ParameterPart>& excluded = {});

}  // namespace lmzoo
