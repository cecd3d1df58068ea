// check_same_tokenizer: a prepared directory's manifest hash against a tokenizer's.
#include "data/tokenizer_match.h"

#include <stdexcept>

#include "data/shards.h"

namespace lmzoo {

void check_same_tokenizer(const std::string& data_dir, const Tokenizer& tokenizer, const std::string& checkpoint) {
  const auto manifest = read_manifest(data_dir);
  const std::string data_hash = manifest.value("tokenizer_hash", "");
  if (data_hash != tokenizer.hash()) {
    throw std::runtime_error("data in " + data_dir + " was prepared with a different tokenizer than " + checkpoint +
                             " (re-run lmzoo prepare with that checkpoint's tokenizer)");
  }
}

}  // namespace lmzoo
