// The memory estimate: parameter bytes from parameter_count and parameter_sizes (trainable and bf16 parts),
// activations from the blocks' tensor shapes (checkpointing and LoRA adapters included), and the refusal against
// the machine's physical memory. Leaves out: a GPU's memory (train/device/device_peak.h).
#include "models/memory_estimate.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "models/layers/positions.h"
#include "models/parameter_sizes.h"

namespace lmzoo {

namespace {

// Elements per token (fp32 each) of one part of a block, as autograd keeps them for the backward (training) or
// as they are live at once (inference). d model width, nh heads, S attended positions.

double dropout_mask(const ModelConfig& c, double elements) { return c.dropout > 0 ? elements : 0.0; }

// Each head's scores and probabilities over S positions (and their dropout mask).
double attention_scores(const ModelConfig& c, double S) {
  return double(c.n_head) * S * (2.0 + (c.dropout > 0 ? 1.0 : 0.0));
}

// Whether a gpt's causal self-attention takes lmzoo's fused CPU kernel (models/layers/attention.cpp's conditions:
// no score bias or dropout, the default scale, query heads spanning d_model, a head size it has, no window cut).
bool fused_self_attention(const ModelConfig& c, const Workload& w) {
  const int64_t hs = c.head_size();
  return w.fused_cpu_kernels && w.use == MemoryUse::kTraining && c.arch == Arch::kGpt && c.dropout == 0 &&
         !position_scheme(c.position).score_bias && c.attn_dim() == c.d_model &&
         c.attention_scale() == 1.0 / std::sqrt(double(hs)) && (hs == 8 || hs == 16 || hs == 32 || hs == 64) &&
         (c.attention_window == 0 || w.length <= c.attention_window);
}

// Which projections' inputs the backward keeps. A trained weight needs its input for its gradient, and so does an
// adapter on the projection (its dropout and lora_A read the same input). A frozen projection keeps none where its
// product is lmzoo's own autograd function: low_precision_linear (a bf16 or int8 base, any device) or fast_linear on the
// fused CPU kernels (fp32; measured: LoRA r8 on q,v of GPT-2 at 2048 tokens peaks at 2.50 GiB of tensors, what
// this rule predicts within 1%). Elsewhere (LibTorch's linear) a frozen fp32 projection is counted as a trained
// one. A full fine-tune and inference: all of them.
struct KeptInputs {
  bool qkv = true;   // self-attention's c_attn, cross-attention's c_q
  bool out = true;   // attention's c_proj
  bool up = true;    // feed-forward's c_fc (and c_fc_lin)
  bool down = true;  // feed-forward's c_proj
  bool head = true;  // the LM head: the final norm's output
};

// Under LoRA with a low-precision base or the fused CPU kernels: the projections with an adapter, or whose weight a
// --trainable part names (matched against the names every block shares, e.g. "attn.c_attn.weight"); the head
// stays fp32.
KeptInputs kept_inputs(const TrainingPlan& plan, bool fused_cpu_kernels) {
  KeptInputs k;
  if (!plan.lora.enabled() || !(plan.low_precision_base() || fused_cpu_kernels)) return k;
  auto named = [&](const std::string& name) {
    for (const auto& part : plan.trainable) {
      if (!part.empty() && name.find(part) != std::string::npos) return true;
    }
    return false;
  };
  auto adapted = [&](std::initializer_list<LoraTarget> targets) {
    for (LoraTarget t : targets) {
      if (plan.lora.targets_part(t)) return true;
    }
    return false;
  };
  k.qkv = adapted({LoraTarget::kQuery, LoraTarget::kKey, LoraTarget::kValue}) || named("attn.c_attn.weight") ||
          named("cross_attn.c_q.weight");
  k.out = adapted({LoraTarget::kOutput}) || named("attn.c_proj.weight");
  k.up = adapted({LoraTarget::kUp, LoraTarget::kGate}) || named("mlp.c_fc.weight") || named("mlp.c_fc_lin.weight");
  k.down = adapted({LoraTarget::kDown}) || named("mlp.c_proj.weight");
  return k;
}

// Norm in and out (the out when the projections read it for a gradient), q k v, scores, the heads' output (c_proj's
// input, likewise), the residual's dropout mask. The fused kernel keeps [q; k; v] with the kv heads repeated to
// every query head and the probabilities only, each row of S padded to a multiple of 8.
double self_attention_part(const ModelConfig& c, double S, bool fused = false, const KeptInputs& k = {}) {
  const double d = double(c.d_model), qkv_input = k.qkv ? d : 0.0, heads = k.out ? double(c.attn_dim()) : 0.0;
  if (fused) return d + qkv_input + 3.0 * double(c.attn_dim()) + double(c.n_head) * std::ceil(S / 8) * 8 + heads;
  return d + qkv_input + double(c.attn_dim() + 2 * c.kv_dim()) + attention_scores(c, S) + heads + dropout_mask(c, d);
}

// As self-attention with only q per token; the encoder's keys and values are counted per encoder token.
double cross_attention_part(const ModelConfig& c, double S, const KeptInputs& k = {}) {
  const double d = double(c.d_model), q_input = k.qkv ? d : 0.0, heads = k.out ? double(c.attn_dim()) : 0.0;
  return d + q_input + double(c.attn_dim()) + attention_scores(c, S) + heads + dropout_mask(c, d);
}

// Norm in and out, c_fc's output (its activation keeps it, or its derivative) and the activation's output (c_proj's
// input; gated: c_fc_lin's output and the activation's, which the product keeps, and the product), masks.
double feed_forward_part(const ModelConfig& c, const KeptInputs& k = {}) {
  const double d = double(c.d_model), ff = double(c.ff_dim());
  const double hidden = (c.gated_ffn() ? 3.0 : 1.0) * ff + (k.down ? ff : 0.0);
  return d + (k.up ? d : 0.0) + hidden + (c.ffn_hidden_dropout() ? dropout_mask(c, ff) : 0.0) + dropout_mask(c, d);
}

// Embedding output (and its mask) and the final norm's input and output (the output when the head trains).
double stack_ends(const ModelConfig& c, const KeptInputs& k = {}) {
  const double d = double(c.d_model);
  return d + dropout_mask(c, d) + d + (k.head ? d : 0.0);
}

// Logits and their log-softmax (training: and their gradient) per predicted token. lmzoo's fused CPU
// cross-entropy keeps the logits and one log-sum-exp per row, and its backward makes the gradient.
double logits_part(const ModelConfig& c, const Workload& w) {
  if (w.use == MemoryUse::kTraining && w.fused_cpu_kernels) return 2.0 * double(c.padded_vocab());
  return double(c.padded_vocab()) * (w.use == MemoryUse::kTraining ? 3.0 : 2.0);
}

// The fused output layer and cross-entropy (training): a chunk's fp32 logits with their softmax and its copy in the
// products' dtype (3 elements each), the weight's fp32 gradient, and the hidden states' gradient for every row.
double fused_loss_part(const ModelConfig& c, double rows, int64_t chunk_rows) {
  const double V = double(c.vocab_size), C = double(c.d_model);
  const double chunk = std::min(rows, double(chunk_rows));
  return 3.0 * chunk * V + V * C + rows * C;
}

// bert's MLM head before the logits: dense output, activation, norm in and out.
double bert_head_part(const ModelConfig& c) { return c.arch == Arch::kBert ? 4.0 * double(c.d_model) : 0.0; }

// (in, out) of each projection an adapter of TARGET sits on in one block's self-attention (CROSS: the decoder's
// cross-attention) or feed-forward; none where the layer has no such projection (gate without a gated FFN).
std::vector<std::pair<double, double>> adapted_projections(const ModelConfig& c, LoraTarget target, bool cross) {
  const double d = double(c.d_model), q = double(c.attn_dim()), kv = double(c.kv_dim()), ff = double(c.ff_dim());
  switch (target) {
    case LoraTarget::kQuery: return {{d, q}};
    case LoraTarget::kKey:
    case LoraTarget::kValue: return {{d, kv}};
    case LoraTarget::kOutput: return {{q, d}};
    case LoraTarget::kUp:
      if (cross) return {};
      return {{d, ff}};
    case LoraTarget::kGate:
      if (cross || !c.gated_ffn()) return {};
      return {{d, ff}};
    case LoraTarget::kDown:
      if (cross) return {};
      return {{ff, d}};
  }
  return {};
}

// One block's adapters: their parameters (rank x (in + out) each), and the elements per token they keep for the
// backward: A's output (rank wide) and, with dropout, the mask and the dropped input (in wide each).
struct AdapterFigures {
  double parameters = 0;
  double kept = 0;
};

AdapterFigures block_adapters(const ModelConfig& c, const LoraSettings& lora, bool decoder) {
  AdapterFigures out;
  if (!lora.enabled()) return out;
  const double r = double(lora.rank);
  for (LoraTarget target : lora.targets) {
    for (bool cross : {false, true}) {
      if (cross && !decoder) continue;
      for (const auto& [in, o] : adapted_projections(c, target, cross)) {
        out.parameters += r * (in + o);
        out.kept += r + (lora.dropout > 0 ? 2.0 * in : 0.0);
      }
    }
  }
  return out;
}

// Elements per token a stack of LAYERS blocks keeps through the forward, each block keeping BLOCK in full unless
// checkpointed: then its input (d) alone.
double stack_blocks(const ModelConfig& c, double layers, double block, int64_t every) {
  const double kept_inputs = double(checkpointed_blocks(int64_t(layers), every));
  return (layers - kept_inputs) * block + kept_inputs * double(c.d_model);
}

}  // namespace

TrainingActivations training_activations(const ModelConfig& c, const Workload& w) {
  const double rows = double(w.sequences), T = double(w.length);
  const int64_t every = w.plan.checkpoint_every;
  const KeptInputs k = kept_inputs(w.plan, w.fused_cpu_kernels);
  const double logits = w.plan.fused_loss_chunk_rows > 0
                            ? rows * T * bert_head_part(c) + fused_loss_part(c, rows * T, w.plan.fused_loss_chunk_rows)
                                          : rows * T * (bert_head_part(c) + logits_part(c, w));
  const double encoder_adapters = block_adapters(c, w.plan.lora, false).kept;
  TrainingActivations a;
  if (c.arch != Arch::kT5) {
    const double block =  // per token
        self_attention_part(c, T, fused_self_attention(c, w), k) + feed_forward_part(c, k) + encoder_adapters;
    const double kept = rows * T * (stack_ends(c, k) + stack_blocks(c, double(c.n_layer), block, every));
    a.at_start = kept + std::max(logits, every > 0 ? rows * T * block : 0.0);
    a.at_end = rows * T * (stack_ends(c, k) + block);
    return a;
  }
  const double Te = double(w.encoder_length), dec_layers = double(c.decoder_layers());
  const double encoder_block = self_attention_part(c, Te, false, k) + feed_forward_part(c, k) + encoder_adapters;
  const double decoder_block = self_attention_part(c, T, false, k) + cross_attention_part(c, Te, k) +
                               feed_forward_part(c, k) + block_adapters(c, w.plan.lora, true).kept;
  const double encoder = rows * Te * (stack_ends(c, k) + stack_blocks(c, double(c.n_layer), encoder_block, every));
  const double decoder = rows * T * (stack_ends(c, k) + stack_blocks(c, dec_layers, decoder_block, every));
  const double encoder_kv = rows * Te * dec_layers * 2.0 * double(c.kv_dim());  // each decoder layer's c_kv
  const double recompute = every > 0 ? std::max(rows * Te * encoder_block, rows * T * decoder_block) : 0.0;
  a.at_start = encoder + decoder + encoder_kv + std::max(logits, recompute);
  a.at_end = rows * Te * (stack_ends(c, k) + encoder_block);  // the decoder's tensors, c_kv's too, are gone
  return a;
}

namespace {

// A relative or ALiBi score bias: one (1, nh, T, S) table a stack's layers share, for queries of T tokens over S
// keys (relative_position.cpp lays it out from one row per distance, so the table is its whole cost).
double score_bias_table(const ModelConfig& c, double T, double S) {
  return position_scheme(c.position).score_bias ? double(c.n_head) * T * S : 0.0;
}

// Inference: one block's tensors at a time, the residual stream beside them, the pass's logits and the stack's
// score bias (shared by the rows).
double inference_activation_elements(const ModelConfig& c, const Workload& w) {
  const double rows = double(w.sequences), T = double(w.length), d = double(c.d_model), P = double(w.cached);
  const double block = feed_forward_part(c) + d;
  // A pass over T tokens at once (the prompt), and a cached step of one token over the whole cache.
  const double pass = T * (self_attention_part(c, T) + block + bert_head_part(c) + logits_part(c, w));
  const double bias = std::max(score_bias_table(c, T, T), score_bias_table(c, 1, P));
  double step = 0;
  if (c.arch == Arch::kGpt) step = self_attention_part(c, P) + block + logits_part(c, w);
  if (c.arch != Arch::kT5) return rows * std::max(pass, step) + bias;
  const double Te = double(w.encoder_length);
  const double encoder = rows * Te * (self_attention_part(c, Te) + block) + score_bias_table(c, Te, Te);
  const double decoder =
      rows * (std::max(pass, self_attention_part(c, P) + block + logits_part(c, w)) + T * cross_attention_part(c, Te)) +
      bias;
  return std::max(encoder, decoder) + rows * Te * d;  // the encoder's output stays for every decoder step
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

std::vector<std::pair<std::string, double>> MemoryEstimate::parts() const {
  return {{"weights", weights},         {"gradients", gradients}, {"optimizer", optimizer},
          {"activations", activations}, {"kv cache", kv_cache},   {"runtime", runtime}};
}

std::string MemoryEstimate::describe() const {
  std::string text;
  for (const auto& [name, bytes] : parts()) {
    if (bytes > 0) text += (text.empty() ? "" : ", ") + name + " " + format_bytes(bytes);
  }
  if (loading > running()) text += "; the fp32 weights while loading, " + format_bytes(loading) + ", are the peak";
  return format_bytes(total()) + " (" + text + ")";
}

int64_t checkpointed_blocks(int64_t layers, int64_t every) {
  return every > 0 ? (layers + every - 1) / every : 0;
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
  e.parameters = parameter_count(config);
  e.weights = kBytesPerElement * double(e.parameters);
  return e;
}

namespace {

// Training parameters: all of them train, or under LoRA the adapters (lora_parameter_count), the base parameters
// PLAN.trainable names and a classifier's head. A bf16 or int8 base stores the other projection weights in 2 or 1
// bytes, and widens one at a time to fp32 for its product (the largest counted).
void training_parameters(const ModelConfig& c, const TrainingPlan& plan, MemoryEstimate& e) {
  if (!plan.lora.enabled()) {
    e.trainable = e.parameters;
    return;
  }
  const std::vector<NamedSize> sizes = parameter_sizes(c);
  std::vector<std::string> trained = plan.trainable;
  if (!c.labels.empty()) trained.push_back("classifier.");
  const double adapters = double(lora_parameter_count(c, plan.lora));
  e.trainable = elements_named(sizes, trained) + int64_t(adapters);
  double lowered_elements = 0, widest = 0;
  if (plan.low_precision_base()) {
    for (const auto& s : sizes) {
      if (s.projection && elements_named({s}, trained) == 0) {
        lowered_elements += double(s.elements);
        widest = std::max(widest, double(s.elements));
      }
    }
  }
  e.weights = kBytesPerElement * (double(e.parameters) - lowered_elements + adapters + widest) +
              double(plan.base_element_bytes) * lowered_elements;
  // Lowering the fp32 model one projection at a time: the largest one's bf16 copy, or its fp32 quotient by the
  // scales with the int8 result.
  if (plan.low_precision_base()) {
    const double bytes = double(plan.base_element_bytes);
    e.loading += (bytes == 1 ? kBytesPerElement + bytes : bytes) * widest;
  }
}

// Elements of the LM head's weight gradient where that weight trains (a full fine-tune, or a --trainable part naming
// it): the first gradient the backward makes, held until the end, where a tied embedding's own is added to it.
// 0 for a classifier (its head is small) and under LoRA otherwise.
double head_gradient_elements(const ModelConfig& c, const TrainingPlan& plan) {
  if (!c.labels.empty()) return 0.0;
  std::string head = c.tie_embeddings ? "wte.weight" : "lm_head.weight";
  if (c.arch == Arch::kBert) head = c.tie_embeddings ? "word_embeddings.weight" : "mlm_decoder.weight";
  if (c.arch == Arch::kT5 && c.tie_embeddings) head = "shared.weight";
  for (const auto& s : parameter_sizes(c)) {
    const bool is_head = s.name.size() >= head.size() && s.name.compare(s.name.size() - head.size(), head.size(), head) == 0;
    if (is_head) return !plan.lora.enabled() || elements_named({s}, plan.trainable) > 0 ? double(s.elements) : 0.0;
  }
  return 0.0;
}

}  // namespace

MemoryEstimate estimate_memory(const ModelConfig& config, const Workload& workload) {
  MemoryEstimate e = estimate_weights(config);
  e.loading = e.weights;  // built (or read from model.pt) in fp32 before any lowering
  if (workload.use == MemoryUse::kTraining) {
    training_parameters(config, workload.plan, e);
    e.optimizer = 2.0 * kBytesPerElement * double(e.trainable);
    // The gradients are set to none before each step; the peak is the larger of the backward's start (every kept
    // activation and the head's gradient) and its end (every gradient, a tied embedding's second one as it is
    // added, and the first block's activations).
    const TrainingActivations a = training_activations(config, workload);
    const double head = head_gradient_elements(config, workload.plan);
    const double at_end = double(e.trainable) + (config.tie_embeddings ? head : 0.0);
    const bool start_peaks = a.at_start + head >= a.at_end + at_end;
    e.activations = kBytesPerElement * (start_peaks ? a.at_start : a.at_end);
    e.gradients = kBytesPerElement * (start_peaks ? head : at_end);
  } else {
    e.activations = kBytesPerElement * inference_activation_elements(config, workload);
    e.kv_cache = kBytesPerElement * kv_cache_elements(config, workload);
  }
  return e;
}

MemoryEstimate with_host_runtime(MemoryEstimate estimate) {
  estimate.runtime = kHostRuntimeBytes;
  return estimate;
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
