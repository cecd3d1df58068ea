// A device's practical peak FLOP/s (a GEMM timed in this process, the MFU denominator) and its peak memory.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "train/train_enums.h"

namespace lmzoo {

// Median FLOP/s of square matmuls on DEVICE in the dtype PRECISION trains in (fp32 | bf16): n = 512 on a CPU,
// 8192 on a GPU (fp32 there follows the TF32 setting in force). Takes a fraction of a second; afterwards the
// GPU's peak-memory statistic starts again from zero.
double measure_peak_flops(const torch::Device& device, Precision precision);

// FLOP/s of each timed batch of square matmuls (the measurements behind measure_peak_flops).
std::vector<double> time_gemms(const torch::Device& device, Precision precision);

// Most bytes of CUDA memory allocated to tensors at once on DEVICE since the process started (as
// torch.cuda.max_memory_allocated), 0 where LibTorch was built without CUDA; on a CPU the most bytes CPU tensors
// held at once since count_cpu_tensor_bytes(), 0 when it was not called.
int64_t peak_device_memory_bytes(const torch::Device& device);

// From now on, counts the bytes of every CPU tensor allocated (c10's CPU allocator wrapped for the rest of the
// process): the peak the tensors reach, apart from the process's resident memory, which also holds LibTorch and
// what malloc keeps after a free. Tensors that exist before the call are not counted. Idempotent.
void count_cpu_tensor_bytes();
// Bytes held by the CPU tensors counted since count_cpu_tensor_bytes() (0 when it was not called).
int64_t live_cpu_tensor_bytes();

// The memory DEVICE offers in bytes: a GPU's total memory (CUDA's device properties), else this machine's
// physical memory.
double device_memory_capacity_bytes(const torch::Device& device);

// This process's peak resident memory in bytes (getrusage's ru_maxrss): what a CPU run's tensors, the
// library and the data took at most.
int64_t peak_host_memory_bytes();

}  // namespace lmzoo
