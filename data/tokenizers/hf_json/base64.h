// Base64 (RFC 4648's standard alphabet, with '=' padding) as serde's base64 in tokenizer.json writes byte blobs.
// Leaves out: the URL-safe alphabet, line breaks, unpadded input.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace lmzoo {

std::string base64_encode(std::string_view bytes);
// The bytes TEXT encodes, or nullopt when it is not padded standard base64.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace lmzoo
