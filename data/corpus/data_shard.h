// Which rows of a step's global batch a rank draws, and the seed of each row. With R ranks of batch B, rank r's
// micro-batch m holds rows [(m * R + r) * B, +B) of the step's row stream, each row seeded on its own: R ranks of
// batch B draw exactly what one rank of batch R * B (or one rank with R micro-batches) draws.
#pragma once
#include <cstdint>

namespace lmzoo {

struct DataShard {
  int64_t rank = 0;
  int64_t world_size = 1;
};

// splitmix64 mix of several integers: the seed of a batch or of one row.
uint64_t mix_seed(uint64_t a, uint64_t b, uint64_t c = 0, uint64_t d = 0);

// The position of row `row` of micro-batch `micro` (batch_size rows) in the step's global row stream.
inline int64_t global_row(const DataShard& shard, int64_t micro, int64_t batch_size, int64_t row) {
  return (micro * shard.world_size + shard.rank) * batch_size + row;
}

// The seed of one row of one step: rows are drawn independently, so a rank draws only its own.
inline uint64_t row_seed(uint64_t seed, int64_t step, int64_t row_in_step) {
  return mix_seed(seed, uint64_t(step), uint64_t(row_in_step), 0x80C5);
}

}  // namespace lmzoo
