// CPU feature detection at run time (__builtin_cpu_supports) and the LMZOO_KERNELS off switch.
#include "models/kernels/cpu_features.h"

#include <cstdlib>
#include <cstring>

namespace lmzoo::kernels {

bool switched_off() {
  static const bool off = [] {
    const char* v = std::getenv("LMZOO_KERNELS");
    return v != nullptr && (std::strcmp(v, "off") == 0 || std::strcmp(v, "0") == 0);
  }();
  return off;
}

bool cpu_has_avx2_fma() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
#else
  return false;
#endif
}

bool avx2_enabled() { return !switched_off() && cpu_has_avx2_fma(); }

}  // namespace lmzoo::kernels
