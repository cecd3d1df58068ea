// Hugging Face tensor names <-> lmzoo parameters: each family's rule table (models/hf/) used both ways (import: HF
// tensors -> parameters; export: parameters -> HF tensors, canonical names).
// Leaves out: reading and writing files (data/safetensors.h) and config.json (hf_config.h).
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "models/hf_config.h"

namespace lmzoo {

enum class HfLayout {
  kSame,    // HF stores the parameter as lmzoo does ([out, in] for a linear layer)
  kConv1D,  // GPT-2's Conv1D: 2-D weights stored transposed, [in, out]
  // GPT-NeoX's query_key_value: rows grouped per head, (n_head, 3, head_size) = [q_h; k_h; v_h] for each head h,
  // where lmzoo's fused c_attn holds (3, n_head, head_size) = [q; k; v] (weight and bias alike)
  kHeadInterleavedQkv,
};

// One lmzoo parameter and the HF tensors that hold it: their rows (dim 0, after the layout) concatenated, e.g.
// lmzoo's fused c_attn = [q_proj; k_proj; v_proj]. rows gives each HF tensor's share (empty for one tensor).
struct HfWeightRule {
  std::string lmzoo;
  std::vector<std::string> hf;
  std::vector<int64_t> rows;
  HfLayout layout = HfLayout::kSame;
  bool optional = false;  // the HF class may or may not hold it (BertForMaskedLM's pooler): imported when
                          // present, never exported
  std::string also_written_as;  // a second name export writes the tensor under (RoBERTa's lm_head.decoder.bias)
  // The parameter is one part of a single HF tensor whose rows are split as ROWS (Phi-3's gate_up_proj =
  // [gate; up]): part INDEX. Empty rows: the parameter is the whole of its HF tensors.
  struct Part {
    std::vector<int64_t> rows;
    int64_t index = 0;
  } part = {};
};

// Every lmzoo parameter that ARCHITECTURE stores, in the order transformers lists them. Parameters without a rule
// (a classifier's unused masked-LM head) have no place in that class.
std::vector<HfWeightRule> hf_weight_rules(HfArchitecture architecture, const ModelConfig& config);

// The HF tensors (canonical names, float32, on the CPU) of MODEL's parameters.
std::vector<std::pair<std::string, torch::Tensor>> hf_tensors_from_model(const torch::nn::Module& model,
                                                                         HfArchitecture architecture,
                                                                         const ModelConfig& config);

struct HfImportReport {
  std::vector<std::string> kept_initial;  // lmzoo parameters the checkpoint does not hold (left as initialised)
  std::vector<std::string> ignored;       // checkpoint tensors lmzoo has no use for (buffers, tied copies, NSP head)
};

// Throws HfFormatError "tensor 'NAME' has dtype Int where a floating-point weight belongs" unless T is floating
// point, or "tensor 'NAME' holds 3 NaN or infinite values (...)" unless every value is finite.
void check_hf_weight(const std::string& name, const torch::Tensor& t);

// Copies the HF tensors (names as found in the file: with or without the base-model prefix, gamma/beta, tied
// copies; any float dtype) into MODEL's parameters. Throws HfFormatError naming the first missing tensor, a shape
// that differs from the config's, a tensor that is not floating point or holds NaN / Inf, or one lmzoo cannot place.
HfImportReport load_hf_tensors(torch::nn::Module& model, HfArchitecture architecture, const ModelConfig& config,
                               const std::map<std::string, torch::Tensor>& tensors);

}  // namespace lmzoo
