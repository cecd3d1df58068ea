// The launcher's description of a multi-process run: torchrun's RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT (and whether its agent already serves the store). Leaves out: connecting (communicator.h).
#pragma once
#include <optional>
#include <string>

namespace lmzoo {

struct DistributedEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr;
  int master_port = 0;
  bool agent_store = false;  // torchrun's agent listens on MASTER_PORT: every rank joins it as a client
  int restart_count = 0;     // TORCHELASTIC_RESTART_COUNT: keeps a restarted group's keys apart
};

// The run's ranks from the environment; nothing when WORLD_SIZE is unset (one process, as before). Throws
// std::invalid_argument naming the variable when the values make no sense (a missing or non-numeric one,
// RANK outside [0, WORLD_SIZE), a port outside 1..65535).
std::optional<DistributedEnv> distributed_env_from_environment();

}  // namespace lmzoo
