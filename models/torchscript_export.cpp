// TorchScript export of GPT: the forward pass written out as TorchScript source, layer by
// layer for the config's switches, compiled by define() against the registered weights.
#include "models/torchscript_export.h"

#include <cmath>
#include <cstring>
#include <sstream>

namespace lmzoo {

std::string scripted_name(const std::string& parameter_name) {
  std::string s = parameter_name;
  for (char& c : s) if (c == '.') c = '_';
  return s;
}

namespace {

using Names = std::set<std::string>;

std::string param_or_none(const Names& names, const std::string& name) {
  return names.count(name) ? "self." + scripted_name(name) : "None";
}

std::string norm_code(const Names& model, const ModelConfig& c, const std::string& prefix,
                      const std::string& x) {
  std::ostringstream s;
  if (c.norm == "rmsnorm") {
    s << "(" << x << ".float() * torch.rsqrt(" << x << ".float().pow(2).mean(-1, keepdim=True) + " << c.norm_eps
      << ")).to(" << x << ".dtype) * self." << scripted_name(prefix + ".weight");
  } else {
    s << "torch.layer_norm(" << x << ", [" << c.d_model << "], self." << scripted_name(prefix + ".weight") << ", "
      << param_or_none(model, prefix + ".bias") << ", " << c.norm_eps << ")";
  }
  return s.str();
}

std::string linear_code(const Names& model, const std::string& prefix, const std::string& x) {
  return "torch.linear(" + x + ", self." + scripted_name(prefix + ".weight") + ", " +
         param_or_none(model, prefix + ".bias") + ")";
}

std::string activation_code(const std::string& name, const std::string& x) {
  if (name == "relu") return "torch.relu(" + x + ")";
  if (name == "gelu") return "torch.gelu(" + x + ")";
  if (name == "gelu-tanh") return "torch.gelu(" + x + ", approximate='tanh')";
  if (name == "silu") return "torch.silu(" + x + ")";
  throw std::invalid_argument("export: unsupported activation " + name);
}

}  // namespace

std::string gpt_torchscript_source(const ModelConfig& c, const std::set<std::string>& parameter_names) {
  const Names& m = parameter_names;
  const bool pre = c.norm_position == "pre";
  std::ostringstream s;
  s.precision(17);
  s << "def forward(self, input_ids: Tensor) -> Tensor:\n"
    << "    B = input_ids.size(0)\n"
    << "    T = input_ids.size(1)\n"
    << "    assert T <= " << c.max_seq_len << ", 'sequence longer than the context length'\n"
    << "    x = torch.embedding(self.wte_weight, input_ids)\n";  // (B, T, C)
  if (c.position == "learned") s << "    x = x + self.wpe_weight[:T]\n";
  s << "    pos = torch.arange(T, device=input_ids.device)\n"
    << "    blocked = pos.unsqueeze(0) > pos.unsqueeze(1)\n";  // (T, T) true above the diagonal
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string p = "h." + std::to_string(i) + ".";
    s << "    a = " << (pre ? norm_code(m, c, p + "ln_1", "x") : "x") << "\n"
      << "    qkv = " << linear_code(m, p + "attn.c_attn", "a") << ".view(B, T, 3, " << c.n_head << ", "
      << c.head_size() << ")\n"  // (B, T, 3, nh, hs)
      << "    q = qkv.select(2, 0).transpose(1, 2)\n"
      << "    k = qkv.select(2, 1).transpose(1, 2)\n"
      << "    v = qkv.select(2, 2).transpose(1, 2)\n"  // (B, nh, T, hs)
      << "    att = torch.matmul(q, k.transpose(-2, -1)) * " << 1.0 / std::sqrt(double(c.head_size())) << "\n"
      << "    att = torch.softmax(att.masked_fill(blocked, float('-inf')), -1)\n"
      << "    y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, " << c.d_model << ")\n"  // (B, T, C)
      << "    x = x + " << linear_code(m, p + "attn.c_proj", "y") << "\n";
    if (!pre) s << "    x = " << norm_code(m, c, p + "ln_1", "x") << "\n";
    s << "    f = " << (pre ? norm_code(m, c, p + "ln_2", "x") : "x") << "\n"
      << "    f = " << activation_code(c.activation, linear_code(m, p + "mlp.c_fc", "f")) << "\n"
      << "    x = x + " << linear_code(m, p + "mlp.c_proj", "f") << "\n";
    if (!pre) s << "    x = " << norm_code(m, c, p + "ln_2", "x") << "\n";
  }
  s << "    x = " << norm_code(m, c, "ln_f", "x") << "\n"
    << "    return torch.matmul(x, self." << (c.tie_embeddings ? "wte_weight" : "lm_head_weight") << ".t())\n";
  return s.str();
}

torch::jit::Module export_gpt(GPT& model, const std::string& tokenizer_model) {
  torch::jit::Module module("lmzoo.GPT");
  for (const auto& p : model->named_parameters()) {
    module.register_parameter(scripted_name(p.key()), p.value().detach().to(torch::kCPU).clone(), false);
  }
  module.register_attribute("config_json", c10::StringType::get(), nlohmann::json(model->config()).dump());
  auto tokenizer = torch::empty({int64_t(tokenizer_model.size())}, torch::kUInt8);
  std::memcpy(tokenizer.data_ptr(), tokenizer_model.data(), tokenizer_model.size());
  module.register_buffer("tokenizer_model", tokenizer);
  std::set<std::string> names;
  for (const auto& p : model->named_parameters()) names.insert(p.key());
  module.define(gpt_torchscript_source(model->config(), names));
  return module;
}

}  // namespace lmzoo
