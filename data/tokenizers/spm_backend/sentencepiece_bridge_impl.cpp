// The bridge library itself (built as liblmzoo_spm.so, the only code that links libsentencepiece):
// SpmProcessor over sentencepiece::SentencePieceProcessor, and in-memory training.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include "data/tokenizers/sentencepiece_bridge.h"

namespace sentencepiece::logging {
void SetMinLogLevel(int v);  // exported by libsentencepiece, not declared in its public headers
}

namespace {

// SentencePiece must never log: under RTLD_DEEPBIND it would write to libstdc++'s own std::cerr,
// which is never constructed because the executable holds the (copy-relocated) live one.
constexpr int kLogFatalOnly = 3;

class Processor final : public lmzoo::SpmProcessor {
 public:
  std::string load_serialized(const std::string& model_proto) override {
    return message(sp_.LoadFromSerializedProto(model_proto));
  }
  std::string encode(std::string_view text, std::vector<int>* ids) const override {
    return message(sp_.Encode(text, ids));
  }
  std::string encode_pieces(std::string_view text, std::vector<std::string>* pieces) const override {
    return message(sp_.Encode(text, pieces));
  }
  std::string decode(const std::vector<int>& ids, std::string* text) const override {
    return message(sp_.Decode(ids, text));
  }
  int piece_size() const override { return sp_.GetPieceSize(); }
  std::string id_to_piece(int id) const override { return sp_.IdToPiece(id); }
  int piece_to_id(const std::string& piece) const override { return sp_.PieceToId(piece); }
  bool is_byte(int id) const override { return sp_.IsByte(id); }
  bool is_control(int id) const override { return sp_.IsControl(id); }
  bool is_unknown(int id) const override { return sp_.IsUnknown(id); }

 private:
  static std::string message(const sentencepiece::util::Status& status) {
    return status.ok() ? "" : (status.error_message() ? status.error_message() : "error");
  }
  sentencepiece::SentencePieceProcessor sp_;
};

class VectorIterator : public sentencepiece::SentenceIterator {
 public:
  explicit VectorIterator(const std::vector<std::string>& sentences) : sentences_(sentences) {}
  bool done() const override { return index_ >= sentences_.size(); }
  void Next() override { ++index_; }
  const std::string& value() const override { return sentences_[index_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  const std::vector<std::string>& sentences_;
  size_t index_ = 0;
};

}  // namespace

extern "C" lmzoo::SpmProcessor* lmzoo_spm_new_processor() {
  sentencepiece::logging::SetMinLogLevel(kLogFatalOnly);
  return new Processor();
}

extern "C" std::string lmzoo_spm_train(const lmzoo::SpmArgs& args, const std::vector<std::string>& sentences,
                                       std::string* model_proto) {
  VectorIterator iterator(sentences);
  lmzoo::SpmArgs quiet = args;
  quiet["minloglevel"] = std::to_string(kLogFatalOnly);
  auto status = sentencepiece::SentencePieceTrainer::Train(quiet, &iterator, model_proto);
  sentencepiece::logging::SetMinLogLevel(kLogFatalOnly);
  return status.ok() ? "" : (status.error_message() ? status.error_message() : "training failed");
}
