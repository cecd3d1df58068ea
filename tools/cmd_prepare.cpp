// lmzoo prepare: tokenise a corpus into train/val token shards with a manifest (see data/shards.h).
// Leaves out: tsv pairs for seq2seq (the batchers read those directly) and incremental updates.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <string>

#include <cxxopts.hpp>

#include "data/shards.h"
#include "tools/cli_error.h"
#include "tools/commands.h"

namespace lmzoo::cli {

int run_prepare(int argc, char** argv) {
  cxxopts::Options options("lmzoo prepare", "Tokenise documents (each followed by </s>) into memory-mapped token shards.");
  options.add_options("Data")
      ("t,tokenizer", "tokenizer directory or .model file", cxxopts::value<std::string>())
      ("i,input", "text files (.txt = one document, .jsonl = one \"text\" per line) or directories; repeat or comma-separate",
       cxxopts::value<std::vector<std::string>>())
      ("o,out", "output data directory (shards, manifest.json, tokenizer.model)", cxxopts::value<std::string>())
      ("val-fraction", "last fraction of the token stream held out for validation", cxxopts::value<double>()->default_value("0.1"))
      ("threads", "encoding threads (0 = all cores)", cxxopts::value<int>()->default_value("0"))
      ("h,help", "show this help");
  auto result = options.parse(argc, argv);
  if (result.count("help")) {
    std::cout << options.help() << "\n";
    return 0;
  }
  if (!result.unmatched().empty()) throw UsageError("unexpected argument '" + result.unmatched()[0] + "'");
  for (const char* name : {"tokenizer", "input", "out"}) {
    if (!result.count(name)) throw UsageError(std::string("missing --") + name);
  }
  PrepareOptions o;
  o.tokenizer = result["tokenizer"].as<std::string>();
  o.inputs = result["input"].as<std::vector<std::string>>();
  o.out_dir = result["out"].as<std::string>();
  o.val_fraction = result["val-fraction"].as<double>();
  o.threads = result["threads"].as<int>();
  if (!(o.val_fraction >= 0 && o.val_fraction < 1)) throw UsageError("--val-fraction must be in [0, 1)");
  if (o.threads < 0) throw UsageError("--threads must be >= 0");

  PrepareResult r = prepare_data(o);
  const double tokens_per_s = (r.train_tokens + r.val_tokens) / std::max(r.seconds, 1e-9);
  std::cout << std::fixed << std::setprecision(2) << "prepared " << o.out_dir << ": " << r.documents
            << " documents, train " << r.train_tokens << " tokens, val " << r.val_tokens << " tokens in "
            << r.seconds << " s (" << std::setprecision(0) << tokens_per_s << " tokens/s)\n";
  return 0;
}

}  // namespace lmzoo::cli
