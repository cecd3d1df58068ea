// TrainConfig's fields, each declared once: FIELD(type, name, default, flag, flag_kind, group, resumable, help).
// The struct (train_config.h), its JSON (train_config.cpp), the settings a --resume may change (resume_setup.cpp)
// and lmzoo train's training flags with their groups and help (tools/cli/cmd_train.cpp) are generated from this list.
// flag_kind: kValue (a value, default shown in --help, applied to every new run), kOptional (applied only when
// given: --decay-steps, --tf32, --shard-optimizer), kSwitch (no value: present means true), kNone (no flag of its
// own: the CLI sets the field from --objective, --data, --val-data, --init, --out). help: an expression, evaluated
// only where flags are built. Within a group the order is --help's.
#pragma once

namespace lmzoo {
// How lmzoo train sets a field from its flag (the flag_kind column).
enum class TrainFlagKind { kValue, kOptional, kSwitch, kNone };
}  // namespace lmzoo

#define LMZOO_TRAIN_CONFIG_FIELDS(FIELD)                                                                              \
  FIELD(Objective, objective, Objective::kCausal, "", kNone, "", false, "")                                          \
  /* prepared shards (seq2seq: prepared pairs); classify: a labelled file */                                          \
  FIELD(std::string, data_dir, "", "", kNone, "", false, "")                                                          \
  FIELD(std::string, val_data, "", "", kNone, "", false, "") /* classify: labelled validation file (empty: none) */  \
  /* classify and --init: the pretrained checkpoint the run started from */                                           \
  FIELD(std::string, init_checkpoint, "", "", kNone, "", false, "")                                                   \
  FIELD(std::string, out_dir, "", "", kNone, "", false, "")                                                           \
  /* Masked LM (BERT): selection rate, and of the selected the [MASK] and random-token rates. */                      \
  FIELD(double, mlm_probability, 0.15, "mlm-probability", kValue, "Masked LM", false,                                \
        "fraction of tokens selected for prediction")                                                                  \
  FIELD(double, mask_rate, 0.8, "mask-rate", kValue, "Masked LM", false, "of the selected: replaced by [MASK]")       \
  FIELD(double, random_rate, 0.1, "random-rate", kValue, "Masked LM", false,                                          \
        "of the selected: replaced by a random token (the rest kept)")                                                 \
  FIELD(bool, whole_word_mask, false, "whole-word-mask", kSwitch, "Masked LM", false,                                 \
        "select whole words rather than pieces")                                                                       \
  /* [CLS] A [SEP] B [SEP] with token types, cut at a random point */                                                 \
  FIELD(bool, segment_pairs, false, "segment-pairs", kSwitch, "Masked LM", false,                                     \
        "frame [CLS] A [SEP] B [SEP] with token types")                                                                \
  /* Span corruption (T5): fraction of tokens dropped into the targets, mean length of a noise span. */               \
  FIELD(double, noise_density, 0.15, "noise-density", kValue, "Span corruption (t5)", false,                          \
        "fraction of tokens dropped into the targets")                                                                 \
  FIELD(double, mean_span_length, 3.0, "mean-span-length", kValue, "Span corruption (t5)", false,                     \
        "mean length of a noise span")                                                                                 \
  /* Chat (prepared conversations): the tokens of a row, several examples per row, and what longer ones become. */    \
  FIELD(int64_t, max_length, 0, "max-length", kValue, "Chat", false,                                                 \
        "chat: tokens per row, at most the model's context (0: the model's context, --seq-len)")                      \
  FIELD(bool, packing, false, "packing", kSwitch, "Chat", false,                                                     \
        "chat: several examples per row; attention never crosses one's edge and positions restart at each")          \
  FIELD(Truncation, truncate, Truncation::kRefuse, "truncate", kValue, "Chat", false,                                \
        "chat: examples longer than a row: " + enum_help<Truncation>())                                               \
  FIELD(int64_t, batch_size, 12, "batch-size", kValue, "Training", false, "sequences per micro-batch")                \
  FIELD(int64_t, grad_accum, 1, "grad-accum", kValue, "Training", false, "micro-batches per optimizer step")          \
  FIELD(int64_t, steps, 2000, "steps", kValue, "Training", true, "optimizer steps in total")                          \
  FIELD(double, lr, 1e-3, "lr", kValue, "Training", true, "peak learning rate (classify: 5e-05)")                     \
  FIELD(double, min_lr, 1e-4, "min-lr", kValue, "Training", true, "final learning rate (classify: 0)")                \
  FIELD(int64_t, warmup, 100, "warmup", kValue, "Training", false, "linear warmup steps (classify: 0)")               \
  FIELD(Schedule, schedule, Schedule::kCosine, "schedule", kValue, "Training", false,                                 \
        enum_help<Schedule>() + " (classify: linear)")                                                                 \
  /* The step where the decay reaches min_lr (nanoGPT's lr_decay_iters); 0: --steps of the run's first start.         \
     Stored in the run, so extending --steps on resume never moves the learning rate; past it, min_lr. */             \
  FIELD(int64_t, decay_steps, 0, "decay-steps", kOptional, "Training", false,                                         \
        "step where the decay reaches --min-lr, which holds after it (default: --steps; kept on --resume, so "         \
        "extending --steps never moves the rate)")                                                                     \
  FIELD(double, weight_decay, 0.1, "weight-decay", kValue, "Training", true,                                          \
        "AdamW weight decay (tensors with >= 2 dims; classify: 0.01)")                                                 \
  FIELD(double, beta1, 0.9, "beta1", kValue, "Training", true, "AdamW beta1")                                         \
  FIELD(double, beta2, 0.95, "beta2", kValue, "Training", true, "AdamW beta2 (classify: 0.999)")                      \
  FIELD(double, grad_clip, 1.0, "grad-clip", kValue, "Training", true, "gradient norm clip (0: off)")                 \
  FIELD(int64_t, eval_interval, 250, "eval-interval", kValue, "Training", true,                                       \
        "steps between validations and checkpoints")                                                                   \
  FIELD(int64_t, eval_iters, 20, "eval-iters", kValue, "Training", true, "validation batches per evaluation")         \
  FIELD(int64_t, log_interval, 10, "log-interval", kValue, "Training", true,                                          \
        "steps between progress lines / metrics records")                                                              \
  FIELD(uint64_t, seed, 1337, "seed", kValue, "Training", false, "random seed")                                       \
  FIELD(std::string, device, "auto", "device", kValue, "Training", true, "auto|cpu|cuda[:N]")                         \
  FIELD(Precision, precision, Precision::kFp32, "precision", kValue, "Training", true, enum_help<Precision>())        \
  FIELD(int64_t, max_consecutive_skips, 25, "max-consecutive-skips", kValue, "Training", true,                        \
        "steps with non-finite gradients are skipped; this many in a row stop the run")                                \
  FIELD(bool, tf32, true, "tf32", kOptional, "Training", true,                                                        \
        "CUDA: fp32 matmuls on TF32 tensor cores (--tf32=false: full fp32)")                                           \
  /* Which fused attention kernel SDPA tries first on CUDA (train/device/attention_kernels.h). */                    \
  FIELD(AttentionKernel, attention_kernel, AttentionKernel::kDefault, "attention-kernel", kValue, "Training", true,  \
        "CUDA: the attention kernel tried first, " + enum_help<AttentionKernel>())                                    \
  /* The whole step as one CUDA graph, recorded once and replayed (train/graphed_step.h). */                         \
  FIELD(bool, cuda_graphs, false, "cuda-graphs", kOptional, "Training", true,                                         \
        "CUDA: record the step (forward, backward, clip, AdamW) once as a CUDA graph and replay it; what cannot be "  \
        "replayed runs as usual and the run says why (--cuda-graphs=false on --resume: stop)")                        \
  /* Each residual addition and the norm after it in one CUDA kernel of lmzoo's own (models/kernels/add_norm.h). */   \
  FIELD(bool, fused_add_norm, false, "fused-add-norm", kOptional, "Training", true,                                   \
        "CUDA: each residual addition and the norm after it in one kernel, forward and backward (plain ops elsewhere)") \
  /* The feed-forward's bias + tanh GELU in cuBLASLt's epilogues, forward and backward (models/kernels/gelu_mlp.h). */ \
  FIELD(bool, fused_bias_gelu, false, "fused-bias-gelu", kOptional, "Training", true,                                 \
        "CUDA: the feed-forward's bias and tanh GELU in the epilogue of its first matrix product (cuBLASLt), and "    \
        "GELU's derivative and the bias gradient in the backward product's (gelu-tanh models; plain ops elsewhere)")  \
  /* Several ranks: each keeps the AdamW state of its share of the parameters (ZeRO-1, optimizer_shards.h). */        \
  FIELD(bool, shard_optimizer, false, "shard-optimizer", kOptional, "Distributed (under torchrun)", true,             \
        "ZeRO-1: each rank keeps AdamW's state for about 1/N of the parameters; the same weights as without "          \
        "(--shard-optimizer=false on --resume: stop sharding)")                                                      \
  /* LoRA (train/peft/lora_setup.h): with an --init checkpoint, its weights frozen and low-rank adapters trained on the   \
     named projections; 0: no adapters. The run's checkpoints hold the adapters and point at the base. */             \
  FIELD(int64_t, lora_rank, 0, "lora-rank", kValue, "Fine-tuning and memory", false,                                  \
        "with --init: train rank-R adapters B*A on the frozen model (0: full fine-tune)")                              \
  FIELD(double, lora_alpha, 16.0, "lora-alpha", kValue, "Fine-tuning and memory", false,                              \
        "adapter scale is alpha / rank (0 < alpha <= 1048576)")                                                        \
  FIELD(double, lora_dropout, 0.05, "lora-dropout", kValue, "Fine-tuning and memory", false,                          \
        "dropout on each adapter's input")                                                                             \
  FIELD(std::string, lora_targets, "q,v", "lora-targets", kValue, "Fine-tuning and memory", false,                    \
        "projections given adapters: q,k,v,o,up,gate,down (comma-separated) or all-linear")                           \
  FIELD(std::string, trainable, "", "trainable", kValue, "Fine-tuning and memory", false,                            \
        "with --lora-rank: parameters trained beside the adapters, by name part (comma-separated, e.g. ln_,lm_head)") \
  FIELD(BasePrecision, base_precision, BasePrecision::kFp32, "base-precision", kValue, "Fine-tuning and memory",     \
        false, "with --lora-rank: storage of the frozen projection weights, " + enum_help<BasePrecision>())           \
  /* "none", "blocks" or "every-N" (models/activation_checkpointing.h parses it). */                                  \
  FIELD(std::string, activation_checkpointing, "none", "activation-checkpointing", kValue, "Fine-tuning and memory",  \
        true, "recompute blocks' activations in the backward instead of keeping them: none|blocks|every-N")          \
  /* The output layer and its cross-entropy in row chunks (models/kernels/fused_head_loss.h). */                     \
  FIELD(bool, fused_loss, false, "fused-loss", kOptional, "Fine-tuning and memory", true,                            \
        "output layer and cross-entropy together in row chunks: no tokens x vocabulary logits kept, the same loss "   \
        "within rounding (gpt, t5, bert MLM; --fused-loss=false on --resume: stop)")                                  \
  /* A LoRA run: the digest of its base's weights (init_checkpoint's model.pt), checked whenever they load. */        \
  FIELD(std::string, lora_base_digest, "", "", kNone, "", false, "")
