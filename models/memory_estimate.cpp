// The memory estimate: parameter bytes from count_parameters, activations from the blocks' tensor shapes, and
// the refusal against the machine's physical memory. Leaves out: a GPU's memory (train/device_peak.h).
#include "models/memory_estimate.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "models/presets.h"

namespace lmzoo {

namespace {

// Elements per token (fp32 each) of one part of a block, as autograd keeps them for the backward (training) or
// as they are live at once (inference). d model width, nh heads, S attended positions.

double dropout_mask(const ModelConfig& c, double elements) { return c.dropout > 0 ? elements : 0.0; }

// Each head's scores and probabilities over S positions (and their dropout mask).
double attention_scores(const ModelConfig& c, double S) {
  return double(c.n_head) * S * (2.0 + (c.dropout > 0 ? 1.0 : 0.0));
}

// Norm in and out, q k v, scores, the heads' output (c_proj's input), the residual's dropout mask.
double self_attention_part(const ModelConfig& c, double S) {
  const double d = double(c.d_model);
  return 2 * d + double(c.attn_dim() + 2 * c.kv_dim()) + attention_scores(c, S) + double(c.attn_dim()) +
         dropout_mask(c, d);
}

// As self-attention with only q per token; the encoder's keys and values are counted per encoder token.
double cross_attention_part(const ModelConfig& c, double S) {
  const double d = double(c.d_model);
  return 2 * d + double(c.attn_dim()) + attention_scores(c, S) + double(c.attn_dim()) + dropout_mask(c, d);
}

// Norm in and out, c_fc's output and its activation (gated: also c_fc_lin's and the product), masks.
double feed_forward_part(const ModelConfig& c) {
  const double d = double(c.d_model), ff = double(c.ff_dim());
  const double hidden = (c.gated_ffn() ? 4.0 : 2.0) * ff;
  return 2 * d + hidden + (c.ffn_hidden_dropout() ? dropout_mask(c, ff) : 0.0) + dropout_mask(c, d);
}

// Embedding output (and its mask) and the final norm's input and output.
double stack_ends(const ModelConfig& c) {
  const double d = double(c.d_model);
  return d + dropout_mask(c, d) + 2 * d;
}

// Logits and their log-softmax (training: and their gradient) per predicted token.
double logits_part(const ModelConfig& c, MemoryUse use) {
  return double(c.padded_vocab()) * (use == MemoryUse::kTraining ? 3.0 : 2.0);
}

// bert's MLM head before the logits: dense output, activation, norm in and out.
double bert_head_part(const ModelConfig& c) { return c.arch == Arch::kBert ? 4.0 * double(c.d_model) : 0.0; }

// Training: what every block keeps for the backward, over the whole batch.
double training_activation_elements(const ModelConfig& c, const Workload& w) {
  const double rows = double(w.sequences), T = double(w.length), block = feed_forward_part(c);
  const double predicted = rows * T * (bert_head_part(c) + logits_part(c, w.use));
  if (c.arch != Arch::kT5) {
    return rows * T * (stack_ends(c) + double(c.n_layer) * (self_attention_part(c, T) + block)) + predicted;
  }
  const double Te = double(w.encoder_length), dec_layers = double(c.decoder_layers());
  const double encoder = rows * Te * (stack_ends(c) + double(c.n_layer) * (self_attention_part(c, Te) + block));
  const double decoder =
      rows * T * (stack_ends(c) + dec_layers * (self_attention_part(c, T) + cross_attention_part(c, Te) + block));
  const double encoder_kv = rows * Te * dec_layers * 2.0 * double(c.kv_dim());  // each decoder layer's c_kv
  return encoder + decoder + encoder_kv + predicted;
}

// Inference: one block's tensors at a time, the residual stream beside them, and the pass's logits.
double inference_activation_elements(const ModelConfig& c, const Workload& w) {
  const double rows = double(w.sequences), T = double(w.length), d = double(c.d_model);
  const double block = feed_forward_part(c) + d;
  // A pass over T tokens at once (the prompt), and a cached step of one token over the whole cache.
  const double pass = T * (self_attention_part(c, T) + block + bert_head_part(c) + logits_part(c, w.use));
  double step = 0;
  if (c.arch == Arch::kGpt) step = self_attention_part(c, double(w.cached)) + block + logits_part(c, w.use);
  if (c.arch != Arch::kT5) return rows * std::max(pass, step);
  const double Te = double(w.encoder_length);
  const double encoder = Te * (self_attention_part(c, Te) + block);
  const double decoder = std::max(pass, self_attention_part(c, double(w.cached)) + block + logits_part(c, w.use)) +
                         T * cross_attention_part(c, Te);
  return rows * (std::max(encoder, decoder) + Te * d);  // the encoder's output stays for every decoder step
}

// Inference: keys and values of every decoder layer (t5: also of the encoder output) for every row.
double kv_cache_elements(const ModelConfig& c, const Workload& w) {
  if (w.use != MemoryUse::kInference || c.arch == Arch::kBert) return 0.0;
  const double per_position = 2.0 * double(c.kv_dim()) * double(c.decoder_layers());
  const double positions = double(w.cached) + (c.arch == Arch::kT5 ? double(w.encoder_length) : 0.0);
  return double(w.sequences) * positions * per_position;
}

}  // namespace

std::string format_bytes(double bytes) {
  static const char* units[] = {"bytes", "kB", "MB", "GB", "TB", "PB", "EB"};
  int unit = 0;
  while (bytes >= 1000.0 && unit < 6) {
    bytes /= 1000.0;
    ++unit;
  }
  char text[64];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, units[unit]);
  return text;
}

std::string MemoryEstimate::describe() const {
  std::string parts;
  auto add = [&](const char* name, double bytes) {
    if (bytes > 0) parts += (parts.empty() ? "" : ", ") + std::string(name) + " " + format_bytes(bytes);
  };
  add("weights", weights);
  add("gradients", gradients);
  add("optimizer", optimizer);
  add("activations", activations);
  add("kv cache", kv_cache);
  return format_bytes(total()) + " (" + parts + ")";
}

Workload training_workload(const ModelConfig& config, int64_t batch) {
  Workload w;
  w.sequences = batch;
  w.length = config.max_seq_len;
  w.encoder_length = config.arch == Arch::kT5 ? config.max_seq_len : 0;
  return w;
}

MemoryEstimate estimate_weights(const ModelConfig& config) {
  MemoryEstimate e;
  e.parameters = count_parameters(config);
  e.weights = kBytesPerElement * double(e.parameters);
  return e;
}

MemoryEstimate estimate_memory(const ModelConfig& config, const Workload& workload) {
  MemoryEstimate e = estimate_weights(config);
  if (workload.use == MemoryUse::kTraining) {
    e.gradients = e.weights;
    e.optimizer = 2.0 * e.weights;
    e.activations = kBytesPerElement * training_activation_elements(config, workload);
  } else {
    e.activations = kBytesPerElement * inference_activation_elements(config, workload);
    e.kv_cache = kBytesPerElement * kv_cache_elements(config, workload);
  }
  return e;
}

double host_memory_bytes() { return double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE)); }

void require_fits(const MemoryEstimate& estimate, double available, const std::string& what, const std::string& where) {
  if (estimate.total() <= available) return;
  throw std::runtime_error(what + " needs about " + estimate.describe() + " but " + where + " has " +
                           format_bytes(available));
}

void require_fits_in_host(const MemoryEstimate& estimate, const std::string& what) {
  require_fits(estimate, host_memory_bytes(), what, "this machine");
}

}  // namespace lmzoo
