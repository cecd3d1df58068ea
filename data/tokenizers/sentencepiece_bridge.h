// SentencePiece behind a dlopen()ed bridge library (liblmzoo_spm.so, loaded RTLD_LOCAL).
// Why: Debian 12's libsentencepiece embeds protobuf 3.14 and exports its symbols, while Debian's LibTorch loads
// protobuf 3.21; linked into one process they interpose each other and crash at start-up. There the bridge is
// loaded with RTLD_DEEPBIND to keep SentencePiece's protobuf private; elsewhere (Debian 13's sentencepiece uses
// the shared protobuf, pip torch hides its own) without, since RTLD_DEEPBIND gives the bridge libstdc++ objects
// (iostreams, locale ids) that the executable never initialised. SentencePiece's own log stays off.
// A dlmopen() namespace with a plain C interface would isolate it fully; not needed so far.
// Leaves out: any SentencePiece API lmzoo does not use.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace lmzoo {

using SpmArgs = std::unordered_map<std::string, std::string>;  // trainer flags without "--"

// The subset of SentencePieceProcessor lmzoo uses. Methods returning std::string return an error
// message, empty on success.
class SpmProcessor {
 public:
  virtual ~SpmProcessor() = default;
  virtual std::string load_serialized(const std::string& model_proto) = 0;
  virtual std::string encode(std::string_view text, std::vector<int>* ids) const = 0;
  virtual std::string encode_pieces(std::string_view text, std::vector<std::string>* pieces) const = 0;
  virtual std::string decode(const std::vector<int>& ids, std::string* text) const = 0;
  virtual int piece_size() const = 0;
  virtual std::string id_to_piece(int id) const = 0;
  virtual int piece_to_id(const std::string& piece) const = 0;
  virtual bool is_byte(int id) const = 0;
  virtual bool is_control(int id) const = 0;
  virtual bool is_unknown(int id) const = 0;
};

// The bridge's exported entry points (extern "C", looked up with dlsym).
using SpmNewProcessorFn = SpmProcessor* (*)();
// Trains with SentencePiece trainer flags ARGS on in-memory SENTENCES; writes the serialized model to
// *model_proto and returns "" on success, else the error message.
using SpmTrainFn = std::string (*)(const SpmArgs& args, const std::vector<std::string>& sentences,
                                   std::string* model_proto);

// Loads the bridge on first use (throws std::runtime_error if it cannot be found or loaded).
std::unique_ptr<SpmProcessor> new_spm_processor();
std::string spm_train(const SpmArgs& args, const std::vector<std::string>& sentences, std::string* model_proto);

}  // namespace lmzoo
