// bench --profile: the per-step summary from hand-made events (own times of nested ops, kernels over CPU ops, host
// synchronisations by name), and from a real CPU run: ops per step, own times within the step's time, the top rows
// in order, and a Chrome trace holding the same ops.
#include "tests/catch_compat.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/cli_checks.h"
#include "tests/cli_helpers.h"
#include "train/metrics/op_profile.h"

using namespace lmzoo;
using namespace lmzoo::test;

namespace {

ProfileEvent event(const std::string& name, ProfileEventKind kind, double start, double duration, uint64_t thread = 1) {
  ProfileEvent e;
  e.name = name;
  e.kind = kind;
  e.start_us = start;
  e.duration_us = e.self_us = duration;
  e.thread = thread;
  return e;
}

}  // namespace

TEST_CASE("profile summary: nested CPU ops count their own time once", "[profile]") {
  // linear [0, 100) calls mm [10, 70) which calls resolve [20, 25); add [100, 130); on another thread mm [0, 50).
  std::vector<ProfileEvent> events = {
      event("aten::linear", ProfileEventKind::kCpuOp, 0, 100), event("aten::mm", ProfileEventKind::kCpuOp, 10, 60),
      event("aten::resolve", ProfileEventKind::kCpuOp, 20, 5), event("aten::add", ProfileEventKind::kCpuOp, 100, 30),
      event("aten::mm", ProfileEventKind::kCpuOp, 0, 50, 2)};
  take_out_children(events);
  CHECK(events[0].self_us == 40);  // 100 - 60
  CHECK(events[1].self_us == 55);  // 60 - 5
  CHECK(events[2].self_us == 5);
  CHECK(events[3].self_us == 30);
  CHECK(events[4].self_us == 50);
  const ProfileSummary s = summarize_profile(events, /*steps=*/2, /*top=*/2);
  CHECK(!s.kernels);
  CHECK(s.launches == 5);
  CHECK(s.busy_us == 180);  // the wall time the two threads were busy: 130 + 50
  REQUIRE(s.top.size() == 2);
  CHECK(s.top[0].name == "aten::mm");
  CHECK(s.top[0].calls == 2);
  CHECK(s.top[0].total_us == 105);
  CHECK(s.top[1].name == "aten::linear");
  const auto lines = profile_report_lines(s);
  CHECK(lines.front().find("2.5 ATen ops per step, 0.090 ms of their own CPU time per step") != std::string::npos);
}

TEST_CASE("profile summary: with kernels recorded, kernels and copies are the rows and host waits are named",
          "[profile]") {
  std::vector<ProfileEvent> events = {
      event("aten::mm", ProfileEventKind::kCpuOp, 0, 10), event("cudaLaunchKernel", ProfileEventKind::kRuntime, 1, 2),
      event("ampere_sgemm", ProfileEventKind::kKernel, 5, 40), event("ampere_sgemm", ProfileEventKind::kKernel, 50, 40),
      event("elementwise_add", ProfileEventKind::kKernel, 95, 5),
      event("Memcpy DtoH (Device -> Pageable)", ProfileEventKind::kCopy, 100, 3),
      event("cudaStreamSynchronize", ProfileEventKind::kRuntime, 20, 90),
      event("cudaDeviceSynchronize", ProfileEventKind::kRuntime, 110, 1)};
  const ProfileSummary s = summarize_profile(events, 1, 10);
  CHECK(s.kernels);
  CHECK(s.launches == 3);  // copies are rows, not launches
  CHECK(s.busy_us == 88);
  REQUIRE(s.top.size() == 3);
  CHECK(s.top[0].name == "ampere_sgemm");
  CHECK(s.top[0].calls == 2);
  CHECK(s.host_synchronizations.at("cudaStreamSynchronize") == 1);
  CHECK(s.host_synchronizations.at("cudaDeviceSynchronize") == 1);
  CHECK(s.host_synchronizations.count("cudaLaunchKernel") == 0);
  const auto lines = profile_report_lines(s);
  CHECK(lines[1].find("cudaDeviceSynchronize x1, cudaStreamSynchronize x1") != std::string::npos);
}

TEST_CASE("bench --profile on the CPU: ATen ops per step, the top ones, and their Chrome trace",
          "[profile][bench][cli]") {
  TempDir tmp;
  const std::string trace = tmp / "trace.json";
  auto r = run_cli("bench --vocab-size 99 --steps 5 --skip 2 --batch-size 4 --threads 1 --profile " + trace);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("profile of 3 steps: ") != std::string::npos);
  CHECK(r.out.find("Chrome trace: " + trace) != std::string::npos);
  const auto j = last_json_line(r.out);
  const auto& p = j["profile"];
  CHECK(p["steps"] == 3);
  CHECK(p["rows"] == "aten ops");
  const double ops = p["launches_per_step"].get<double>(), busy = p["busy_ms_per_step"].get<double>();
  INFO("ops per step " << ops << ", busy " << busy << " ms, step " << j["ms_per_iter_median"].get<double>() << " ms");
  CHECK(ops > 100);  // 4 blocks forward and backward, the loss and the optimizer
  CHECK(busy > 0);
  CHECK(busy < 1.5 * j["ms_per_iter_median"].get<double>());  // own times: nested ops are not counted twice
  REQUIRE(!p["top"].empty());
  double previous = 1e300, top_sum = 0;
  for (const auto& row : p["top"]) {
    CHECK(row["ms_per_step"].get<double>() <= previous);
    CHECK(row["calls_per_step"].get<double>() > 0);
    previous = row["ms_per_step"].get<double>();
    top_sum += previous;
  }
  CHECK(top_sum <= busy * 1.0001);
  std::ifstream in(trace);
  const auto events = nlohmann::json::parse(in)["traceEvents"];
  int64_t cpu_ops = 0;
  for (const auto& e : events) {
    CHECK(e["ph"] == "X");
    CHECK(e["dur"].get<double>() >= 0);
    if (e["cat"] == "cpu_op") ++cpu_ops;
  }
  CHECK(double(cpu_ops) == Approx(ops * 3));
}
