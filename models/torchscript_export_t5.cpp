// TorchScript export of T5: encode, decode and forward as models/t5.cpp computes them in eval mode, with
// the relative position buckets of models/layers/relative_position.cpp written out op for op (float32 log).
// Leaves out: the decoder KV cache (decode recomputes all positions).
// Shapes: B batch, S encoder positions, T decoder positions, C d_model, V vocabulary, nh heads.
#include <cmath>

#include "models/torchscript_export.h"
#include "models/torchscript_source.h"

namespace lmzoo {

namespace {

// _<stack>_position_bias(T, S) -> (1, nh, T, S) for queries 0 .. T-1 and keys 0 .. S-1, as
// RelativePositionBiasImpl::forward with relative_position_bucket.
void write_position_bias(script::SourceWriter& s, const ModelConfig& c, const std::string& stack) {
  const bool bidirectional = stack == "encoder";
  const int64_t buckets = bidirectional ? c.relative_buckets / 2 : c.relative_buckets;
  const int64_t max_exact = buckets / 2;
  const double log_ratio = std::log(double(c.relative_max_distance) / double(max_exact));
  const std::string me = std::to_string(max_exact);
  s.def("_" + stack + "_position_bias(self, T: int, S: int) -> Tensor");
  s.line("device = " + s.param("shared.weight") + ".device");
  s.line("query = torch.arange(T, device=device).view(-1, 1)", "(T, 1)");
  s.line("key = torch.arange(S, device=device).view(1, -1)", "(1, S)");
  s.line("rp = key - query", "(T, S)");
  s.line("buckets = torch.zeros_like(rp)");
  if (bidirectional) {
    s.line("buckets = buckets + (rp > 0).long() * " + std::to_string(buckets));
    s.line("rp = rp.abs()");
  } else {
    s.line("rp = -torch.min(rp, torch.zeros_like(rp))");
  }
  s.line("is_small = rp < " + me);
  s.line("large = (torch.log(rp.float() / " + me + ") / " + script::literal(log_ratio) + " * " +
         std::to_string(buckets - max_exact) + ").long() + " + me);
  s.line("large = torch.min(large, torch.full_like(large, " + std::to_string(buckets - 1) + "))");
  s.line("buckets = buckets + torch.where(is_small, rp, large)");
  s.line("bias = torch.embedding(" + s.param(stack + ".rel_bias.weight") + ", buckets)", "(T, S, nh)");
  s.line("return bias.permute(2, 0, 1).unsqueeze(0)", "(1, nh, T, S)");
}

void write_t5(script::SourceWriter& s, const ModelConfig& c) {
  write_position_bias(s, c, "encoder");
  write_position_bias(s, c, "decoder");

  s.def("encode(self, input_ids: Tensor, attention_mask: Optional[Tensor] = None) -> Tensor");
  s.line("B = input_ids.size(0)");
  s.line("T = input_ids.size(1)");
  s.line("mask = torch.ones_like(input_ids)");
  s.line("if attention_mask is not None:");
  s.line("    mask = attention_mask");
  s.line("blocked = (mask == 0).view(B, 1, 1, T)", "(B, 1, 1, S): pad keys, every head and query");
  s.line("position_bias = self._encoder_position_bias(T, T)", "(1, nh, S, S)");
  s.line("x = torch.embedding(" + s.param("shared.weight") + ", input_ids)", "(B, S, C)");
  for (int64_t i = 0; i < c.n_layer; ++i) s.block("encoder.h." + std::to_string(i), "blocked", "position_bias");
  s.line("return " + s.norm("encoder.ln_f", "x"));

  s.def("decode(self, decoder_input_ids: Tensor, encoder_hidden: Tensor, attention_mask: Optional[Tensor] = None)"
        " -> Tensor");
  s.line("B = decoder_input_ids.size(0)");
  s.line("T = decoder_input_ids.size(1)");
  s.line("S = encoder_hidden.size(1)");
  s.line("mask = torch.ones([B, S], device=encoder_hidden.device)");
  s.line("if attention_mask is not None:");
  s.line("    mask = attention_mask");
  s.line("memory_blocked = (mask == 0).view(B, 1, 1, S)", "(B, 1, 1, S)");
  s.line("pos = torch.arange(T, device=decoder_input_ids.device)");
  s.line("blocked = pos.view(T, 1) < pos.view(1, T)", "(T, T): future keys");
  s.line("position_bias = self._decoder_position_bias(T, T)", "(1, nh, T, T)");
  s.line("x = torch.embedding(" + s.param("shared.weight") + ", decoder_input_ids)", "(B, T, C)");
  for (int64_t i = 0; i < c.decoder_layers(); ++i) {
    s.decoder_block("decoder.h." + std::to_string(i), "blocked", "position_bias", "encoder_hidden", "memory_blocked");
  }
  s.line("x = " + s.norm("decoder.ln_f", "x"));
  if (c.tie_embeddings) s.line("x = x * " + script::literal(std::pow(double(c.d_model), -0.5)), "tied: d_model^-0.5");
  s.line("return torch.matmul(x, " + s.param(c.tie_embeddings ? "shared.weight" : "lm_head.weight") + ".t())",
         "(B, T, V)");

  s.def("forward(self, input_ids: Tensor, attention_mask: Optional[Tensor], decoder_input_ids: Tensor) -> Tensor");
  s.line("return self.decode(decoder_input_ids, self.encode(input_ids, attention_mask), attention_mask)");
}

}  // namespace

torch::jit::Module export_t5(T5& model, const std::string& tokenizer_model) {
  auto module = script::new_module("lmzoo.T5", *model, model->config(), tokenizer_model);
  script::SourceWriter s(model->config(), *model);
  write_t5(s, model->config());
  s.define(module);
  return module;
}

}  // namespace lmzoo
