// Text pairs: TSV/JSONL reader, pair encoding, and the prepared pairs directory (writer and reader).
#include "data/corpus/pairs.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "data/corpus/shards.h"
#include "data/unicode/utf8.h"

namespace lmzoo {

namespace fs = std::filesystem;

namespace {

std::vector<int64_t> encode_side(const Tokenizer& tokenizer, const std::string& text, int64_t max_len,
                                 bool& truncated) {
  const int eos = tokenizer.special().require(tokenizer.special().eos, "</s>", "seq2seq");
  std::vector<int64_t> ids;
  for (int id : tokenizer.encode(text)) {
    if (id != eos) ids.push_back(id);  // </s> only ever ends a side
  }
  if (int64_t(ids.size()) > max_len - 1) {
    ids.resize(size_t(max_len - 1));
    truncated = true;
  }
  ids.push_back(eos);
  return ids;
}

// The EOS-terminated runs of a stream.
std::vector<std::vector<int64_t>> split_runs(const TokenStream& stream, int64_t eos) {
  std::vector<std::vector<int64_t>> runs;
  std::vector<int64_t> tokens(size_t(stream.size()));
  if (!tokens.empty()) stream.read(0, stream.size(), tokens.data());
  std::vector<int64_t> run;
  for (int64_t id : tokens) {
    run.push_back(id);
    if (id == eos) {
      runs.push_back(std::move(run));
      run.clear();
    }
  }
  if (!run.empty()) throw std::runtime_error("a pairs split does not end with </s>");
  return runs;
}

}  // namespace

std::vector<TextPair> read_text_pairs(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read pairs file " + path);
  const bool jsonl = is_json_lines_path(path);
  std::vector<TextPair> pairs;
  for_each_utf8_line(in, path, [&](const std::string& line, int64_t number) {
    if (line.find_first_not_of(" \t") == std::string::npos) return;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    TextPair pair;
    if (jsonl) {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception&) {
        throw std::runtime_error(where + "invalid JSON (expected {\"input\": ..., \"target\": ...})");
      }
      for (const char* key : {"input", "target"}) {
        if (!j.is_object() || !j.contains(key) || !j[key].is_string()) {
          throw std::runtime_error(where + "missing string field \"" + key + "\"");
        }
      }
      pair = {j["input"].get<std::string>(), j["target"].get<std::string>()};
    } else {
      const size_t tab = line.find('\t');
      if (tab == std::string::npos || line.find('\t', tab + 1) != std::string::npos) {
        throw std::runtime_error(where + "expected input<TAB>target (exactly one tab)");
      }
      pair = {line.substr(0, tab), line.substr(tab + 1)};
    }
    if (pair.target.empty()) throw std::runtime_error(where + "empty target");
    pairs.push_back(std::move(pair));
  });
  if (pairs.empty()) throw std::runtime_error(path + " holds no pairs");
  return pairs;
}

Seq2SeqExample encode_pair(const Tokenizer& tokenizer, const TextPair& pair, int64_t max_input_len,
                           int64_t max_target_len) {
  bool truncated = false;
  return {encode_side(tokenizer, pair.input, max_input_len, truncated),
          encode_side(tokenizer, pair.target, max_target_len, truncated)};
}

namespace {

// Writes the train and val shards of PAIRS (the last N_VAL are val), the tokenizer's files and the manifest into DIR.
void write_pairs_dir(const std::string& dir, const PreparePairsOptions& o, const Tokenizer& tokenizer,
                     const std::vector<TextPair>& pairs, int64_t n_val, PreparePairsResult& result) {
  const int64_t n = int64_t(pairs.size());
  const int vocab = tokenizer.vocab_size();
  nlohmann::json splits, counts;
  for (const std::string split : {"train", "val"}) {
    const int64_t begin = split == "train" ? 0 : n - n_val, end = split == "train" ? n - n_val : n;
    ShardWriter inputs(dir, split + "_inputs", vocab), targets(dir, split + "_targets", vocab);
    for (int64_t i = begin; i < end; ++i) {
      bool truncated = false;
      const auto in = encode_side(tokenizer, pairs[size_t(i)].input, o.max_input_len, truncated);
      const auto out = encode_side(tokenizer, pairs[size_t(i)].target, o.max_target_len, truncated);
      result.truncated += truncated;
      inputs.write(std::vector<int>(in.begin(), in.end()));
      targets.write(std::vector<int>(out.begin(), out.end()));
    }
    splits[split + "_inputs"] = inputs.finish();
    splits[split + "_targets"] = targets.finish();
    counts[split] = {{"examples", end - begin}};
  }
  tokenizer.save(dir);
  write_manifest(dir, {{"format_version", 1},
                       {"kind", "pairs"},
                       {"tokenizer_hash", tokenizer.hash()},
                       {"vocab_size", vocab},
                       {"dtype", shard_dtype(vocab)},
                       {"max_input_len", o.max_input_len},
                       {"max_target_len", o.max_target_len},
                       {"examples", counts},
                       {"splits", splits},
                       {"sources", {{{"path", o.pairs}, {"pairs", n}}}}});
}

}  // namespace

PreparePairsResult prepare_pairs(const PreparePairsOptions& o) {
  if (!(o.val_fraction >= 0 && o.val_fraction < 1)) throw std::runtime_error("val fraction must be in [0, 1)");
  if (o.max_input_len < 2 || o.max_target_len < 2) {
    throw std::runtime_error("max input and target lengths must be at least 2 (a token and </s>)");
  }
  if (o.out_dir.empty()) throw std::runtime_error("no output directory given");
  const Tokenizer tokenizer = Tokenizer::load(o.tokenizer);
  const std::vector<TextPair> pairs = read_text_pairs(o.pairs);
  const int64_t n = int64_t(pairs.size());
  int64_t n_val = int64_t(std::llround(double(n) * o.val_fraction));
  if (o.val_fraction > 0 && n >= 2) n_val = std::max<int64_t>(n_val, 1);
  n_val = std::min(n_val, n - 1);

  PreparePairsResult result;
  result.train_examples = n - n_val;
  result.val_examples = n_val;
  write_prepared_dir(o.out_dir, tokenizer,
                     [&](const std::string& dir) { write_pairs_dir(dir, o, tokenizer, pairs, n_val, result); });
  return result;
}

bool is_pairs_dir(const std::string& data_dir) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(data_dir) / "manifest.json", ec)) return false;
  return read_manifest(data_dir).value("kind", "") == "pairs";
}

std::vector<Seq2SeqExample> load_pairs(const std::string& data_dir, const std::string& split, int64_t eos,
                                       int64_t model_vocab) {
  if (!is_pairs_dir(data_dir)) {
    throw std::runtime_error(data_dir + " holds no prepared pairs (create it with: lmzoo prepare --pairs FILE)");
  }
  const auto inputs = split_runs(TokenStream::open(data_dir, split + "_inputs", model_vocab), eos);
  const auto targets = split_runs(TokenStream::open(data_dir, split + "_targets", model_vocab), eos);
  const int64_t expected = read_manifest(data_dir).at("examples").at(split).at("examples").get<int64_t>();
  if (int64_t(inputs.size()) != expected || int64_t(targets.size()) != expected) {
    throw std::runtime_error("pairs split '" + split + "' of " + data_dir + " is corrupt: " +
                             std::to_string(inputs.size()) + " inputs and " + std::to_string(targets.size()) +
                             " targets, manifest says " + std::to_string(expected));
  }
  std::vector<Seq2SeqExample> examples(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) examples[i] = {inputs[i], targets[i]};
  return examples;
}

}  // namespace lmzoo
