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
  // The fixed position tables, as the models compute them (position_setup reads them).
  if (config.position == Position::kSinusoidal) {
    module.register_buffer("sinusoid_table", sinusoidal_table(config.max_seq_len, config.d_model));
  }
  if (config.position == Position::kRope) {
    const RotaryTables rope = rotary_tables(config.max_seq_len, rotary_dims(config), config.rope_base);
    module.register_buffer("rope_cos", rope.cos);
    module.register_buffer("rope_sin", rope.sin);
  }
  if (config.position == Position::kAlibi) {
    auto slopes = torch::tensor(alibi_slopes(config.n_head), torch::kDouble).to(torch::kFloat);  // (nh,)
    module.register_buffer("alibi_slopes", slopes);
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
  if (config_.norm == NormKind::kRmsNorm) {  // variance in fp32, as NormImpl
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
  switch (config_.activation) {
    case Activation::kRelu: return "torch.relu(" + x + ")";
    case Activation::kGelu: return "torch.gelu(" + x + ")";
    case Activation::kGeluTanh:
    case Activation::kGeglu: return "torch.gelu(" + x + ", approximate='tanh')";
    case Activation::kSilu:
    case Activation::kSwiglu: return "torch.silu(" + x + ")";
  }
  throw std::logic_error("activation outside its table");
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
  const int64_t rd = rotary_dims(config_);
  const std::string half = std::to_string(rd / 2);
  if (rd == config_.head_size()) {
    line(name + " = " + name + " * rope_cos + torch.cat([-" + name + "[..., " + half + ":], " + name + "[..., :" +
         half + "]], -1) * rope_sin");
    return;
  }
  const std::string end = std::to_string(rd), part = name + "_rot";  // partial rotary: the rest passes through
  line(part + " = " + name + "[..., :" + end + "]", "(B, heads, T, rd)");
  line(name + " = torch.cat([" + part + " * rope_cos + torch.cat([-" + part + "[..., " + half + ":], " + part +
           "[..., :" + half + "]], -1) * rope_sin, " + name + "[..., " + end + ":]], -1)",
       "(B, heads, T, hs)");
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
  if (config_.position == Position::kRope) {
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

std::string SourceWriter::position_setup(const std::string& learned_table, const std::string& device,
                                         const std::string& relative_method) {
  const Position position = config_.position;
  if (position == Position::kLearned) line("x = x + " + param(learned_table) + "[:T]", "(T, C) broadcast over B");
  if (position == Position::kSinusoidal) {  // the embedding scale of GPT / Bert, then new_module's table
    if (config_.arch != Arch::kT5) {
      line("x = x * " + literal(std::sqrt(double(config_.d_model))), "token embeddings scaled by sqrt(C)");
    }
    line("x = x + self.sinusoid_table[:T]", "(T, C)");
  }
  if (position == Position::kRope) {
    line("rope_cos = self.rope_cos[:T]", "(T, rd)");
    line("rope_sin = self.rope_sin[:T]");
  }
  if (position == Position::kAlibi) {  // as AttentionBiasImpl: -slope_h * |query - key|
    line("pos = torch.arange(T, device=" + device + ").float()");
    line("position_bias = -self.alibi_slopes.view(1, -1, 1, 1) * (pos.view(-1, 1) - pos.view(1, -1)).abs()"
         ".unsqueeze(0)",
         "(1, nh, T, T)");
    return "position_bias";
  }
  if (position == Position::kRelative) {
    line("position_bias = self." + relative_method + "(T, T)", "(1, nh, T, T)");
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
  if (config_.norm_position == NormPosition::kPre) {
    line("a = " + norm(norm_prefix, "x"));
    line("x = x + " + sublayer("a"));
  } else {
    line("x = x + " + sublayer("x"));
    line("x = " + norm(norm_prefix, "x"));
  }
}

void SourceWriter::block(const std::string& prefix, const std::string& blocked, const std::string& bias) {
  if (config_.parallel_residual) {  // x + attn(ln_1 x) + mlp(ln_2 x), as TransformerBlockImpl
    line("a = " + norm(prefix + ".ln_1", "x"));
    line("a = " + self_attention(prefix + ".attn", "a", blocked, bias));
    line("x = x + (" + feed_forward(prefix + ".mlp", norm(prefix + ".ln_2", "x")) + " + a)");
    return;
  }
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
