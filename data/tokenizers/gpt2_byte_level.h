// GPT-2's byte-level text side: the pre-tokenising pattern as a hand-written matcher (what the GPT-2 tokenizer and
// tokenizer.json's ByteLevel pre-tokenizer run) and the byte-to-character map. Leaves out: the BPE merges.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lmzoo {

// GPT-2's pattern, as OpenAI and the Hugging Face tokenizers spell it (\s is White_Space).
extern const char* const kGpt2Pattern;

// The [begin, end) byte ranges of the matches of kGpt2Pattern in TEXT (valid UTF-8), left to right; they cover
// TEXT. Equal to Oniguruma's find-all of the pattern (tests/test_hf_text_pipeline.cpp checks it).
std::vector<std::pair<size_t, size_t>> gpt2_pretokenize_ranges(std::string_view text);

// The pieces kGpt2Pattern cuts TEXT into. Throws HfTokenizerError if TEXT is not UTF-8.
std::vector<std::string> gpt2_pretokenize(const std::string& text);

// The printable character GPT-2 stands each byte for (bytes_to_unicode: 33-126, 161-172, 174-255 stand for
// themselves, the other 68 bytes for U+0100 upwards, in byte order).
char32_t gpt2_byte_to_char(uint8_t byte);

// Appends BYTES with every byte replaced by the UTF-8 of gpt2_byte_to_char(byte).
void append_byte_level(std::string_view bytes, std::string& out);

}  // namespace lmzoo
