// TorchScript source for lmzoo's layers, op for op as models/layers and models/blocks compute them
// (so exports match within float rounding), and the shared export module skeleton.
// Shapes: B batch, T query positions, S key positions, C d_model, nh heads, hs head size.
#include "models/torchscript_source.h"

#include <cmath>
#include <cstring>
#include <iomanip>
#include <stdexcept>

#include "models/layers/positions.h"

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
  if (config_.kv_heads() != config_.n_head) {  // query head h reads key/value head h / group, as attention.cpp
    const std::string group = std::to_string(config_.n_head / config_.kv_heads());
    line("k = k.repeat_interleave(" + group + ", 1)", "(B, nh, S, hs)");
    line("v = v.repeat_interleave(" + group + ", 1)");
  }
  line("att = torch.matmul(q, k.transpose(-2, -1))" + (scale != 1.0 ? " * " + literal(scale) : std::string()),
       "(B, nh, T, S)");
  if (!bias.empty()) line("att = att + " + bias);
  if (!blocked.empty()) line("att = att.masked_fill(" + blocked + ", float('-inf'))");
  line("y = torch.matmul(torch.softmax(att, -1), v).transpose(1, 2).reshape(B, T, " +
           std::to_string(config_.attn_dim()) + ")",
       "(B, T, nh*hs)");
}

void SourceWriter::rotate(const std::string& name) {
  const std::string half = std::to_string(config_.head_size() / 2);
  line(name + " = " + name + " * rope_cos + torch.cat([-" + name + "[..., " + half + ":], " + name + "[..., :" + half +
       "]], -1) * rope_sin");
}

std::string SourceWriter::self_attention(const std::string& prefix, const std::string& x, const std::string& blocked,
                                         const std::string& bias) {
  const int64_t hs = config_.head_size(), q_width = config_.attn_dim(), kv_width = config_.kv_dim();
  const std::string heads = std::to_string(config_.n_head) + ", " + std::to_string(hs);
  const std::string kv_heads = std::to_string(config_.kv_heads()) + ", " + std::to_string(hs);
  const std::string q_end = std::to_string(q_width), k_end = std::to_string(q_width + kv_width);
  line("qkv = " + linear(prefix + ".c_attn", x), "(B, T, (nh + 2 n_kv) * hs)");
  line("q = qkv[:, :, :" + q_end + "].reshape(B, T, " + heads + ").transpose(1, 2)", "(B, nh, T, hs)");
  line("k = qkv[:, :, " + q_end + ":" + k_end + "].reshape(B, T, " + kv_heads + ").transpose(1, 2)",
       "(B, n_kv, T, hs)");
  line("v = qkv[:, :, " + k_end + ":].reshape(B, T, " + kv_heads + ").transpose(1, 2)");
  if (config_.position == "rope") {
    rotate("q");
    rotate("k");
  }
  attend(blocked, bias);
  return linear(prefix + ".c_proj", "y");
}

std::string SourceWriter::cross_attention(const std::string& prefix, const std::string& x, const std::string& memory,
                                          const std::string& blocked) {
  const int64_t hs = config_.head_size(), kv_width = config_.kv_dim();
  const std::string heads = std::to_string(config_.n_head) + ", " + std::to_string(hs);
  const std::string kv_heads = std::to_string(config_.kv_heads()) + ", " + std::to_string(hs);
  line("q = " + linear(prefix + ".c_q", x) + ".view(B, T, " + heads + ").transpose(1, 2)", "(B, nh, T, hs)");
  line("kv = " + linear(prefix + ".c_kv", memory), "(B, S, 2 * n_kv * hs) as [k; v]");
  line("k = kv[:, :, :" + std::to_string(kv_width) + "].reshape(B, S, " + kv_heads + ").transpose(1, 2)",
       "(B, n_kv, S, hs)");
  line("v = kv[:, :, " + std::to_string(kv_width) + ":].reshape(B, S, " + kv_heads + ").transpose(1, 2)");
  attend(blocked, "");
  return linear(prefix + ".c_proj", "y");
}

