// The shared layout of the tokenizer.json files lmzoo writes: the top-level document in the Rust library's key order
// and one added_tokens entry. Leaves out: the components themselves (tokenizer_json_writer.cpp,
// spm_tokenizer_json.cpp).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace lmzoo::hf {

// {"id", "content", "single_word": false, "lstrip": false, "rstrip": false, "normalized", "special"}
nlohmann::ordered_json added_token_json(int id, const std::string& content, bool normalized, bool special);

// version, truncation and padding (null), then the parts in the order the Rust library saves them.
nlohmann::ordered_json tokenizer_json_document(nlohmann::ordered_json added_tokens, nlohmann::ordered_json normalizer,
                                               nlohmann::ordered_json pre_tokenizer,
                                               nlohmann::ordered_json post_processor, nlohmann::ordered_json decoder,
                                               nlohmann::ordered_json model);

}  // namespace lmzoo::hf
