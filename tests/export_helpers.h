// Helpers of the TorchScript export tests: perturbed weights, padding masks, closeness checks, tensor files
// for Python, and the Python side of the cross-language checks (torch.jit.load via /usr/bin/python3).
#pragma once
#include <algorithm>
#include <cstdlib>
#include <string>

#include "tests/catch_compat.h"
#include <torch/script.h>
#include <torch/torch.h>

#include "tests/cli_helpers.h"

namespace lmzoo::test {

// Moves every weight off its init (norm gains 1, biases 0 would hide a missing or misplaced term).
inline void perturb(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  for (auto& p : model.parameters()) p.add_(torch::randn_like(p) * 0.1);
}

// (B, T) attention mask: row b has max(1, T - 3b) real tokens, then pads.
inline torch::Tensor padding_mask(int64_t B, int64_t T) {
  auto mask = torch::ones({B, T}, torch::kLong);
  for (int64_t b = 0; b < B; ++b) mask[b].slice(0, std::max<int64_t>(1, T - 3 * b)).zero_();
  return mask;
}

// rtol: T5's unscaled scores give logits of a few units, where lmzoo's oneDNN linears and TorchScript's
// OpenBLAS ones differ by a few 1e-5 (float rounding of two GEMMs), so T5 is compared within 1e-4.
inline void check_close(const torch::Tensor& got, const torch::Tensor& expected, double tol = 1e-5) {
  REQUIRE(got.sizes() == expected.sizes());
  INFO("max |diff| " << (got - expected).abs().max().item<double>());
  CHECK(torch::allclose(got, expected, tol, tol));
}

inline torch::jit::Module save_and_load(torch::jit::Module module, const std::string& path) {
  module.save(path);
  return torch::jit::load(path);
}

inline torch::Tensor tuple_item(const c10::IValue& value, size_t i) { return value.toTuple()->elements().at(i).toTensor(); }

inline void save_tensor(const std::string& path, const torch::Tensor& t) {
  auto bytes = torch::pickle_save(t);
  write_text(path, std::string(bytes.begin(), bytes.end()));
}

inline bool python_has_torch() { return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0; }

// Python side of the cross-language checks: calls.json lists calls {model, method, args (tensor names or
// null), expected (tensor names, one per output), attrs (attribute -> expected value)}; prints the worst
// max |diff| over all outputs, and fails on an attribute mismatch.
inline const char* const kPythonCheck =
    "import json, sys, torch\n"
    "d = sys.argv[1]\n"
    "load = lambda name: torch.load(d + '/' + name + '.pt')\n"
    "worst = 0.0\n"
    "for call in json.load(open(d + '/calls.json')):\n"
    "    m = torch.jit.load(d + '/' + call['model'])\n"
    "    out = getattr(m, call['method'])(*[None if a is None else load(a) for a in call['args']])\n"
    "    outs = out if isinstance(out, tuple) else (out,)\n"
    "    assert len(outs) == len(call['expected'])\n"
    "    for o, e in zip(outs, call['expected']):\n"
    "        worst = max(worst, float((o - load(e)).abs().max()))\n"
    "    for k, v in call.get('attrs', {}).items():\n"
    "        got = json.loads(m.config_json) if k == 'config_json' else getattr(m, k)\n"
    "        assert got == v, (k, got, v)\n"
    "print(worst)\n";

}  // namespace lmzoo::test
