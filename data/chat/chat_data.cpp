// lmzoo prepare --chat: conversations encoded on several threads into a chat directory; reading its examples back.
#include "data/chat/chat_data.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/digest.h"
#include "data/chat/chat_encoding.h"
#include "data/chat/chat_settings.h"
#include "data/chat/chat_template.h"
#include "data/corpus/shards.h"
#include "data/tokenizers/tokenizer.h"
#include "data/tokenizers/tokenizer_files.h"

namespace lmzoo {

namespace fs = std::filesystem;

namespace {

constexpr int kScoredFlag = 1, kStartFlag = 2;

// Encodes every conversation on THREADS threads (each takes every THREADS-th one); the first failure in input
// order is rethrown, prefixed with where its conversation came from.
std::vector<EncodedChat> encode_all(const ChatEncoder& encoder, const std::vector<SourcedConversation>& all,
                                    int threads) {
  std::vector<EncodedChat> out(all.size());
  std::vector<std::string> errors(all.size());
  auto work = [&](size_t first, size_t step) {
    for (size_t i = first; i < all.size(); i += step) {
      try {
        out[i] = encoder.encode(all[i].messages);
      } catch (const std::exception& e) {
        errors[i] = all[i].where + e.what();
        return;
      }
    }
  };
  const size_t n = size_t(std::max(1, threads));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n; ++t) pool.emplace_back(work, t, n);
  work(0, n);
  for (auto& thread : pool) thread.join();
  for (const auto& error : errors) {
    if (!error.empty()) throw std::invalid_argument(error);
  }
  return out;
}

nlohmann::json write_split(const std::string& dir, const std::string& split, int vocab,
                           const std::vector<EncodedChat>& examples, size_t begin, size_t end, nlohmann::json& splits) {
  ShardWriter tokens(dir, split, vocab), flags(dir, split + "_flags", vocab);
  int64_t scored = 0;
  std::vector<int> flag_row;
  for (size_t i = begin; i < end; ++i) {
    const EncodedChat& e = examples[i];
    flag_row.assign(e.scored.begin(), e.scored.end());
    if (!flag_row.empty()) flag_row[0] |= kStartFlag;
    scored += std::count(e.scored.begin(), e.scored.end(), uint8_t(1));
    tokens.write(e.tokens);
    flags.write(flag_row);
  }
  const int64_t n_tokens = tokens.tokens();
  splits[split] = tokens.finish();
  splits[split + "_flags"] = flags.finish();
  return {{"examples", int64_t(end - begin)}, {"tokens", n_tokens}, {"scored_tokens", scored}};
}

}  // namespace

