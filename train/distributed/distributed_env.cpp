// Reads and checks torchrun's environment variables.
#include "train/distributed/distributed_env.h"

#include <cstdlib>
#include <stdexcept>

namespace lmzoo {

namespace {

const char* env_or_null(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : nullptr;
}

std::invalid_argument not_set(const char* name) {
  return std::invalid_argument(std::string(name) + " is not set (a multi-process run needs RANK, WORLD_SIZE, "
                               "MASTER_ADDR and MASTER_PORT: launch it with torchrun)");
}

long env_integer(const char* name, const char* fallback) {
  const char* text = env_or_null(name);
  if (!text) text = fallback;
  if (!text) throw not_set(name);
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0') throw std::invalid_argument(std::string(name) + "=" + text + " is not an integer");
  return value;
}

}  // namespace

std::optional<DistributedEnv> distributed_env_from_environment() {
  if (!env_or_null("WORLD_SIZE")) {
    for (const char* name : {"RANK", "LOCAL_RANK"}) {
      if (env_or_null(name)) throw std::invalid_argument(std::string(name) + " is set but WORLD_SIZE is not");
    }
    return std::nullopt;
  }
  DistributedEnv env;
  const long world = env_integer("WORLD_SIZE", nullptr);
  if (world < 1 || world > 1 << 20) throw std::invalid_argument("WORLD_SIZE=" + std::to_string(world) + " is not a number of ranks");
  env.world_size = int(world);
  const long rank = env_integer("RANK", world == 1 ? "0" : nullptr);
  if (rank < 0 || rank >= world) {
    throw std::invalid_argument("RANK=" + std::to_string(rank) + " is outside 0.." + std::to_string(world - 1) +
                                " (WORLD_SIZE=" + std::to_string(world) + ")");
  }
  env.rank = int(rank);
  const long local_rank = env_integer("LOCAL_RANK", "0");
  if (local_rank < 0 || local_rank > rank) {
    throw std::invalid_argument("LOCAL_RANK=" + std::to_string(local_rank) + " does not fit RANK=" + std::to_string(rank));
  }
  env.local_rank = int(local_rank);
  const char* addr = env_or_null("MASTER_ADDR");
  env.master_addr = addr ? addr : (world == 1 ? "127.0.0.1" : "");
  if (env.master_addr.empty()) throw not_set("MASTER_ADDR");
  const long port = env_integer("MASTER_PORT", world == 1 ? "29500" : nullptr);
  if (port < 1 || port > 65535) throw std::invalid_argument("MASTER_PORT=" + std::to_string(port) + " is not a TCP port");
  env.master_port = int(port);
  const char* agent = env_or_null("TORCHELASTIC_USE_AGENT_STORE");
  env.agent_store = agent && (std::string(agent) == "True" || std::string(agent) == "1" || std::string(agent) == "true");
  env.restart_count = int(env_integer("TORCHELASTIC_RESTART_COUNT", "0"));
  return env;
}

}  // namespace lmzoo
