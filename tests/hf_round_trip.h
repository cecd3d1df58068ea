// Shared steps of the Hugging Face tests (refusals read back in one line, and the round trips): tests/hf_reference.py makes a tiny random HF checkpoint, lmzoo
// imports it, its TorchScript export is compared with the float64 reference, and export --format hf gives back
// the same bytes.
#pragma once
#include <cstdlib>
#include <string>

#include "models/hf_config.h"
#include "tests/catch_compat.h"
#include "tests/cli_helpers.h"
#include "tests/export_helpers.h"
#include "tests/fixtures.h"
#include "train/checkpoint/checkpoint.h"

namespace lmzoo::test {

// The one-line refusal of model_config_from_hf(HF), or "" when it reads.
inline std::string refusal(const nlohmann::json& hf) {
  try {
    model_config_from_hf(hf);
  } catch (const HfFormatError& e) {
    return e.what();
  }
  return "";
}

// The one-line refusal of hf_architecture_of(C) (no Hugging Face twin), or "" when it has one.
inline std::string twin_refusal(const ModelConfig& c) {
  try {
    hf_architecture_of(c);
  } catch (const HfFormatError& e) {
    return e.what();
  }
  return "";
}

inline const std::string kReference = std::string("/usr/bin/python3 ") + LMZOO_SOURCE_DIR + "/tests/hf_reference.py";

// Inputs of the reference comparison per family (ids below 97, T5 with decoder inputs starting at pad 0).
inline std::string ids_json(const std::string& arch) {
  if (arch.rfind("t5", 0) == 0) {
    return R"({"input_ids": [[13, 17, 42, 96, 33, 71, 1], [5, 6, 7, 8, 9, 10, 1]],
               "decoder_input_ids": [[0, 5, 9, 11, 40], [0, 7, 7, 2, 3]]})";
  }
  if (arch.rfind("bert", 0) == 0) return R"({"input_ids": [[2, 17, 42, 96, 33, 71, 3], [2, 5, 6, 7, 8, 9, 3]]})";
  return R"({"input_ids": [[5, 17, 42, 96, 0, 33, 71, 8], [1, 2, 3, 4, 5, 6, 7, 8]]})";
}

inline bool run_shell(const std::string& cmd, const std::string& log) { return std::system((cmd + " >" + log + " 2>&1").c_str()) == 0; }

// Every parameter of two checkpoints, bit for bit.
inline void check_same_weights(const std::string& a, const std::string& b) {
  const auto pa = load_model(read_checkpoint(a), torch::kCPU).module()->named_parameters();
  const auto pb = load_model(read_checkpoint(b), torch::kCPU).module()->named_parameters();
  REQUIRE(pa.size() == pb.size());
  for (const auto& item : pa) {
    INFO(item.key());
    const torch::Tensor* other = pb.find(item.key());
    REQUIRE(other != nullptr);
    CHECK(torch::equal(item.value(), *other));
  }
}

// export --format hf of CKPT into BACK: the safetensors bytes of every tensor of the source HF_DIR, named as it names
// them; then BACK imported again (into AGAIN) gives CKPT's weights bit for bit.
inline void export_back_bit_for_bit(const std::string& ckpt, const std::string& hf_dir, const std::string& back,
                                    const std::string& again, const std::string& log_dir) {
  auto exported = run_cli("export --checkpoint " + ckpt + " --format hf --out " + back);
  INFO(exported.out << exported.err);
  REQUIRE(exported.exit_code == 0);
  const std::string log = log_dir + "/roundtrip.log";
  const bool same_bytes = run_shell(kReference + " check-roundtrip " + hf_dir + " " + back, log);
  INFO(read_text(log));
  CHECK(same_bytes);
  auto reimported = run_cli("import " + back + " --out " + again);
  INFO(reimported.out << reimported.err);
  REQUIRE(reimported.exit_code == 0);
  check_same_weights(ckpt, again);
}

// make -> import -> TorchScript export vs the Python reference -> export --format hf -> same bytes as the source ->
// import again -> the same weights.
inline void round_trip(const std::string& arch) {
  INFO(arch);
  const Fixture& corpus = tiny_corpus();
  TempDir dir;
  const std::string hf = dir / "hf", ckpt = dir / "ckpt", back = dir / "back", again = dir / "again";
  const std::string vocab = std::to_string(corpus.vocab_size);
  REQUIRE(run_shell(kReference + " make " + arch + " " + hf + " --vocab " + vocab, dir / "make.log"));

  auto imported = run_cli("import " + hf + " --out " + ckpt + " --tokenizer " + corpus.tokenizer_dir);
  INFO(imported.out << imported.err);
  REQUIRE(imported.exit_code == 0);
  CHECK(imported.err.empty());

  REQUIRE(run_cli("export --checkpoint " + ckpt + " --out " + (dir / "model.pt")).exit_code == 0);
  write_text(dir / "ids.json", ids_json(arch));
  const bool close = run_shell(kReference + " compare " + arch + " " + hf + " " + (dir / "model.pt") + " " +
                                   (dir / "ids.json") + " --tol 1e-5",
                               dir / "compare.log");
  INFO(read_text(dir / "compare.log"));
  CHECK(close);

  // A BertModel goes out as a BertForMaskedLM, which has no pooler: bert-mlm and bert-cls cover its way back.
  if (arch == "bert-model") return;
  export_back_bit_for_bit(ckpt, hf, back, again, dir.path.string());
}

}  // namespace lmzoo::test
