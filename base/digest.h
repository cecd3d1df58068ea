// A stable, fast content digest (FNV-1a 64, not cryptographic): ties prepared data to its tokenizer and template.
#pragma once
#include <string>

namespace lmzoo {

// 16 lower-case hex digits of FNV-1a 64 over BYTES.
std::string fnv1a64_hex(const std::string& bytes);

}  // namespace lmzoo
