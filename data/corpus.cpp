// Streaming corpus reader: lists input files, reads .txt / .jsonl documents in bounded chunks.
// Leaves out: tsv pairs and compression.
#include "data/corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "data/utf8.h"

namespace fs = std::filesystem;

namespace lmzoo {

namespace {

bool is_jsonl(const fs::path& p) { return p.extension() == ".jsonl"; }
bool is_corpus_file(const fs::path& p) { return p.extension() == ".txt" || is_jsonl(p); }

// Emits TEXT as chunks of at most chunk_bytes; the last one carries end_of_document.
void emit_document(std::string text, size_t chunk_bytes, const ChunkFn& fn) {
  size_t start = 0;
  while (text.size() - start > chunk_bytes) {
    std::string view = text.substr(start, chunk_bytes + 1);  // +1: a cut may fall just before a space
    size_t cut = chunk_cut(view, chunk_bytes);
    fn(view.substr(0, cut), false);
    start += cut;
  }
  if (start < text.size()) fn(text.substr(start), true);
}

void read_txt(const std::string& file, size_t chunk_bytes, const ChunkFn& fn) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read input file: " + file);
  std::string buffer, block(chunk_bytes, '\0');
  int64_t offset = 0;  // of buffer in the file; chunks are cut at character boundaries, so each is checked alone
  while (in) {
    in.read(&block[0], static_cast<std::streamsize>(chunk_bytes));
    buffer.append(block.data(), static_cast<size_t>(in.gcount()));
    // Keep more than chunk_bytes buffered so the remainder after a cut is never empty: the final
    // chunk (with end_of_document) then always has text.
    while (buffer.size() > chunk_bytes) {
      size_t cut = chunk_cut(buffer, chunk_bytes);
      std::string chunk = buffer.substr(0, cut);
      require_utf8(chunk, file, offset);
      fn(chunk, false);
      buffer.erase(0, cut);
      offset += static_cast<int64_t>(cut);
    }
  }
  if (in.bad()) throw std::runtime_error("error reading input file: " + file);
  require_utf8(buffer, file, offset);
  if (!buffer.empty()) fn(buffer, true);
}

void read_jsonl(const std::string& file, size_t chunk_bytes, const ChunkFn& fn) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read input file: " + file);
  std::string line;
  int64_t offset = 0;  // of the line in the file
  for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
    require_utf8(line, file, offset, line_no);  // before parsing: nlohmann's message names no offset
    offset += static_cast<int64_t>(line.size()) + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank line
    const std::string where = file + ":" + std::to_string(line_no);
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      throw std::runtime_error(where + ": invalid JSON line");
    }
    if (!doc.is_object() || !doc.contains("text") || !doc["text"].is_string()) {
      throw std::runtime_error(where + ": expected an object with a string \"text\" field");
    }
    emit_document(doc["text"].get<std::string>(), chunk_bytes, fn);
  }
  if (in.bad()) throw std::runtime_error("error reading input file: " + file);
}

}  // namespace

std::vector<std::string> list_input_files(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const auto& input : inputs) {
    std::error_code ec;
    if (fs::is_directory(input, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::recursive_directory_iterator(input)) {
        if (entry.is_regular_file() && is_corpus_file(entry.path())) found.push_back(entry.path().string());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(input, ec)) {
      files.push_back(input);
    } else {
      throw std::runtime_error("input not found: " + input);
    }
  }
  if (files.empty()) throw std::runtime_error("no input files (.txt or .jsonl) found");
  return files;
}

int64_t total_file_bytes(const std::vector<std::string>& files) {
  int64_t total = 0;
  for (const auto& f : files) total += static_cast<int64_t>(fs::file_size(f));
  return total;
}

size_t chunk_cut(const std::string& text, size_t limit) {
  if (text.size() <= limit) return text.size();
  size_t newline = text.rfind('\n', limit - 1);
  if (newline != std::string::npos) return newline + 1;
  for (size_t i = limit; i > 0; --i) {  // before a space that follows a non-space
    if (text[i] == ' ' && text[i - 1] != ' ') return i;
  }
  size_t cut = limit;  // back off UTF-8 continuation bytes (10xxxxxx)
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return cut > 0 ? cut : limit;
}

void for_each_chunk(const std::vector<std::string>& inputs, size_t chunk_bytes, const ChunkFn& fn) {
  if (chunk_bytes < 16) chunk_bytes = 16;
  for (const auto& file : list_input_files(inputs)) {
    if (is_jsonl(file)) read_jsonl(file, chunk_bytes, fn);
    else read_txt(file, chunk_bytes, fn);
  }
}

}  // namespace lmzoo
