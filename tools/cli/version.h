// lmzoo's version, in one place: `lmzoo --version` prints it with the LibTorch it was built against.
#pragma once

namespace lmzoo {
constexpr const char* kVersion = "0.1.0";
}  // namespace lmzoo
