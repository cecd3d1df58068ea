// The built binaries load libstdc++ before LibTorch, so std:: functions that pip torch's libraries export bind to libstdc++.
#include "tests/catch_compat.h"

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_helpers.h"

namespace {

// The DT_NEEDED entries of the ELF file at PATH, in order, as `readelf -d` prints them.
std::vector<std::string> needed_libraries(const std::string& path) {
  std::vector<std::string> names;
  FILE* pipe = popen(("readelf -d '" + path + "' 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return names;
  char line[4096];
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    const std::string text(line);
    if (text.find("(NEEDED)") == std::string::npos) continue;
    const auto open = text.find('['), close = text.find(']');
    if (open != std::string::npos && close > open) names.push_back(text.substr(open + 1, close - open - 1));
  }
  pclose(pipe);
  return names;
}

std::size_t position_of(const std::vector<std::string>& names, const std::string& prefix) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i].rfind(prefix, 0) == 0) return i;
  return names.size();
}

}  // namespace

TEST_CASE("lmzoo and the tests list libstdc++ before every LibTorch library", "[build]") {
  // The test binary itself by its real path: a child reading /proc/self/exe would read its own.
  for (const std::string& binary : {std::string(LMZOO_BINARY), std::string(LMZOO_FAULTS_BINARY), std::filesystem::read_symlink("/proc/self/exe").string()}) {
    const auto names = needed_libraries(binary);
    INFO(binary << " needs " << names.size() << " libraries");
    REQUIRE(!names.empty());
    const std::size_t stdcxx = position_of(names, "libstdc++.so");
    REQUIRE(stdcxx < names.size());
    for (const char* torch : {"libtorch", "libc10"}) {
      INFO(torch << " at " << position_of(names, torch) << ", libstdc++ at " << stdcxx);
      CHECK(stdcxx < position_of(names, torch));
    }
  }
}
