// The one CPU feature check and the one off switch for lmzoo's hand-written CPU kernels (models/kernels/):
// LMZOO_KERNELS=off in the environment sends every kernel's caller to plain LibTorch ops.
#pragma once

namespace lmzoo::kernels {

// True when LMZOO_KERNELS is set to "off" (or "0"): no hand-written kernel runs.
bool switched_off();

// The CPU has AVX2 and FMA (x86-64 only; false elsewhere).
bool cpu_has_avx2_fma();

// The AVX2/FMA kernels may run: the CPU has the features and the switch is not off.
bool avx2_enabled();

}  // namespace lmzoo::kernels
