// lmzoo prepare: tokenise a corpus into train/val token shards with a manifest (see data/corpus/shards.h), input/target
// pairs into a prepared pairs directory for seq2seq (see data/corpus/pairs.h), or conversations into a chat directory
// (see data/chat/chat_data.h).
// Leaves out: incremental updates.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <string>

#include <cxxopts.hpp>

#include "data/chat/chat_data.h"
#include "data/corpus/pairs.h"
#include "data/corpus/shards.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/cli_error.h"
#include "tools/cli/commands.h"

namespace lmzoo::cli {

namespace {

int prepare_chat_from_flags(const cxxopts::ParseResult& result) {
  PrepareChatOptions c;
  c.tokenizer = result["tokenizer"].as<std::string>();
  c.inputs = result["chat"].as<std::vector<std::string>>();
  c.out_dir = result["out"].as<std::string>();
  if (result.count("chat-template")) c.chat_template_file = result["chat-template"].as<std::string>();
  c.val_fraction = result["val-fraction"].as<double>();
  if (!(c.val_fraction >= 0 && c.val_fraction < 1)) throw UsageError("--val-fraction must be in [0, 1)");
  if (result["threads"].as<int>() < 0) throw UsageError("--threads must be >= 0");
  c.threads = thread_option(result, 0);
  const PrepareChatResult r = prepare_chat(c);
  std::cout << std::fixed << std::setprecision(2) << "prepared chat " << c.out_dir << ": train " << r.train_examples
            << " examples, val " << r.val_examples << ", " << r.tokens << " tokens (" << r.scored_tokens
            << " scored) in " << r.seconds << " s (" << std::setprecision(0) << r.tokens / std::max(r.seconds, 1e-9)
            << " tokens/s); template: " << r.template_origin << "\n";
  return 0;
}

}  // namespace

int run_prepare(int argc, char** argv) {
  cxxopts::Options options("lmzoo prepare",
                           "Tokenise documents (each followed by the tokenizer's </s>, <|endoftext|> or [SEP]) into "
                           "memory-mapped token shards, with --pairs input/target pairs (each side followed by "
                           "</s>) for seq2seq training, or with --chat conversations rendered with the chat template.");
  options.add_options("Data")
      ("t,tokenizer", "tokenizer directory (tokenizer.model, spiece.model, tokenizer.json, vocab.json + merges.txt, "
                       "encoder.json + vocab.bpe or vocab.txt) or .model file", cxxopts::value<std::string>())
      ("split-special-tokens", "special tokens written in the text (<|endoftext|>, tokenizer.json's special added "
                               "tokens) stay plain text instead of becoming their ids (HF's split_special_tokens)")
      ("i,input", "text files (.txt = one document, .jsonl = one \"text\" per line) or directories: --input a.txt "
                  "more/, or repeat the flag",
       cxxopts::value<std::vector<std::string>>())
      ("o,out", "output data directory (shards, manifest.json, the tokenizer's files)", cxxopts::value<std::string>())
      ("pairs", "a pairs file instead of --input: .tsv (input<TAB>target per line) or .jsonl ({\"input\", \"target\"})",
       cxxopts::value<std::string>())
      ("chat", "JSONL conversations instead of --input: {\"messages\": [{\"role\": system|user|assistant, \"content\"}, "
               "...]} or {\"prompt\", \"completion\"} per line, rendered with the chat template; only the answers "
               "are scored (lmzoo train --objective chat)", cxxopts::value<std::vector<std::string>>())
      ("chat-template", "chat: a Jinja chat template file instead of the --tokenizer directory's (chat_template.jinja "
                        "or tokenizer_config.json's; without either: ChatML)", cxxopts::value<std::string>())
      ("max-input-len", "pairs: input tokens kept, </s> included", cxxopts::value<int64_t>()->default_value("512"))
      ("max-target-len", "pairs: target tokens kept, </s> included", cxxopts::value<int64_t>()->default_value("128"))
      ("val-fraction", "last fraction of the token stream (or of the pairs) held out for validation", cxxopts::value<double>()->default_value("0.1"))
      ("threads", "encoding threads (0 = all cores)", cxxopts::value<int>()->default_value("0"));
  cxxopts::ParseResult result;
  if (parse_or_help(options, argc, argv, result, "input")) return 0;
  if ((result.count("input") > 0) + (result.count("pairs") > 0) + (result.count("chat") > 0) > 1) {
    throw UsageError("give one of --input, --pairs and --chat, not more");
  }
  const char* source = result.count("pairs") ? "pairs" : result.count("chat") ? "chat" : "input";
  for (const char* name : {"tokenizer", source, "out"}) {
    if (!result.count(name)) throw UsageError(std::string("missing --") + name);
  }
  if (result.count("chat-template") && !result.count("chat")) throw UsageError("--chat-template applies to --chat");
  if (result.count("chat")) return prepare_chat_from_flags(result);
  if (result.count("pairs")) {
    PreparePairsOptions p;
    p.tokenizer = result["tokenizer"].as<std::string>();
    p.pairs = result["pairs"].as<std::string>();
    p.out_dir = result["out"].as<std::string>();
    p.val_fraction = result["val-fraction"].as<double>();
    p.max_input_len = result["max-input-len"].as<int64_t>();
    p.max_target_len = result["max-target-len"].as<int64_t>();
    if (!(p.val_fraction >= 0 && p.val_fraction < 1)) throw UsageError("--val-fraction must be in [0, 1)");
    if (p.max_input_len < 2 || p.max_target_len < 2) {
      throw UsageError("--max-input-len and --max-target-len must be at least 2 (a token and </s>)");
    }
    const PreparePairsResult r = prepare_pairs(p);
    std::cout << "prepared pairs " << p.out_dir << ": train " << r.train_examples << " pairs, val " << r.val_examples
              << " pairs, " << r.truncated << " truncated\n";
    return 0;
  }
  PrepareOptions o;
  o.tokenizer = result["tokenizer"].as<std::string>();
  o.inputs = result["input"].as<std::vector<std::string>>();
  o.out_dir = result["out"].as<std::string>();
  o.val_fraction = result["val-fraction"].as<double>();
  o.threads = result["threads"].as<int>();
  o.split_special_tokens = result.count("split-special-tokens") > 0;
  if (!(o.val_fraction >= 0 && o.val_fraction < 1)) throw UsageError("--val-fraction must be in [0, 1)");
  if (o.threads < 0) throw UsageError("--threads must be >= 0");
  o.threads = thread_option(result, 0);

  PrepareResult r = prepare_data(o);
  const double tokens_per_s = (r.train_tokens + r.val_tokens) / std::max(r.seconds, 1e-9);
  std::cout << std::fixed << std::setprecision(2) << "prepared " << o.out_dir << ": " << r.documents
            << " documents, train " << r.train_tokens << " tokens, val " << r.val_tokens << " tokens in "
            << r.seconds << " s (" << std::setprecision(0) << tokens_per_s << " tokens/s)\n";
  return 0;
}

}  // namespace lmzoo::cli
