// The training loop: batches -> loss -> AdamW step, with periodic validation, checkpoints, progress,
// metrics.jsonl, curves.svg and the program's callbacks, in one process or as one of several data-parallel ranks.
// Leaves out taking the run directory and resolving the device (run_training.h does both).
#pragma once
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/config.h"
#include "train/checkpoint/checkpoint.h"
#include "train/train_callbacks.h"
#include "train/train_config.h"

namespace lmzoo {

class Communicator;

struct TrainRequest {
  ModelConfig model;
  TrainConfig train;
  std::string tokenizer_model;  // serialized SentencePiece model, stored in checkpoints
  ChatSettings chat;            // the chat template and end-of-turn ids the checkpoints carry
  std::string resume_dir;       // a checkpoint to continue from (empty: fresh start)
  bool write_outputs = true;    // checkpoints and metrics.jsonl (off for benchmarks)
  bool show_progress = true;
  int64_t max_steps_this_call = 0;  // > 0: save last/ and return after this many steps
  bool synchronize_steps = false;   // wait for the GPU at the end of every step (per-step timings for bench)
  bool random_tokens = false;       // train on seeded random token ids (make_random_token_task), not train.data_dir
  // Data-parallel ranks (null: one process). Every rank runs train_model with the same request; each trains on its
  // own rows of every step, gradients are summed over ranks, and only rank 0 writes and shows progress.
  Communicator* ranks = nullptr;
  TrainCallbacks callbacks;  // per step and per validation; either may stop the run
};

struct TrainResult {
  TrainerState state;
  double last_train_loss = 0.0;
  double last_val_loss = 0.0;   // NaN when never evaluated
  std::vector<double> step_seconds;  // wall time of each optimizer step run in this call
  bool interrupted = false;      // stopped early (signal, max_steps_this_call or a callback) after saving last/
  bool stopped_by_callback = false;  // a callback asked for that early stop
  int64_t peak_device_memory_bytes = 0;  // CUDA: most bytes allocated to tensors at once (0 on a CPU)
  int64_t trainable_parameters = 0;      // elements of the parameters that required gradients (tied ones once)
  int64_t parameter_bytes = 0;           // bytes the parameters are stored in (tied ones once)
  // --cuda-graphs: "replayed from step N" (and from when steps ran eagerly again, and why), or why no step could
  // be replayed; "" without the switch.
  std::string cuda_graphs;
  // --attention-kernel other than default: the kernels' timings and the one chosen, the one named, or why the
  // switch did nothing.
  std::string attention;
};

// Trains on DEVICE (training_device(): fp16 only on CUDA; with ranks, theirs). With write_outputs it writes to
// train.out_dir (made if missing) and never locks it: run_training takes the directory first (take_run_dir: one
// live run per directory, crash leftovers recovered).
TrainResult train_model(const TrainRequest& request, const torch::Device& device);

}  // namespace lmzoo
