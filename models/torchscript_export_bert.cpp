// TorchScript export of BERT (MLM logits; hidden states and pooled output) and of the BERT sequence
// classifier (class logits), as models/bert.cpp and bert_classifier.cpp compute them in eval mode.
// Shapes: B batch, T positions, C d_model, V vocabulary, nh heads.
#include "models/torchscript_export.h"
#include "models/torchscript_source.h"

namespace lmzoo {

namespace {

const char* kArgs =
    "self, input_ids: Tensor, attention_mask: Optional[Tensor] = None, token_type_ids: Optional[Tensor] = None";

// _hidden(input_ids, attention_mask, token_type_ids) -> (B, T, C) and _pool(hidden) -> (B, C) for the
// encoder whose parameters start with prefix ("" for Bert, "bert." inside the classifier).
void write_encoder(script::SourceWriter& s, const ModelConfig& c, const std::string& prefix) {
  if (c.position == Position::kRelative) s.relative_bias_method("_position_bias", prefix + "attn_bias.rel_bias.weight", true);
  s.def("_hidden(self, input_ids: Tensor, attention_mask: Optional[Tensor], token_type_ids: Optional[Tensor]) -> "
        "Tensor");
  s.line("B = input_ids.size(0)");
  s.line("T = input_ids.size(1)");
  s.line("assert T <= " + std::to_string(c.max_seq_len) + ", 'sequence longer than the context length'");
  s.line("mask = torch.ones_like(input_ids)");
  s.line("if attention_mask is not None:");
  s.line("    mask = attention_mask");
  s.line("types = torch.zeros_like(input_ids)");
  s.line("if token_type_ids is not None:");
  s.line("    types = token_type_ids");
  s.line("x = torch.embedding(" + s.param(prefix + "word_embeddings.weight") + ", input_ids)", "(B, T, C)");
  std::string bias;
  if (c.position_offset > 0) {  // RoBERTa: real tokens count from row offset, pads read row offset - 1
    s.line("real = (mask != 0).long()", "(B, T)");
    s.line("position_ids = torch.cumsum(real, 1) * real + " + std::to_string(c.position_offset - 1), "(B, T)");
    s.line("x = x + torch.embedding(" + s.param(prefix + "position_embeddings.weight") + ", position_ids)");
  } else {
    bias = s.position_setup(prefix + "position_embeddings.weight", "input_ids.device");
  }
  if (c.type_vocab_size > 1) {
    s.line("x = x + torch.embedding(" + s.param(prefix + "token_type_embeddings.weight") + ", types)");
  } else if (c.type_vocab_size == 1) {
    s.line("x = x + " + s.param(prefix + "token_type_embeddings.weight") + "[0]", "one token type: segment ids ignored");
  }
  s.line("x = " + s.norm(prefix + "emb_ln", "x"));
  s.line("blocked = (mask == 0).view(B, 1, 1, T)", "(B, 1, 1, T): pad keys, every head and query");
  for (int64_t i = 0; i < c.n_layer; ++i) s.block(prefix + "h." + std::to_string(i), "blocked", bias);
  const bool final_norm = c.norm_position == NormPosition::kPre && c.final_norm;
  s.line("return " + (final_norm ? s.norm(prefix + "ln_f", "x") : std::string("x")));

  s.def("_pool(self, hidden: Tensor) -> Tensor");
  s.line("return torch.tanh(" + s.linear(prefix + "pooler", "hidden.select(1, 0)") + ")", "(B, C) from [CLS]");

  s.def(std::string("encode(") + kArgs + ") -> Tuple[Tensor, Tensor]");
  s.line("hidden = self._hidden(input_ids, attention_mask, token_type_ids)");
  s.line("return hidden, self._pool(hidden)");
}

void write_bert(script::SourceWriter& s, const ModelConfig& c) {
  write_encoder(s, c, "");
  s.def(std::string("forward(") + kArgs + ") -> Tensor");
  s.line("hidden = self._hidden(input_ids, attention_mask, token_type_ids)");
  s.line("x = " + s.activation(s.linear("mlm_dense", "hidden")), "(B, T, C)");
  s.line("x = " + s.norm("mlm_ln", "x"));
  const std::string decoder = s.param(c.tie_embeddings ? "word_embeddings.weight" : "mlm_decoder.weight");
  s.line("return " + s.unpadded("torch.matmul(x, " + decoder + ".t()) + " + s.param("mlm_bias")), "(B, T, V)");
}

void write_classifier(script::SourceWriter& s, const ModelConfig& c) {
  write_encoder(s, c, "bert.");
  s.def(std::string("forward(") + kArgs + ") -> Tensor");
  s.line("pooled = self._pool(self._hidden(input_ids, attention_mask, token_type_ids))", "(B, C)");
  s.line("return " + s.linear("classifier", "pooled"), "(B, n_labels)");
}

}  // namespace

torch::jit::Module export_bert(Bert& model, const std::string& tokenizer_model) {
  auto module = script::new_module("lmzoo.Bert", *model, model->config(), tokenizer_model);
  script::SourceWriter s(model->config(), *model);
  write_bert(s, model->config());
  s.define(module);
  return module;
}

torch::jit::Module export_bert_classifier(BertClassifier& model, const std::string& tokenizer_model) {
  const ModelConfig& c = model->config();
  auto module = script::new_module("lmzoo.BertClassifier", *model, c, tokenizer_model);
  module.register_attribute("labels", c10::ListType::ofStrings(), c10::List<std::string>(c.labels));
  script::SourceWriter s(c, *model);
  write_classifier(s, c);
  s.define(module);
  return module;
}

}  // namespace lmzoo
