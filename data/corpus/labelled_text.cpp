// Labelled text files: TSV / JSONL parsing with line-numbered errors, label sets, framing and truncation.
#include "data/corpus/labelled_text.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "data/unicode/utf8.h"

namespace lmzoo {

namespace {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields(1);
  for (char c : line) {
    if (c == '\t') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

bool is_integer(const std::string& s) {
  if (s.empty() || s.size() > 18) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

LabelledText parse_json_line(const std::string& line, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error(where + ": not valid JSON");
  }
  if (!j.is_object() || !j.contains("text") || !j["text"].is_string() || !j.contains("label")) {
    throw std::runtime_error(where + ": expected an object with a string \"text\" and a \"label\"");
  }
  LabelledText e;
  e.text = j["text"].get<std::string>();
  if (j.contains("text_pair")) {
    if (!j["text_pair"].is_string()) throw std::runtime_error(where + ": \"text_pair\" must be a string");
    e.text_pair = j["text_pair"].get<std::string>();
  }
  const auto& label = j["label"];
  if (label.is_string()) {
    e.label = label.get<std::string>();
  } else if (label.is_number_integer()) {
    e.label = std::to_string(label.get<int64_t>());
  } else {
    throw std::runtime_error(where + ": \"label\" must be a string or an integer");
  }
  return e;
}

}  // namespace

std::vector<LabelledText> read_labelled_text(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw std::runtime_error(path + " is a directory; a classifier reads a labelled .tsv or .jsonl file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open labelled data file " + path);
  const bool jsonl = is_json_lines_path(path);
  std::vector<LabelledText> examples;
  for_each_utf8_line(in, path, [&](const std::string& line, int64_t number) {
    if (line.empty()) return;
    const std::string where = path + ":" + std::to_string(number);
    if (jsonl) {
      examples.push_back(parse_json_line(line, where));
      return;
    }
    const auto fields = split_tabs(line);
    if (fields.size() != 2 && fields.size() != 3) {
      throw std::runtime_error(where + ": expected text<TAB>label or text<TAB>text_pair<TAB>label, got " +
                               std::to_string(fields.size()) + " field(s)");
    }
    if (number == 1 && fields.back() == "label") return;  // header
    if (fields.back().empty()) throw std::runtime_error(where + ": empty label");
    examples.push_back({fields[0], fields.size() == 3 ? fields[1] : std::string(), fields.back()});
  });
  if (examples.empty()) throw std::runtime_error("labelled data file " + path + " has no examples");
  return examples;
}

std::vector<std::string> label_set(const std::vector<LabelledText>& examples) {
  std::vector<std::string> labels;
  for (const auto& e : examples) labels.push_back(e.label);
  std::sort(labels.begin(), labels.end());
  labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
  if (std::all_of(labels.begin(), labels.end(), is_integer)) {
    std::sort(labels.begin(), labels.end(),
              [](const std::string& a, const std::string& b) { return std::stoll(a) < std::stoll(b); });
  }
  return labels;
}

int64_t label_id(const std::vector<std::string>& labels, const std::string& label) {
  const auto it = std::find(labels.begin(), labels.end(), label);
  if (it != labels.end()) return int64_t(it - labels.begin());
  std::string known;
  for (const auto& l : labels) known += (known.empty() ? "" : ", ") + l;
  throw std::runtime_error("label '" + label + "' is not one the model was trained on (" + known + ")");
}

MlmExample frame_labelled(const Tokenizer& tokenizer, const LabelledText& example, int64_t max_len) {
  require_mlm_ids(tokenizer.special(), "classify");
  auto to_ids = [&](const std::string& text) {
    std::vector<int64_t> ids;
    for (int id : tokenizer.encode(text)) ids.push_back(id);
    return ids;
  };
  std::vector<int64_t> a = to_ids(example.text), b = to_ids(example.text_pair);
  const bool pair = !example.text_pair.empty();
  const int64_t budget = max_len - (pair ? 3 : 2);
  if (budget < (pair ? 2 : 1)) throw std::invalid_argument("max_len " + std::to_string(max_len) + " is too short");
  while (int64_t(a.size() + b.size()) > budget) (a.size() >= b.size() ? a : b).pop_back();  // longest first
  return frame_segments(tokenizer.special(), a, b);
}

}  // namespace lmzoo
