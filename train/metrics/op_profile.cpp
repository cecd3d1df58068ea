// OpProfile over LibTorch's Kineto profiler API (CPU ops recorded by LibTorch itself even where it was built without
// Kineto; CUDA activity where Kineto and CUPTI are there), the per-step summary and the Chrome trace.
#include "train/metrics/op_profile.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/profiler_kineto.h>

#include "base/durable_io.h"
#include "models/torch_compat.h"

namespace lmzoo {

namespace {

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerState;

torch::profiler::impl::ProfilerConfig kineto_config() {
  return torch::profiler::impl::ProfilerConfig(ProfilerState::KINETO, /*report_input_shapes=*/false,
                                               /*profile_memory=*/false);
}

std::set<ActivityType> activities(const torch::Device& device) {
  std::set<ActivityType> out{ActivityType::CPU};
  if (device.is_cuda()) out.insert(ActivityType::CUDA);
  return out;
}

// libkineto's ActivityType numbers (stable since Kineto's first releases): what an event recorded.
bool event_kind(uint8_t activity, ProfileEventKind& kind) {
  switch (activity) {
    case 0: kind = ProfileEventKind::kCpuOp; return true;       // CPU_OP
    case 3:                                                     // GPU_MEMCPY
    case 4: kind = ProfileEventKind::kCopy; return true;        // GPU_MEMSET
    case 5: kind = ProfileEventKind::kKernel; return true;      // CONCURRENT_KERNEL
    case 7:                                                     // CUDA_RUNTIME
    case 8: kind = ProfileEventKind::kRuntime; return true;     // CUDA_DRIVER
    default: return false;                                      // annotations, correlations, overhead
  }
}

ProfileEvent from_kineto(const profiler::KinetoEvent& e, ProfileEventKind kind) {
  ProfileEvent out;
  out.name = e.name();
  out.kind = kind;
#if LMZOO_TORCH_AT_LEAST(2, 1)
  out.start_us = double(e.startNs()) / 1e3;
  out.duration_us = double(e.durationNs()) / 1e3;
#else
  out.start_us = double(e.startUs());
  out.duration_us = double(e.durationUs());
#endif
  out.self_us = out.duration_us;
  out.thread = e.startThreadId();
  return out;
}

}  // namespace

OpProfile::OpProfile(const torch::Device& device) {
  profiler::prepareProfiler(kineto_config(), activities(device));
  profiler::enableProfiler(kineto_config(), activities(device));
  running_ = true;
}

OpProfile::~OpProfile() {
  if (!running_) return;
  try {
    profiler::disableProfiler();
  } catch (...) {  // leaving the scope on an error already being reported
  }
}

std::vector<ProfileEvent> OpProfile::stop() {
  running_ = false;
  const std::unique_ptr<profiler::ProfilerResult> result = profiler::disableProfiler();
  std::vector<ProfileEvent> events;
  for (const auto& e : result->events()) {
    ProfileEventKind kind;
    if (event_kind(e.activityType(), kind)) events.push_back(from_kineto(e, kind));
  }
  take_out_children(events);
  return events;
}

void take_out_children(std::vector<ProfileEvent>& events) {
  std::vector<ProfileEvent*> ops;
  for (auto& e : events) {
    if (e.kind == ProfileEventKind::kCpuOp) ops.push_back(&e);
  }
  std::sort(ops.begin(), ops.end(), [](const ProfileEvent* a, const ProfileEvent* b) {
    if (a->thread != b->thread) return a->thread < b->thread;
    if (a->start_us != b->start_us) return a->start_us < b->start_us;
    return a->duration_us > b->duration_us;  // a parent before a child starting with it
  });
  std::vector<ProfileEvent*> open;
  for (ProfileEvent* e : ops) {
    while (!open.empty() && (open.back()->thread != e->thread ||
                             open.back()->start_us + open.back()->duration_us <= e->start_us)) {
      open.pop_back();
    }
    if (!open.empty()) open.back()->self_us -= e->duration_us;
    open.push_back(e);
  }
}

ProfileSummary summarize_profile(const std::vector<ProfileEvent>& events, int64_t steps, size_t top) {
  ProfileSummary s;
  s.steps = std::max<int64_t>(steps, 1);
  s.kernels = std::any_of(events.begin(), events.end(),
                          [](const ProfileEvent& e) { return e.kind == ProfileEventKind::kKernel; });
  std::map<std::string, ProfileRow> rows;
  for (const auto& e : events) {
    if (e.kind == ProfileEventKind::kRuntime) {
      if (e.name.find("Synchronize") != std::string::npos || e.name == "cudaMemcpy") ++s.host_synchronizations[e.name];
      continue;
    }
    const bool counted = s.kernels ? e.kind != ProfileEventKind::kCpuOp : e.kind == ProfileEventKind::kCpuOp;
    if (!counted) continue;
    ProfileRow& row = rows[e.name];
    row.name = e.name;
    ++row.calls;
    row.total_us += s.kernels ? e.duration_us : e.self_us;
    if (e.kind != ProfileEventKind::kCopy) ++s.launches;
    s.busy_us += s.kernels ? e.duration_us : e.self_us;
  }
  for (auto& [name, row] : rows) s.top.push_back(row);
  std::sort(s.top.begin(), s.top.end(), [](const ProfileRow& a, const ProfileRow& b) { return a.total_us > b.total_us; });
  if (s.top.size() > top) s.top.resize(top);
  return s;
}

std::vector<std::string> profile_report_lines(const ProfileSummary& s) {
  const double steps = double(s.steps);
  const char* what = s.kernels ? "CUDA kernels" : "ATen ops";
  char line[512];
  std::vector<std::string> out;
  std::snprintf(line, sizeof line, "profile of %ld steps: %.1f %s per step, %.3f ms of %s per step", long(s.steps),
                double(s.launches) / steps, what, s.busy_us / steps / 1e3, s.kernels ? "GPU time" : "their own CPU time");
  out.push_back(line);
  if (s.kernels) {
    std::string waits;
    for (const auto& [name, calls] : s.host_synchronizations) {
      waits += (waits.empty() ? "" : ", ") + name + " x" + std::to_string(calls);
    }
    out.push_back("host synchronisations in all (CUDA calls that wait for the GPU): " + (waits.empty() ? "none" : waits));
  }
  out.push_back(std::string("  ms/step  share  calls/step  ") + (s.kernels ? "kernel or copy" : "op (own time)"));
  for (const ProfileRow& row : s.top) {
    const std::string name = row.name.size() > 110 ? row.name.substr(0, 107) + "..." : row.name;
    std::snprintf(line, sizeof line, "  %7.3f  %4.1f%%  %10.1f  %s", row.total_us / steps / 1e3,
                  s.busy_us > 0 ? 100.0 * row.total_us / s.busy_us : 0.0, double(row.calls) / steps, name.c_str());
    out.push_back(line);
  }
  return out;
}

void write_chrome_trace(const std::vector<ProfileEvent>& events, const std::string& path) {
  nlohmann::json trace = nlohmann::json::array();
  for (const auto& e : events) {
    const bool on_gpu = e.kind == ProfileEventKind::kKernel || e.kind == ProfileEventKind::kCopy;
    trace.push_back({{"name", e.name},
                     {"cat", on_gpu ? "gpu" : e.kind == ProfileEventKind::kRuntime ? "cuda_runtime" : "cpu_op"},
                     {"ph", "X"},
                     {"ts", e.start_us},
                     {"dur", e.duration_us},
                     {"pid", on_gpu ? 1 : 0},
                     {"tid", on_gpu ? 0 : e.thread}});
  }
  replace_file_durably(path, nlohmann::json({{"traceEvents", trace}}).dump() + "\n");
}

}  // namespace lmzoo
