// GGUF's q8_0 blocks: 32 weights as one fp16 scale d = max|x| / 127 then 32 int8 q = round(x / d) (half away from
// zero), as ggml's quantize_row_q8_0_ref and gguf-py compute them. Leaves out: other quantizations.
#pragma once
#include <cstdint>
#include <string>

#include <torch/torch.h>

namespace lmzoo {

// The q8_0 bytes of X (float32, contiguous, numel a multiple of 32), block after block in row-major order.
std::string quantize_q8_0(const torch::Tensor& x);

// The float32 values of N weights stored as q8_0 at DATA (N a multiple of 32): d * q.
torch::Tensor dequantize_q8_0(const uint8_t* data, int64_t n);

}  // namespace lmzoo
