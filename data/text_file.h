// Reading a whole text file to score or train on, with the failures named: a directory, an unreadable path.
#pragma once
#include <string>

namespace lmzoo {

// The file's bytes; std::runtime_error "PATH is a directory, not a text file" or "cannot read PATH".
std::string read_whole_file(const std::string& path);

}  // namespace lmzoo
