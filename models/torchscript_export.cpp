// TorchScript export of GPT (the forward pass written out layer by layer for the config's switches and
// compiled by define() against the registered weights) and export_model, the dispatch over families.
// Shapes: B batch, T positions, C d_model, V vocabulary.
#include "models/torchscript_export.h"

#include "models/torchscript_source.h"

namespace lmzoo {

namespace {
void write_gpt(script::SourceWriter& s, const ModelConfig& c) {
  if (c.position == Position::kRelative) s.relative_bias_method("_position_bias", "attn_bias.rel_bias.weight", false);
  s.def("forward(self, input_ids: Tensor) -> Tensor");
  s.line("B = input_ids.size(0)");
  s.line("T = input_ids.size(1)");
  s.line("assert T <= " + std::to_string(c.max_seq_len) + ", 'sequence longer than the context length'");
  s.line("x = torch.embedding(" + s.param("wte.weight") + ", input_ids)", "(B, T, C)");
  const std::string bias = s.position_setup("wpe.weight", "input_ids.device");
  s.line("pos = torch.arange(T, device=input_ids.device)");
  s.line("blocked = pos.unsqueeze(0) > pos.unsqueeze(1)", "(T, T): true above the diagonal");
  if (c.attention_window > 0) {
    s.line("blocked = blocked | (pos.unsqueeze(0) <= pos.unsqueeze(1) - " + std::to_string(c.attention_window) + ")",
           "keys outside the attention window");
  }
  for (int64_t i = 0; i < c.n_layer; ++i) s.block("h." + std::to_string(i), "blocked", bias);
  if (c.final_norm) s.line("x = " + s.norm("ln_f", "x"));
  const std::string head = s.param(c.tie_embeddings ? "wte.weight" : "lm_head.weight");
  s.line("return " + s.unpadded("torch.matmul(x, " + head + ".t())"), "(B, T, V)");
}
}  // namespace

torch::jit::Module export_gpt(GPT& model, const std::string& tokenizer_model) {
  auto module = script::new_module("lmzoo.GPT", *model, model->config(), tokenizer_model);
  script::SourceWriter s(model->config(), *model);
  write_gpt(s, model->config());
  s.define(module);
  return module;
}

ExportedModel export_model(const AnyModel& model, const std::string& tokenizer_model) {
  const ModelConfig& c = model.config();
  const std::string T = "(B, T<=" + std::to_string(c.max_seq_len) + ")";
  const std::string V = std::to_string(c.vocab_size), C = std::to_string(c.d_model);
  const std::string bert_args = "input_ids " + T + ", attention_mask (B, T) = None, token_type_ids (B, T) = None";
  const std::string bert_encode = "encode(" + bert_args + ") -> (hidden (B, T, " + C + "), pooled (B, " + C + "))";
  return model.visit(Overloaded{
      [&](GPT gpt) -> ExportedModel {
        return {export_gpt(gpt, tokenizer_model), {"forward(input_ids " + T + ") -> logits (B, T, " + V + ")"}};
      },
      [&](Bert bert) -> ExportedModel {
        return {export_bert(bert, tokenizer_model),
                {"forward(" + bert_args + ") -> MLM logits (B, T, " + V + ")", bert_encode}};
      },
      [&](BertClassifier classifier) -> ExportedModel {
        const std::string n = std::to_string(c.labels.size());
        return {export_bert_classifier(classifier, tokenizer_model),
                {"forward(" + bert_args + ") -> class logits (B, " + n + "), classes in attribute labels",
                 bert_encode}};
      },
      [&](T5 t5) -> ExportedModel {
        return {export_t5(t5, tokenizer_model),
                {"forward(input_ids (B, S), attention_mask (B, S) or None, decoder_input_ids (B, T)) -> logits "
                 "(B, T, " + V + ")",
                 "encode(input_ids (B, S), attention_mask (B, S) = None) -> encoder hidden (B, S, " + C + ")",
                 "decode(decoder_input_ids (B, T), encoder_hidden (B, S, " + C +
                     "), attention_mask (B, S) = None) -> logits (B, T, " + V + ")"}};
      }});
}

}  // namespace lmzoo
