// Helpers shared by the subcommands: help handling, checkpoint + tokenizer loading, JSON output.
#pragma once
#include <string>

#include <cxxopts.hpp>
#include <nlohmann/json.hpp>

#include "data/tokenizer.h"
#include "train/checkpoint.h"

namespace lmzoo::cli {

// Parses argv; prints help and returns true when --help was given.
bool parse_or_help(cxxopts::Options& options, int argc, char** argv, cxxopts::ParseResult& result);
// Throws UsageError "--NAME is required" when the option is absent.
void require_option(const cxxopts::ParseResult& result, const std::string& name);
// Throws UsageError when the tokenizer that prepared DATA_DIR is not the checkpoint's.
void check_same_tokenizer(const std::string& data_dir, const Tokenizer& tokenizer, const std::string& checkpoint);
std::string read_whole_file(const std::string& path);
// The model as a GPT; throws UsageError when the checkpoint holds another kind of model.
GPT require_gpt(const AnyModel& model, const std::string& command);
// Applies --threads N (intra-op threads) when given and positive.
void apply_thread_option(const cxxopts::ParseResult& result);

}  // namespace lmzoo::cli
