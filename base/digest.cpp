// FNV-1a 64 over bytes, as hex.
#include "base/digest.h"

#include <cstdint>
#include <cstdio>

namespace lmzoo {

std::string fnv1a64_hex(const std::string& bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace lmzoo
