// The CLI's error boundary: every exception becomes one clear line on stderr.
#include "tools/cli/cli_error.h"

#include <iostream>

#include <c10/util/Exception.h>
#include <cxxopts.hpp>
#include <nlohmann/json.hpp>

#include "base/interrupt.h"

namespace lmzoo::cli {

namespace {
// First line of a message: c10::Error appends a C++ backtrace we never show users.
std::string first_line(const std::string& message) {
  auto end = message.find('\n');
  return end == std::string::npos ? message : message.substr(0, end);
}
// cxxopts 3.1 quotes option names with typographic quotes, 3.2 with ASCII ones: print ASCII either way.
std::string ascii_quotes(std::string message) {
  for (const char* curly : {"\u2018", "\u2019"}) {
    for (auto at = message.find(curly); at != std::string::npos; at = message.find(curly, at + 1)) {
      message.replace(at, std::string(curly).size(), "'");
    }
  }
  return message;
}
}  // namespace

int guarded(const char* command, int (*fn)(int, char**), int argc, char** argv) {
  const std::string prefix = std::string("lmzoo ") + command + ": error: ";
  try {
    return fn(argc, argv);
  } catch (const Interrupted& e) {
    std::cerr << "lmzoo " << command << ": " << e.what() << " (nothing written)\n";
    return 130;
  } catch (const UsageError& e) {
    std::cerr << prefix << e.what() << "\n";
    return 2;
  } catch (const cxxopts::exceptions::exception& e) {
    std::cerr << prefix << ascii_quotes(e.what()) << " (see lmzoo " << command << " --help)\n";
    return 2;
  } catch (const nlohmann::json::exception& e) {
    std::cerr << prefix << "invalid JSON: " << first_line(e.what()) << "\n";
    return 1;
  } catch (const c10::Error& e) {
    std::cerr << prefix << first_line(e.what_without_backtrace()) << "\n";
    return 1;
  } catch (const std::invalid_argument& e) {
    std::cerr << prefix << first_line(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << prefix << first_line(e.what()) << "\n";
    return 1;
  } catch (...) {
    std::cerr << prefix << "unexpected error (not a std::exception)\n";
    return 1;
  }
}

}  // namespace lmzoo::cli
