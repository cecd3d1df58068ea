// lmzoo tokenizer: `train` a SentencePiece model, `encode` stdin to pieces or ids, `decode` ids to text (whole
// stdin, or --jsonl: one text or id list per line).
// Leaves out: sampling-based encodings and vocabulary editing.
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include <cxxopts.hpp>
#include <nlohmann/json.hpp>

#include "data/tokenizers/tokenizer.h"
#include "data/unicode/utf8.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/cli_error.h"
#include "tools/cli/commands.h"

namespace lmzoo::cli {

namespace {

std::string read_stdin() {
  std::ostringstream ss;
  ss << std::cin.rdbuf();
  return ss.str();
}

std::string required(const cxxopts::ParseResult& result, const std::string& name) {
  if (!result.count(name)) throw UsageError("missing --" + name);
  return result[name].as<std::string>();
}

// The largest vocabulary tokenizer train asks SentencePiece for: its trainer's seed set of candidate pieces
// (seed_sentencepiece_size) holds 1,000,000; a larger request only runs longer and cannot be met.
constexpr int kMaxTrainedVocab = 1000000;

int train(int argc, char** argv) {
  cxxopts::Options options("lmzoo tokenizer train", "Train a SentencePiece tokenizer (exact byte round trip, fixed special ids).");
  options.add_options()
      ("i,input", "text files (.txt, .jsonl with \"text\") or directories: --input a.txt more/, or repeat the flag",
       cxxopts::value<std::vector<std::string>>())
      ("vocab-size", "vocabulary size (an upper bound; >= 364, <= 1000000; char: any large number up to that)", cxxopts::value<int>()->default_value("8000"))
      ("model-type", enum_help<TokenizerType>(), cxxopts::value<std::string>()->default_value(enum_name(TokenizerType::kBpe)))
      ("o,out", "output directory (writes OUT/tokenizer.model)", cxxopts::value<std::string>())
      ("max-sentences", "lines sampled from the input", cxxopts::value<int64_t>()->default_value("2000000"))
      ("special-tokens", "pieces kept whole wherever they occur, after the fixed special ids (comma-separated), e.g. "
                         "a chat template's markers: <|im_start|>,<|im_end|>", cxxopts::value<std::string>())
      ("verbose", "report the training sample on stderr");
  cxxopts::ParseResult result;
  if (parse_or_help(options, argc, argv, result, "input")) return 0;
  TokenizerTrainOptions train_options;
  if (!result.count("input")) throw UsageError("missing --input");
  train_options.inputs = result["input"].as<std::vector<std::string>>();
  train_options.out_dir = required(result, "out");
  train_options.vocab_size = result["vocab-size"].as<int>();
  train_options.model_type = enum_option<TokenizerType>(result, "model-type");
  train_options.max_sentences = result["max-sentences"].as<int64_t>();
  train_options.verbose = result.count("verbose") > 0;
  if (result.count("special-tokens")) {
    std::stringstream list(result["special-tokens"].as<std::string>());
    for (std::string symbol; std::getline(list, symbol, ',');) train_options.extra_symbols.push_back(symbol);
  }
  const int min_vocab = special::kNumSpecial + 256 + 1;  // Tokenizer::train's: specials, 256 bytes, a character
  if (train_options.vocab_size < min_vocab) {
    throw UsageError("--vocab-size " + std::to_string(train_options.vocab_size) + " is too small: the minimum is " +
                     std::to_string(min_vocab) + " (" + std::to_string(special::kNumSpecial) +
                     " special tokens, 256 byte pieces and one character)");
  }
  if (train_options.vocab_size > kMaxTrainedVocab) {
    throw UsageError("--vocab-size " + std::to_string(train_options.vocab_size) + " is too large: the maximum is " +
                     std::to_string(kMaxTrainedVocab) + " (SentencePiece draws pieces from at most 1000000 seed "
                     "candidates; model vocabularies stop at 2^31 - 1, the largest 32-bit token id)");
  }
  if (train_options.max_sentences <= 0) throw UsageError("--max-sentences must be positive");
  Tokenizer::train(train_options);
  Tokenizer tokenizer = Tokenizer::load(train_options.out_dir);
  std::cout << "trained " << train_options.model_type << " tokenizer: vocab size " << tokenizer.vocab_size() << ", hash "
            << tokenizer.hash() << ", written to " << train_options.out_dir << "/tokenizer.model\n";
  return 0;
}

// Reads stdin line by line for --jsonl: calls EACH(line number, the parsed JSON value); a line that does not
// parse is input, not usage (exit 1).
template <class Each>
void for_each_jsonl_line(Each each) {
  std::string line;
  for (int64_t number = 1; std::getline(std::cin, line); ++number) {
    nlohmann::json value;
    try {
      value = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error&) {
      throw std::runtime_error("stdin line " + std::to_string(number) + " is not JSON");
    }
    each(number, value);
  }
}

// One JSON string per stdin line -> one JSON array of ids per stdout line (ADD_SPECIAL: post-processed).
void encode_jsonl(const Tokenizer& tokenizer, bool add_special) {
  for_each_jsonl_line([&](int64_t number, const nlohmann::json& value) {
    if (!value.is_string()) throw std::runtime_error("stdin line " + std::to_string(number) + " is not a JSON string");
    const std::string& text = value.get_ref<const std::string&>();
    require_utf8(text, "stdin line " + std::to_string(number));
    std::vector<int> ids = tokenizer.encode_long(text);
    if (add_special) ids = tokenizer.add_special_tokens(std::move(ids));
    std::cout << nlohmann::json(ids).dump() << '\n';
  });
  std::cout << std::flush;
}

int encode(int argc, char** argv) {
  cxxopts::Options options("lmzoo tokenizer encode", "Encode all of stdin; print pieces (or ids) separated by spaces on one line.");
  options.add_options()
      ("t,tokenizer", "tokenizer directory or .model file", cxxopts::value<std::string>())
      ("ids", "print token ids instead of pieces")
      ("jsonl", "each stdin line is a JSON string; print one JSON array of its ids per line")
      ("split-special-tokens", "special tokens written in the text (<|endoftext|>, tokenizer.json's special added "
                               "tokens) stay plain text (HF's split_special_tokens)")
      ("add-special-tokens", "wrap the ids with tokenizer.json's post-processor, e.g. [CLS] ... [SEP] (HF's "
                             "add_special_tokens; tokenizer.json only)");
  cxxopts::ParseResult result;
  if (parse_or_help(options, argc, argv, result)) return 0;
  const std::string dir = required(result, "tokenizer");
  Tokenizer tokenizer = Tokenizer::load(dir);
  tokenizer.set_split_special_tokens(result.count("split-special-tokens") > 0);
  const bool add_special = result.count("add-special-tokens") > 0;
  if (add_special && tokenizer.kind() != TokenizerKind::kHfJson) {
    throw UsageError("--add-special-tokens applies to tokenizer.json tokenizers only; " + dir + " is a " +
                     enum_name(tokenizer.kind()) + " tokenizer");
  }
  if (result.count("jsonl")) {
    encode_jsonl(tokenizer, add_special);
    return 0;
  }
  const std::string text = read_stdin();
  require_utf8(text, "stdin");
  std::string line;
  const bool ids = result.count("ids") > 0;
  std::vector<int> encoded = tokenizer.encode_long(text);
  if (add_special) encoded = tokenizer.add_special_tokens(std::move(encoded));
  for (int id : encoded) {
    line += (line.empty() ? "" : " ") + (ids ? std::to_string(id) : tokenizer.id_to_piece(id));
  }
  std::cout << line << "\n";
  return 0;
}

// The id WORD names, checked against the vocabulary; WHERE names it in the error (stdin is input: exit 1).
int parse_id(const Tokenizer& tokenizer, const std::string& word, const std::string& where) {
  size_t used = 0;
  int id = -1;
  try {
    id = std::stoi(word, &used);
  } catch (const std::exception&) {
  }
  if (used != word.size() || id < 0 || id >= tokenizer.vocab_size()) {
    throw std::runtime_error("'" + word + "' " + where + " is not a token id in [0, " +
                             std::to_string(tokenizer.vocab_size()) + ")");
  }
  return id;
}

// One JSON array of ids per stdin line -> one JSON string per stdout line (bytes that are not UTF-8, as a
// slice of a character's byte pieces gives, become U+FFFD).
void decode_jsonl(const Tokenizer& tokenizer) {
  for_each_jsonl_line([&](int64_t number, const nlohmann::json& value) {
    const std::string where = "on stdin line " + std::to_string(number);
    if (!value.is_array()) throw std::runtime_error("stdin line " + std::to_string(number) + " is not a JSON array of ids");
    std::vector<int> ids;
    for (const auto& element : value) {
      if (!element.is_number_integer()) throw std::runtime_error("'" + element.dump() + "' " + where + " is not a token id");
      ids.push_back(parse_id(tokenizer, element.dump(), where));
    }
    std::cout << nlohmann::json(tokenizer.decode(ids)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
              << '\n';
  });
  std::cout << std::flush;
}

int decode(int argc, char** argv) {
  cxxopts::Options options("lmzoo tokenizer decode", "Decode whitespace-separated ids from stdin; print the exact text.");
  options.add_options()
      ("t,tokenizer", "tokenizer directory or .model file", cxxopts::value<std::string>())
      ("jsonl", "each stdin line is a JSON array of ids; print one JSON string per line");
  cxxopts::ParseResult result;
  if (parse_or_help(options, argc, argv, result)) return 0;
  Tokenizer tokenizer = Tokenizer::load(required(result, "tokenizer"));
  if (result.count("jsonl")) {
    decode_jsonl(tokenizer);
    return 0;
  }
  std::istringstream in(read_stdin());
  std::vector<int> ids;
  for (std::string word; in >> word;) ids.push_back(parse_id(tokenizer, word, "on stdin"));
  std::cout << tokenizer.decode(ids) << std::flush;
  return 0;
}

}  // namespace

int run_tokenizer(int argc, char** argv) {
  const std::string usage = "usage: lmzoo tokenizer train|encode|decode [options] (see lmzoo tokenizer <action> --help)";
  if (argc < 2) throw UsageError("missing action; " + usage);
  const std::string action = argv[1];
  if (action == "-h" || action == "--help") {
    std::cout << usage << "\n"
              << "  train   train a SentencePiece tokenizer on text files\n"
              << "  encode  encode stdin to pieces or ids\n"
              << "  decode  decode ids on stdin to text\n";
    return 0;
  }
  if (action == "train") return train(argc - 1, argv + 1);
  if (action == "encode") return encode(argc - 1, argv + 1);
  if (action == "decode") return decode(argc - 1, argv + 1);
  throw UsageError("unknown action '" + action + "'; " + usage);
}

}  // namespace lmzoo::cli