PrepareChatResult prepare_chat(const PrepareChatOptions& o) {
  if (!(o.val_fraction >= 0 && o.val_fraction < 1)) throw std::runtime_error("val fraction must be in [0, 1)");
  if (o.out_dir.empty()) throw std::runtime_error("no output directory given");
  if (o.inputs.empty()) throw std::runtime_error("no chat files given");
  const auto start = std::chrono::steady_clock::now();
  const Tokenizer tokenizer = Tokenizer::load(o.tokenizer);
  std::error_code ec;
  ChatSettings settings = fs::is_directory(o.tokenizer, ec) ? read_chat_settings(o.tokenizer) : ChatSettings{};
  PrepareChatResult result;
  result.template_origin = settings.chat_template.empty() ? "the default (ChatML)" : o.tokenizer + "'s chat template";
  if (!o.chat_template_file.empty()) {
    settings.chat_template = read_file_bytes(o.chat_template_file);
    result.template_origin = "--chat-template " + o.chat_template_file;
  }
  const ChatEncoder encoder(tokenizer, settings.chat_template, settings.stop_ids);

  std::vector<SourcedConversation> all;
  for (const auto& path : o.inputs) {
    auto some = read_conversations(path);
    all.insert(all.end(), std::make_move_iterator(some.begin()), std::make_move_iterator(some.end()));
    result.bytes += int64_t(fs::file_size(path, ec));
  }
  const int threads = o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  const std::vector<EncodedChat> examples = encode_all(encoder, all, threads);
  for (size_t i = 0; i < examples.size(); ++i) {
    if (std::count(examples[i].scored.begin(), examples[i].scored.end(), uint8_t(1)) == 0) {
      throw std::invalid_argument(all[i].where + "the rendered conversation has no answer token to score");
    }
  }
  const int64_t n = int64_t(examples.size());
  int64_t n_val = int64_t(std::llround(double(n) * o.val_fraction));
  if (o.val_fraction > 0 && n >= 2) n_val = std::max<int64_t>(n_val, 1);
  n_val = std::min(n_val, n - 1);
  result.train_examples = n - n_val;
  result.val_examples = n_val;

  const int vocab = tokenizer.vocab_size();
  write_prepared_dir(o.out_dir, tokenizer, [&](const std::string& dir) {
    nlohmann::json splits, counts;
    counts["train"] = write_split(dir, "train", vocab, examples, 0, size_t(n - n_val), splits);
    counts["val"] = write_split(dir, "val", vocab, examples, size_t(n - n_val), size_t(n), splits);
    tokenizer.save(dir);
    const std::string chat_template = encoder.chat_template();
    write_chat_settings(dir, {chat_template, encoder.stop_ids()});
    nlohmann::json sources = nlohmann::json::array();
    for (const auto& path : o.inputs) sources.push_back({{"path", path}});
    write_manifest(dir, {{"format_version", 1},
                         {"kind", "chat"},
                         {"tokenizer_hash", tokenizer.hash()},
                         {"vocab_size", vocab},
                         {"dtype", shard_dtype(vocab)},
                         {"chat_template_hash", fnv1a64_hex(chat_template)},
                         {"chat_template_origin", result.template_origin},
                         {"stop_ids", encoder.stop_ids()},
                         {"examples", counts},
                         {"splits", splits},
                         {"sources", sources}});
    for (const char* split : {"train", "val"}) {
      result.tokens += counts[split]["tokens"].get<int64_t>();
      result.scored_tokens += counts[split]["scored_tokens"].get<int64_t>();
    }
  });
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

bool is_chat_dir(const std::string& data_dir) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(data_dir) / "manifest.json", ec)) return false;
  return read_manifest(data_dir).value("kind", "") == "chat";
}

ChatExamples load_chat_examples(const std::string& data_dir, const std::string& split, int64_t model_vocab) {
  if (!is_chat_dir(data_dir)) {
    throw std::runtime_error(data_dir + " holds no prepared chat examples (lmzoo prepare --chat FILE.jsonl)");
  }
  const TokenStream tokens = TokenStream::open(data_dir, split, model_vocab);
  const TokenStream flags = TokenStream::open(data_dir, split + "_flags");
  if (tokens.size() != flags.size()) {
    throw std::runtime_error(data_dir + ": split '" + split + "' has " + std::to_string(tokens.size()) +
                             " tokens but " + std::to_string(flags.size()) + " flags");
  }
  ChatExamples out;
  std::vector<int64_t> buffer(size_t(tokens.size()));
  if (!buffer.empty()) tokens.read(0, tokens.size(), buffer.data());
  out.tokens.assign(buffer.begin(), buffer.end());
  if (!buffer.empty()) flags.read(0, flags.size(), buffer.data());
  out.scored.resize(buffer.size());
  for (size_t i = 0; i < buffer.size(); ++i) {
    if (buffer[i] < 0 || buffer[i] > (kScoredFlag | kStartFlag) || (i == 0 && !(buffer[i] & kStartFlag))) {
      throw std::runtime_error(data_dir + ": split '" + split + "_flags' is damaged at token " + std::to_string(i));
    }
    out.scored[i] = uint8_t(buffer[i] & kScoredFlag);
    if (buffer[i] & kStartFlag) out.offsets.push_back(int64_t(i));
  }
  out.offsets.push_back(int64_t(buffer.size()));
  return out;
}

}  // namespace lmzoo
