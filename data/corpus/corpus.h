// Streaming corpus reader: .txt files (one document each), .jsonl files ("text" per line), directories.
// Leaves out: tsv pairs and compressed inputs. Memory stays bounded by the chunk size (and the longest jsonl line).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/tokenizers/text_cut.h"

namespace lmzoo {

// Expands files and directories (recursively, in sorted order) into the files to read. Directories
// contribute only .txt and .jsonl files; a file named explicitly is read as text unless it is .jsonl.
// Throws std::runtime_error for a missing path or when no input file is found.
std::vector<std::string> list_input_files(const std::vector<std::string>& inputs);

// Sum of the on-disk sizes of FILES in bytes.
int64_t total_file_bytes(const std::vector<std::string>& files);

// Receives one chunk of a document; end_of_document is true on the document's last chunk.
using ChunkFn = std::function<void(const std::string& text, bool end_of_document)>;

// Streams the non-empty documents of INPUTS in order, each as one or more chunks of at most
// chunk_bytes. A chunk ends after a newline where one exists, else before a space that follows a
// non-space, else at a UTF-8 character boundary: tokenising the chunks separately then gives the same
// ids as tokenising the whole document (no piece spans a newline or starts mid-word), except in the
// last case (a single word longer than chunk_bytes). Throws std::runtime_error naming the file (and
// line for .jsonl) on unreadable files, invalid JSON, or a line without a string "text" field.
void for_each_chunk(const std::vector<std::string>& inputs, size_t chunk_bytes, const ChunkFn& fn);

// As above, but each document is cut where CUTTER.rule allows (the allowed cut nearest chunk_bytes, longer
// chunks where there is none), so that the chunks encoded one by one give the tokenizer's ids of the whole
// document; a chunk may drop a space there (TextCut::next). Only when more than max_buffer_bytes of a
// document hold no allowed cut is it cut by CUTTER.forced, else at a character boundary.
void for_each_chunk(const std::vector<std::string>& inputs, size_t chunk_bytes, const ChunkFn& fn,
                    const TextCutter& cutter, size_t max_buffer_bytes);

// Where a chunk of at most LIMIT bytes of TEXT should end (see for_each_chunk); 0 < result <= limit.
size_t chunk_cut(const std::string& text, size_t limit);

}  // namespace lmzoo
