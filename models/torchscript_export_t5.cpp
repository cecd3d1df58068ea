// TorchScript export of T5: encode, decode and forward as models/t5.cpp computes them in eval mode, with
// the relative position buckets written out op for op (SourceWriter::relative_bias_method).
// Leaves out: the decoder KV cache (decode recomputes all positions).
// Shapes: B batch, S encoder positions, T decoder positions, C d_model, V vocabulary, nh heads.
#include <cmath>

#include "models/torchscript_export.h"
#include "models/torchscript_source.h"

namespace lmzoo {

namespace {

void write_t5(script::SourceWriter& s, const ModelConfig& c) {
  if (c.position == Position::kRelative) {
    s.relative_bias_method("_encoder_position_bias", "encoder.rel_bias.weight", true);
    s.relative_bias_method("_decoder_position_bias", "decoder.rel_bias.weight", false);
  }

  s.def("encode(self, input_ids: Tensor, attention_mask: Optional[Tensor] = None) -> Tensor");
  s.line("B = input_ids.size(0)");
  s.line("T = input_ids.size(1)");
  s.line("mask = torch.ones_like(input_ids)");
  s.line("if attention_mask is not None:");
  s.line("    mask = attention_mask");
  s.line("blocked = (mask == 0).view(B, 1, 1, T)", "(B, 1, 1, S): pad keys, every head and query");
  s.line("x = torch.embedding(" + s.param("shared.weight") + ", input_ids)", "(B, S, C)");
  const std::string encoder_bias = s.position_setup("encoder.wpe.weight", "input_ids.device", "_encoder_position_bias");
  for (int64_t i = 0; i < c.n_layer; ++i) s.block("encoder.h." + std::to_string(i), "blocked", encoder_bias);
  s.line("return " + (c.final_norm ? s.norm("encoder.ln_f", "x") : std::string("x")));

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
  s.line("x = torch.embedding(" + s.param("shared.weight") + ", decoder_input_ids)", "(B, T, C)");
  const std::string decoder_bias =
      s.position_setup("decoder.wpe.weight", "decoder_input_ids.device", "_decoder_position_bias");
  for (int64_t i = 0; i < c.decoder_layers(); ++i) {
    s.decoder_block("decoder.h." + std::to_string(i), "blocked", decoder_bias, "encoder_hidden", "memory_blocked");
  }
  if (c.final_norm) s.line("x = " + s.norm("decoder.ln_f", "x"));
  if (c.tie_embeddings) s.line("x = x * " + script::literal(std::pow(double(c.d_model), -0.5)), "tied: d_model^-0.5");
  const std::string head = s.param(c.tie_embeddings ? "shared.weight" : "lm_head.weight");
  s.line("return " + s.unpadded("torch.matmul(x, " + head + ".t())"), "(B, T, V)");

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
