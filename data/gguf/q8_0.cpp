// q8_0 quantization (q8_0.h). Leaves out: SIMD; export and import run it once per tensor.
#include "data/gguf/q8_0.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "data/gguf/gguf_format.h"

namespace lmzoo {

std::string quantize_q8_0(const torch::Tensor& x) {
  const torch::Tensor v = x.to(torch::kFloat32).contiguous();
  const int64_t n = v.numel();
  if (n % kQ8Block != 0) throw std::invalid_argument("q8_0 needs a multiple of 32 values, got " + std::to_string(n));
  const float* p = v.data_ptr<float>();
  std::string out(static_cast<size_t>(n / kQ8Block * kQ8BlockBytes), '\0');
  char* o = out.data();
  for (int64_t b = 0; b < n / kQ8Block; ++b, p += kQ8Block, o += kQ8BlockBytes) {
    float amax = 0.0f;
    for (int64_t j = 0; j < kQ8Block; ++j) amax = std::max(amax, std::fabs(p[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t d16 = c10::Half(d).x;  // round to nearest even, as numpy's astype(float16)
    std::memcpy(o, &d16, 2);
    for (int64_t j = 0; j < kQ8Block; ++j) o[2 + j] = static_cast<char>(static_cast<int8_t>(std::round(p[j] * id)));
  }
  return out;
}

torch::Tensor dequantize_q8_0(const uint8_t* data, int64_t n) {
  if (n % kQ8Block != 0) throw std::invalid_argument("q8_0 needs a multiple of 32 values, got " + std::to_string(n));
  torch::Tensor out = torch::empty({n}, torch::kFloat32);
  float* o = out.data_ptr<float>();
  for (int64_t b = 0; b < n / kQ8Block; ++b, data += kQ8BlockBytes, o += kQ8Block) {
    c10::Half d16;
    std::memcpy(&d16.x, data, 2);
    const float d = static_cast<float>(d16);
    for (int64_t j = 0; j < kQ8Block; ++j) o[j] = d * static_cast<float>(static_cast<int8_t>(data[2 + j]));
  }
  return out;
}

}  // namespace lmzoo
