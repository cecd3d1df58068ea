// Tiny random decoders of llama.cpp's four architectures with a tokenizer each, saved as lmzoo checkpoints, for the
// GGUF tests: Llama (GQA, untied) with lmzoo's own SentencePiece BPE, Qwen2 (tied, q/k/v biases) and GPT-NeoX
// (partial rotary, parallel residual) with a SmolLM2-style tokenizer.json, GPT-2 with vocab.json + merges.txt.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/tokenizers/tokenizer.h"
#include "models/hf_config.h"
#include "models/registry.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"
#include "tests/smollm2_tokenizer.h"
#include "train/checkpoint/checkpoint.h"
#include "train/train_config.h"

namespace lmzoo::test {

inline const std::vector<std::string>& gguf_families() {
  static const std::vector<std::string> f = {"llama", "qwen2", "gpt2", "gptneox"};
  return f;
}

// A GPT-2 byte-level BPE (vocab.json + merges.txt) in DIR: the 256 byte symbols, some English merges, <|endoftext|>.
inline void write_gpt2_tokenizer(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  nlohmann::json vocab = nlohmann::json::object();
  for (const auto& symbol : byte_level_alphabet()) vocab[symbol] = vocab.size();
  const std::string g = utf8(0x120);
  const std::vector<std::pair<std::string, std::string>> merges = {
      {g, "t"}, {"h", "e"}, {g + "t", "he"}, {"i", "n"}, {"e", "r"}, {"a", "n"}, {g, "a"}, {"o", "n"},
      {"r", "e"}, {g, "s"}, {"e", "d"}, {"i", "s"}, {"in", "g"}, {g, "w"}, {"o", "u"}, {"n", "d"},
      {g + "a", "nd"}, {g, "o"}, {g, "c"}, {"e", "s"}, {g, "f"}, {g + "o", "f"}, {"a", "t"}, {"o", "r"},
      {g, "b"}, {g, "m"}, {"l", "l"}, {"a", "r"}, {g, "p"}, {"e", "n"}};
  std::string merge_text = "#version: 0.2\n";
  for (const auto& [a, b] : merges) {
    if (!vocab.contains(a + b)) vocab[a + b] = vocab.size();
    merge_text += a + " " + b + "\n";
  }
  vocab["<|endoftext|>"] = vocab.size();
  write_text(dir / "vocab.json", vocab.dump());
  write_text(dir / "merges.txt", merge_text);
}

// The tokenizer a family's test model uses (written under ROOT once).
inline Tokenizer gguf_test_tokenizer(const std::string& family, const std::filesystem::path& root) {
  if (family == "llama") return Tokenizer::load(tiny_corpus("bpe").tokenizer_dir);
  if (family == "gpt2") {
    write_gpt2_tokenizer(root / "gpt2_tokenizer");
    return Tokenizer::load((root / "gpt2_tokenizer").string());
  }
  std::filesystem::create_directories(root / "smollm2_tokenizer");
  write_smollm2_tokenizer(root / "smollm2_tokenizer");
  return Tokenizer::load((root / "smollm2_tokenizer").string());
}

// The Hugging Face config.json of a family's tiny test model (d_model 64: q8_0 rows of whole blocks).
inline nlohmann::json gguf_test_hf_config(const std::string& family, int64_t vocab) {
  if (family == "llama" || family == "qwen2") {
    const bool qwen = family == "qwen2";
    nlohmann::json j = {{"model_type", qwen ? "qwen2" : "llama"},
                        {"architectures", {qwen ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
                        {"vocab_size", vocab}, {"hidden_size", 64}, {"intermediate_size", 128},
                        {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                        {"max_position_embeddings", 128}, {"rms_norm_eps", 1e-5}, {"rope_theta", 10000.0},
                        {"tie_word_embeddings", qwen}, {"hidden_act", "silu"}};
    if (qwen) j["use_sliding_window"] = false;
    return j;
  }
  if (family == "gpt2") {
    return {{"model_type", "gpt2"}, {"architectures", {"GPT2LMHeadModel"}}, {"vocab_size", vocab}, {"n_embd", 64},
            {"n_layer", 2}, {"n_head", 4}, {"n_positions", 128}, {"activation_function", "gelu_new"},
            {"layer_norm_epsilon", 1e-5}};
  }
  return {{"model_type", "gpt_neox"}, {"architectures", {"GPTNeoXForCausalLM"}}, {"vocab_size", vocab},
          {"hidden_size", 64}, {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"intermediate_size", 128},
          {"max_position_embeddings", 128}, {"rotary_pct", 0.5}, {"rotary_emb_base", 10000.0},
          {"use_parallel_residual", true}, {"hidden_act", "gelu"}, {"layer_norm_eps", 1e-5},
          {"tie_word_embeddings", false}};
}

// Writes a random tiny model of FAMILY as the checkpoint DIR. Weights are drawn wider than an initialisation
// (matrices N(0, 0.15), norm gains 1 +- 0.1, biases N(0, 0.05)) so that greedy choices are not near-ties.
inline ModelConfig write_gguf_test_checkpoint(const std::string& family, const std::string& dir,
                                              const std::filesystem::path& root, uint64_t seed = 7) {
  const Tokenizer tokenizer = gguf_test_tokenizer(family, root);
  ModelConfig config = model_config_from_hf(gguf_test_hf_config(family, tokenizer.vocab_size())).config;
  torch::manual_seed(seed);
  AnyModel model = build_model(config);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model.module()->named_parameters()) {
      torch::Tensor t = p.value();
      const bool norm = p.key().find("ln_") != std::string::npos;
      if (t.dim() >= 2) t.normal_(0.0, 0.15);
      else if (norm && p.key().find("weight") != std::string::npos) t.uniform_(0.9, 1.1);
      else t.normal_(0.0, 0.05);
    }
  }
  CheckpointInfo info;
  info.model = config;
  info.train.objective = default_objective(config.arch, false);
  info.tokenizer_model = tokenizer.serialized();
  save_checkpoint(dir, model.module(), nullptr, info);
  return config;
}

}  // namespace lmzoo::test
