// Reading a whole file (bytes, or text to score or train on), with the failures named: a directory, an unreadable path.
#pragma once
#include <string>

namespace lmzoo {

// The file's bytes; std::runtime_error "cannot read PATH" when it cannot be opened.
std::string read_file_bytes(const std::string& path);

// The file's bytes; std::runtime_error "PATH is a directory, not a text file" or "cannot read PATH".
std::string read_whole_file(const std::string& path);

}  // namespace lmzoo
