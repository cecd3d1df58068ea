// A checkpoint, a data directory's tokenizer and a data/checkpoint tokenizer match, opened or checked with
// one-line errors.
#include "train/run/run_inputs.h"

#include <stdexcept>

#include "data/corpus/shards.h"

namespace lmzoo {

CheckpointInfo open_checkpoint(const std::string& path) {
  try {
    return read_checkpoint(path);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error("checkpoint " + path + " is corrupt: " + e.what());
  }
}

Tokenizer data_tokenizer(const std::string& data_dir) {
  const auto manifest = read_manifest(data_dir);
  Tokenizer tokenizer = Tokenizer::load(data_dir);
  if (manifest.value("tokenizer_hash", "") != tokenizer.hash()) {
    throw std::runtime_error("the tokenizer in " + data_dir + " does not match the manifest's tokenizer hash");
  }
  return tokenizer;
}

void check_same_tokenizer(const std::string& data_dir, const Tokenizer& tokenizer, const std::string& checkpoint) {
  const auto manifest = read_manifest(data_dir);
  const std::string data_hash = manifest.value("tokenizer_hash", "");
  if (data_hash != tokenizer.hash()) {
    throw std::runtime_error("data in " + data_dir + " was prepared with a different tokenizer than " + checkpoint +
                             " (re-run lmzoo prepare with that checkpoint's tokenizer)");
  }
}

}  // namespace lmzoo
