// Labelled text for sequence classification: TSV (text [TAB text_pair] TAB label) or JSONL
// ({"text", optional "text_pair", "label"}) files, the label set, and [CLS] a [SEP] (b [SEP]) framing.
// Leaves out: token-level labels (tagging) and regression targets.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/batching/batcher_mlm.h"
#include "data/tokenizers/tokenizer.h"

namespace lmzoo {

struct LabelledText {
  std::string text, text_pair;  // text_pair empty for single-sentence tasks
  std::string label;
};

// Reads a .tsv or .jsonl file (chosen by extension; anything else is read as TSV). TSV lines have 2 or 3
// tab-separated fields, the label last; a first line whose last field is "label" is a header. JSON labels
// may be strings or numbers. Throws std::runtime_error naming the file and line on malformed input.
std::vector<LabelledText> read_labelled_text(const std::string& path);

// The distinct labels, in numeric order when every label is an integer, else in lexicographic order.
std::vector<std::string> label_set(const std::vector<LabelledText>& examples);

// Index of label in labels; throws std::runtime_error naming the label and the known ones when absent.
int64_t label_id(const std::vector<std::string>& labels, const std::string& label);

// Tokenizes and frames one example as [CLS] a [SEP] (b [SEP]) within max_len tokens, truncating the
// longer segment first. Token labels are all -1.
MlmExample frame_labelled(const Tokenizer& tokenizer, const LabelledText& example, int64_t max_len);

}  // namespace lmzoo
