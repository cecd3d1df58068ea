// Catch2 v2 (Debian 12: catch2/catch.hpp) and v3 (Debian 13, pip setups: catch2/catch_all.hpp) behind one include
// (v2 where its header is found: a machine with v3's headers installed and v2 unpacked for the build, as the GPU
// check's sysroot, links v2),
// plus LMZOO_SKIP_UNLESS_CUDA(): a [cuda] test case reports as skipped (exit code 4, ctest SKIP_RETURN_CODE) where
// no CUDA device is present.
#pragma once
#if __has_include(<catch2/catch.hpp>)
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
// Catch2 v2 has no SKIP: say why and end the process with the code ctest counts as skipped. [cuda] cases are
// hidden ([.cuda]), so a plain run of the whole binary never reaches this; ctest runs each case alone.
#define LMZOO_SKIP_TEST(reason)                  \
  do {                                          \
    std::printf("SKIPPED: %s\n", reason);       \
    std::fflush(stdout);                        \
    std::_Exit(4);                              \
  } while (0)
#else
#include <catch2/catch_all.hpp>

#include <string>
using Catch::Approx;
// Catch2 v2's names for the string matchers the tests use.
namespace Catch {
inline Matchers::StringContainsMatcher Contains(const std::string& s) { return Matchers::ContainsSubstring(s); }
using Matchers::StartsWith;
}  // namespace Catch
#define LMZOO_SKIP_TEST(reason) SKIP(reason)
#endif

#include <torch/torch.h>

#define LMZOO_SKIP_UNLESS_CUDA()                                                   \
  do {                                                                             \
    if (!torch::cuda::is_available()) LMZOO_SKIP_TEST("no CUDA device on this machine"); \
  } while (0)