void SourceWriter::relative_bias_method(const std::string& name, const std::string& weight, bool bidirectional) {
  const int64_t buckets = bidirectional ? config_.relative_buckets / 2 : config_.relative_buckets;
  const int64_t max_exact = buckets / 2;
  const double log_ratio = std::log(double(config_.relative_max_distance) / double(max_exact));
  const std::string me = std::to_string(max_exact);
  def(name + "(self, T: int, S: int) -> Tensor");
  line("device = " + param(weight) + ".device");
  line("query = torch.arange(T, device=device).view(-1, 1)", "(T, 1)");
  line("key = torch.arange(S, device=device).view(1, -1)", "(1, S)");
  line("rp = key - query", "(T, S)");
  line("buckets = torch.zeros_like(rp)");
  if (bidirectional) {
    line("buckets = buckets + (rp > 0).long() * " + std::to_string(buckets));
    line("rp = rp.abs()");
  } else {
    line("rp = -torch.min(rp, torch.zeros_like(rp))");
  }
  line("is_small = rp < " + me);
  line("large = (torch.log(rp.float() / " + me + ") / " + literal(log_ratio) + " * " +
       std::to_string(buckets - max_exact) + ").long() + " + me);
  line("large = torch.min(large, torch.full_like(large, " + std::to_string(buckets - 1) + "))");
  line("buckets = buckets + torch.where(is_small, rp, large)");
  line("bias = torch.embedding(" + param(weight) + ", buckets)", "(T, S, nh)");
  line("return bias.permute(2, 0, 1).unsqueeze(0)", "(1, nh, T, S)");
}

std::string SourceWriter::position_setup(const std::string& learned_table, const std::string& device) {
  const std::string& position = config_.position;
  const std::string f64 = "dtype=torch.float64, device=" + device;
  if (position == "learned") line("x = x + " + param(learned_table) + "[:T]", "(T, C) broadcast over B");
  if (position == "sinusoidal") {  // as sinusoidal_table, in float64 then rounded
    const std::string C = std::to_string(config_.d_model);
    line("angle = torch.arange(T, " + f64 + ").unsqueeze(1) * torch.pow(10000.0, -torch.arange(0, " + C + ", 2, " +
             f64 + ") / " + C + ")",
         "(T, C/2)");
    line("x = x + torch.stack([torch.sin(angle), torch.cos(angle)], -1).reshape(T, " + C + ").float()", "(T, C)");
  }
  if (position == "rope") {  // as rotary_tables
    const std::string hs = std::to_string(config_.head_size());
    line("angle = torch.arange(T, " + f64 + ").unsqueeze(1) * torch.pow(" + literal(config_.rope_base) +
             ", -torch.arange(0, " + hs + ", 2, " + f64 + ") / " + hs + ")",
         "(T, hs/2)");
    line("angle = torch.cat([angle, angle], -1)", "(T, hs)");
    line("rope_cos = torch.cos(angle).float()");
    line("rope_sin = torch.sin(angle).float()");
  }
  if (position == "alibi") {  // as AttentionBiasImpl: -slope_h * |query - key|
    std::string slopes;
    for (double slope : alibi_slopes(config_.n_head)) slopes += (slopes.empty() ? "" : ", ") + literal(slope);
    line("slopes = torch.tensor([" + slopes + "], dtype=torch.float64).float().to(" + device + ")", "(nh,)");
    line("pos = torch.arange(T, dtype=torch.float32, device=" + device + ")");
    line("position_bias = -slopes.view(1, -1, 1, 1) * (pos.view(-1, 1) - pos.view(1, -1)).abs().unsqueeze(0)",
         "(1, nh, T, T)");
    return "position_bias";
  }
  if (position == "relative") {
    line("position_bias = self._position_bias(T, T)", "(1, nh, T, T)");
    return "position_bias";
  }
  return "";
}

std::string SourceWriter::unpadded(const std::string& logits) const {
  if (config_.padded_vocab() == config_.vocab_size) return logits;
  return "(" + logits + ")[:, :, :" + std::to_string(config_.vocab_size) + "]";
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
