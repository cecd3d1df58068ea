// Streaming corpus reader: lists input files, reads .txt / .jsonl documents in bounded chunks.
// Leaves out: tsv pairs and compression.
#include "data/corpus/corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string_view>

#include <nlohmann/json.hpp>

#include "data/unicode/utf8.h"

namespace fs = std::filesystem;

namespace lmzoo {

namespace {

bool is_jsonl(const fs::path& p) { return p.extension() == ".jsonl"; }
bool is_corpus_file(const fs::path& p) { return p.extension() == ".txt" || is_jsonl(p); }

// Where the next chunk of BUFFER (the rest of a document, or a prefix of it) ends: a cut, or none when more
// text is needed to find one (or, at the document's end, when the rest is one chunk).
using NextCut = std::function<TextCut(std::string_view buffer, size_t chunk_bytes)>;

// chunk_cut's cuts: after a newline, before a space, else at a character boundary.
TextCut line_cut(std::string_view buffer, size_t chunk_bytes) {
  const size_t cut = chunk_cut(std::string(buffer.substr(0, chunk_bytes + 1)), chunk_bytes);
  return {cut, cut};
}

// Emits TEXT, a whole document, as chunks cut by NEXT; the last one carries end_of_document.
void emit_document(const std::string& text, size_t chunk_bytes, const NextCut& next, const ChunkFn& fn) {
  std::string_view rest = text;
  while (rest.size() > chunk_bytes) {
    const TextCut cut = next(rest, chunk_bytes);
    if (!cut.found()) break;
    fn(std::string(rest.substr(0, cut.end)), false);
    rest.remove_prefix(cut.next);
  }
  if (!rest.empty()) fn(std::string(rest), true);
}

void read_txt(const std::string& file, size_t chunk_bytes, const NextCut& next, const ChunkFn& fn) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read input file: " + file);
  std::string buffer, block(chunk_bytes, '\0');
  int64_t offset = 0;  // of buffer in the file; chunks are cut at character boundaries, so each is checked alone
  auto emit_cuts = [&] {
    // A cut leaves text after it, so the final chunk (with end_of_document) always has text.
    while (buffer.size() > chunk_bytes) {
      const TextCut cut = next(buffer, chunk_bytes);
      if (!cut.found()) return;
      std::string chunk = buffer.substr(0, cut.end);
      require_utf8(chunk, file, offset);
      fn(chunk, false);
      buffer.erase(0, cut.next);
      offset += static_cast<int64_t>(cut.next);
    }
  };
  while (in) {
    in.read(&block[0], static_cast<std::streamsize>(chunk_bytes));
    buffer.append(block.data(), static_cast<size_t>(in.gcount()));
    emit_cuts();
  }
  if (in.bad()) throw std::runtime_error("error reading input file: " + file);
  require_utf8(buffer, file, offset);
  if (!buffer.empty()) fn(buffer, true);
}

void read_jsonl(const std::string& file, size_t chunk_bytes, const NextCut& next, const ChunkFn& fn) {
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
    emit_document(doc["text"].get<std::string>(), chunk_bytes, next, fn);
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

namespace {

void read_files(const std::vector<std::string>& inputs, size_t chunk_bytes, const NextCut& next, const ChunkFn& fn) {
  for (const auto& file : list_input_files(inputs)) {
    if (is_jsonl(file)) read_jsonl(file, chunk_bytes, next, fn);
    else read_txt(file, chunk_bytes, next, fn);
  }
}

}  // namespace

void for_each_chunk(const std::vector<std::string>& inputs, size_t chunk_bytes, const ChunkFn& fn) {
  read_files(inputs, std::max<size_t>(chunk_bytes, 16), line_cut, fn);
}

void for_each_chunk(const std::vector<std::string>& inputs, size_t chunk_bytes, const ChunkFn& fn,
                    const TextCutter& cutter, size_t max_buffer_bytes) {
  chunk_bytes = std::max<size_t>(chunk_bytes, 16);
  const NextCut next = [&](std::string_view buffer, size_t limit) {
    TextCut cut = find_cut(buffer, limit, cutter.rule);
    if (cut.found() || buffer.size() < max_buffer_bytes) return cut;
    cut = find_cut(buffer, limit, cutter.forced);
    return cut.found() ? cut : character_cut(buffer, limit);
  };
  read_files(inputs, chunk_bytes, next, fn);
}

}  // namespace lmzoo
