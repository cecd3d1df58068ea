// SentencePiece cut rules. Normalizer::Normalize (0.1.97) maps text prefix by prefix (charsmap, user symbols),
// turns ' ' into "▁", adds the dummy "▁" in front and, with remove_extra_whitespaces, drops leading, trailing
// and repeated spaces; BPE merges and the unigram lattice then never join symbols that no piece spans.
#include "data/tokenizers/spm_cuts.h"

namespace lmzoo {

namespace {

const std::string kSpaceMarker = "\xE2\x96\x81";  // U+2581

// Whether PIECE holds "▁" after a character other than "▁" (a piece that would span a cut before a space).
bool marker_inside(const std::string& piece) {
  for (size_t p = piece.find(kSpaceMarker, 1); p != std::string::npos; p = piece.find(kSpaceMarker, p + 1)) {
    if (p < kSpaceMarker.size() || piece.compare(p - kSpaceMarker.size(), kSpaceMarker.size(), kSpaceMarker) != 0) {
      return true;
    }
  }
  return false;
}

bool ascii_graphic(char c) { return c > ' ' && c < 0x7F; }

}  // namespace

SpmCutRule spm_cut_rule(const SpmSettings& s, const std::vector<std::string>& pieces, bool sentinels) {
  SpmCutRule rule;
  if (!s.escape_whitespaces || s.treat_whitespace_as_suffix) return rule;  // no "▁" in front of words: no cuts
  bool spans_space = false, has_newline = false;
  for (const std::string& piece : pieces) {
    spans_space = spans_space || marker_inside(piece) || piece.find(' ') != std::string::npos;
    has_newline = has_newline || piece.find('\n') != std::string::npos;
  }
  // Without a dummy prefix but with whitespace removal, the next piece would lose its leading space: no cut.
  rule.before_space = !spans_space && (s.add_dummy_prefix || !s.remove_extra_whitespaces);
  rule.drop_space = s.add_dummy_prefix;
  rule.sentinels = sentinels;
  rule.after_newline = !s.add_dummy_prefix && !s.remove_extra_whitespaces && !s.has_charsmap && !has_newline;
  rule.whole_only = s.model_type == SpmSettings::ModelType::kUnigram;
  return rule;
}

TextCut spm_cut_at(const SpmCutRule& rule, std::string_view text, size_t pos, bool forced) {
  if (rule.whole_only && !forced) return {};
  if (pos == 0 || pos >= text.size()) return {};
  const char before = text[pos - 1];
  if (rule.after_newline && before == '\n') return {pos, pos};
  if (!rule.before_space || text[pos] != ' ' || !ascii_graphic(before) || pos + 1 >= text.size()) return {};
  if (rule.sentinels && (before == '>' || text[pos + 1] == '<')) return {};
  return {pos, rule.drop_space ? pos + 1 : pos};
}

}  // namespace lmzoo
