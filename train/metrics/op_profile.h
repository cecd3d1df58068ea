// An op-level profile of a stretch of a run (LibTorch's Kineto profiler API): every ATen op on the CPU and, where
// LibTorch has Kineto with CUPTI (pip torch), every CUDA kernel, copy and runtime call; summarised per step (the
// kernels or ops by time, host synchronisations) and written as a Chrome trace.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace lmzoo {

// One recorded event: a CPU op (its own time, children's taken out), a CUDA kernel, copy or memset (its time on the
// GPU), or a CUDA runtime call; times in microseconds.
enum class ProfileEventKind { kCpuOp, kKernel, kCopy, kRuntime };

struct ProfileEvent {
  std::string name;
  ProfileEventKind kind = ProfileEventKind::kCpuOp;
  double start_us = 0, duration_us = 0, self_us = 0;
  uint64_t thread = 0;
};

// Names and time of one kind of event over the profiled steps.
struct ProfileRow {
  std::string name;
  int64_t calls = 0;
  double total_us = 0;  // CPU ops: self time; kernels and copies: time on the GPU
};

// What the profiled steps did, per step where it says so.
struct ProfileSummary {
  int64_t steps = 0;
  bool kernels = false;            // rows are CUDA kernels (false: CPU ops; no kernel was recorded)
  int64_t launches = 0;            // kernels (or CPU ops) in all steps
  double busy_us = 0;              // their summed time
  std::map<std::string, int64_t> host_synchronizations;  // CUDA runtime calls that wait for the GPU, by name
  std::vector<ProfileRow> top;     // by total time, largest first
};

// Records from construction to stop(); DEVICE CUDA adds the GPU's activity where this LibTorch can record it.
class OpProfile {
 public:
  explicit OpProfile(const torch::Device& device);
  ~OpProfile();
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;
  std::vector<ProfileEvent> stop();

 private:
  bool running_ = false;
};

// CPU ops nest (an op calls others): sets each op's self_us to its duration less its direct children's, found per
// thread from the intervals. stop() applies it.
void take_out_children(std::vector<ProfileEvent>& events);

// The summary of EVENTS recorded over STEPS steps, TOP rows.
ProfileSummary summarize_profile(const std::vector<ProfileEvent>& events, int64_t steps, size_t top);

// The lines bench prints for SUMMARY: kernels (or ops) per step, host synchronisations, the table of the top rows.
std::vector<std::string> profile_report_lines(const ProfileSummary& summary);

// EVENTS as a Chrome trace (chrome://tracing, Perfetto) at PATH, written whole or not at all.
void write_chrome_trace(const std::vector<ProfileEvent>& events, const std::string& path);

}  // namespace lmzoo
