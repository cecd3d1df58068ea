// TorchScript source for lmzoo's layers, op for op as models/layers and models/blocks compute them
// (so exports match within float rounding), and the shared export module skeleton.
// Shapes: B batch, T query positions, S key positions, C d_model, nh heads, hs head size.
#include "models/torchscript_source.h"

#include <cstring>
#include <iomanip>
#include <stdexcept>

namespace lmzoo::script {

std::string scripted_name(const std::string& parameter_name) {
  std::string s = parameter_name;
  for (char& c : s) if (c == '.') c = '_';
  return s;
}

std::string literal(double value) {
  std::ostringstream s;
  s << std::setprecision(17) << value;
  std::string text = s.str();
  if (text.find_first_of(".e") == std::string::npos) text += ".0";  // a float, not an int
  return text;
}

torch::jit::Module new_module(const std::string& type_name, torch::nn::Module& model, const ModelConfig& config,
                              const std::string& tokenizer_model) {
  torch::jit::Module module(type_name);
  for (const auto& p : model.named_parameters()) {
    module.register_parameter(scripted_name(p.key()), p.value().detach().to(torch::kCPU).clone(), false);
  }
  module.register_attribute("config_json", c10::StringType::get(), nlohmann::json(config).dump());
  auto tokenizer = torch::empty({int64_t(tokenizer_model.size())}, torch::kUInt8);
  std::memcpy(tokenizer.data_ptr(), tokenizer_model.data(), tokenizer_model.size());
  module.register_buffer("tokenizer_model", tokenizer);
  return module;
}

SourceWriter::SourceWriter(const ModelConfig& config, const torch::nn::Module& model) : config_(config) {
  for (const auto& p : model.named_parameters()) names_.insert(p.key());
}

void SourceWriter::def(const std::string& signature) { methods_.push_back("def " + signature + ":\n"); }

void SourceWriter::line(const std::string& statement) {
  if (methods_.empty()) throw std::logic_error("export: a statement before the first def");
  methods_.back() += "    " + statement + "\n";
}

void SourceWriter::line(const std::string& statement, const std::string& shape) { line(statement + "  # " + shape); }

std::string SourceWriter::str() const {
  std::string all;
  for (const auto& m : methods_) all += m;
  return all;
}

void SourceWriter::define(torch::jit::Module& module) const {
  for (const auto& m : methods_) module.define(m);
}

std::string SourceWriter::param(const std::string& name) const {
  if (!has(name)) throw std::logic_error("export: the model has no parameter " + name);
  return "self." + scripted_name(name);
}

std::string SourceWriter::norm(const std::string& prefix, const std::string& x) const {
  const std::string eps = literal(config_.norm_eps);
  if (config_.norm == "rmsnorm") {  // variance in fp32, as NormImpl
    return "(" + x + ".float() * torch.rsqrt(" + x + ".float().pow(2).mean(-1, keepdim=True) + " + eps + ")).to(" +
           x + ".dtype) * " + param(prefix + ".weight");
  }
  const std::string bias = has(prefix + ".bias") ? param(prefix + ".bias") : "None";
  return "torch.layer_norm(" + x + ", [" + std::to_string(config_.d_model) + "], " + param(prefix + ".weight") +
         ", " + bias + ", " + eps + ")";
}

std::string SourceWriter::linear(const std::string& prefix, const std::string& x) const {
  const std::string bias = has(prefix + ".bias") ? param(prefix + ".bias") : "None";
  return "torch.linear(" + x + ", " + param(prefix + ".weight") + ", " + bias + ")";
}

std::string SourceWriter::activation(const std::string& x) const {
  const std::string& name = config_.activation;
  if (name == "relu") return "torch.relu(" + x + ")";
  if (name == "gelu") return "torch.gelu(" + x + ")";
  if (name == "gelu-tanh" || name == "geglu") return "torch.gelu(" + x + ", approximate='tanh')";
  if (name == "silu" || name == "swiglu") return "torch.silu(" + x + ")";
  throw std::invalid_argument("export: unsupported activation " + name);
}

std::string SourceWriter::feed_forward(const std::string& prefix, const std::string& x) const {
  std::string hidden = activation(linear(prefix + ".c_fc", x));  // (B, T, ff)
  if (config_.gated_ffn()) hidden = hidden + " * " + linear(prefix + ".c_fc_lin", x);
  return linear(prefix + ".c_proj", hidden);
}

void SourceWriter::attend(const std::string& blocked, const std::string& bias) {
  const double scale = config_.attention_scale();
  line("att = torch.matmul(q, k.transpose(-2, -1))" + (scale != 1.0 ? " * " + literal(scale) : std::string()),
       "(B, nh, T, S)");
  if (!bias.empty()) line("att = att + " + bias);
  if (!blocked.empty()) line("att = att.masked_fill(" + blocked + ", float('-inf'))");
  line("y = torch.matmul(torch.softmax(att, -1), v).transpose(1, 2).reshape(B, T, " +
           std::to_string(config_.attn_dim()) + ")",
       "(B, T, nh*hs)");
}

std::string SourceWriter::self_attention(const std::string& prefix, const std::string& x, const std::string& blocked,
                                         const std::string& bias) {
  const std::string heads = std::to_string(config_.n_head) + ", " + std::to_string(config_.head_size());
  line("qkv = " + linear(prefix + ".c_attn", x) + ".view(B, T, 3, " + heads + ")", "(B, T, 3, nh, hs)");
  line("q = qkv.select(2, 0).transpose(1, 2)", "(B, nh, T, hs)");
  line("k = qkv.select(2, 1).transpose(1, 2)");
  line("v = qkv.select(2, 2).transpose(1, 2)");
  attend(blocked, bias);
  return linear(prefix + ".c_proj", "y");
}

std::string SourceWriter::cross_attention(const std::string& prefix, const std::string& x, const std::string& memory,
                                          const std::string& blocked) {
  const std::string heads = std::to_string(config_.n_head) + ", " + std::to_string(config_.head_size());
  line("q = " + linear(prefix + ".c_q", x) + ".view(B, T, " + heads + ").transpose(1, 2)", "(B, nh, T, hs)");
  line("kv = " + linear(prefix + ".c_kv", memory) + ".view(B, S, 2, " + heads + ")", "(B, S, 2, nh, hs)");
  line("k = kv.select(2, 0).transpose(1, 2)", "(B, nh, S, hs)");
  line("v = kv.select(2, 1).transpose(1, 2)");
  attend(blocked, "");
  return linear(prefix + ".c_proj", "y");
}

void SourceWriter::residual(const std::string& norm_prefix,
                            const std::function<std::string(const std::string&)>& sublayer) {
  if (config_.norm_position == "pre") {
    line("a = " + norm(norm_prefix, "x"));
    line("x = x + " + sublayer("a"));
  } else {
    line("x = x + " + sublayer("x"));
    line("x = " + norm(norm_prefix, "x"));
  }
}

void SourceWriter::block(const std::string& prefix, const std::string& blocked, const std::string& bias) {
  residual(prefix + ".ln_1", [&](const std::string& in) { return self_attention(prefix + ".attn", in, blocked, bias); });
  residual(prefix + ".ln_2", [&](const std::string& in) { return feed_forward(prefix + ".mlp", in); });
}

void SourceWriter::decoder_block(const std::string& prefix, const std::string& blocked, const std::string& bias,
                                 const std::string& memory, const std::string& memory_blocked) {
  residual(prefix + ".ln_1", [&](const std::string& in) { return self_attention(prefix + ".attn", in, blocked, bias); });
  residual(prefix + ".ln_2",
           [&](const std::string& in) { return cross_attention(prefix + ".cross_attn", in, memory, memory_blocked); });
  residual(prefix + ".ln_3", [&](const std::string& in) { return feed_forward(prefix + ".mlp", in); });
}

}  // namespace lmzoo::script
