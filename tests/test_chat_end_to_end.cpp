// Chat fine-tuning end to end, as a user does it with an imported model: a tiny SmolLM2-style Llama (random
// weights from tests/hf_reference.py, the real SmolLM2-Instruct template) learns with LoRA to reverse two words,
// answers through `generate --chat`, and its merged HF export continues the same prompt ids as the Python reference;
// its GGUF export carries the template.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/chat/conversation.h"
#include "tests/catch_compat.h"
#include "tests/cli_helpers.h"
#include "tests/export_helpers.h"
#include "tests/fixtures.h"
#include "tests/hf_round_trip.h"
#include "tests/smollm2_tokenizer.h"
#include "train/eval/chat_generation.h"
#include "train/run/session.h"

using namespace lmzoo;
using namespace lmzoo::test;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kWords = {"the", "cat", "a", "dog"};

nlohmann::json question(const std::string& a, const std::string& b) {
  return nlohmann::json::array({{{"role", "system"}, {"content", "Reverse."}}, {{"role", "user"}, {"content", a + " " + b}}});
}

// Every ordered pair of words, "x y" answered by "y x", 4 times over.
std::string reversal_jsonl() {
  std::string out;
  for (int copy = 0; copy < 4; ++copy) {
    for (const auto& a : kWords) {
      for (const auto& b : kWords) {
        nlohmann::json messages = question(a, b);
        messages.push_back({{"role", "assistant"}, {"content", b + " " + a}});
        out += nlohmann::json{{"messages", messages}}.dump() + "\n";
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("an imported SmolLM2-style model learns a chat task with LoRA under its own template; its merged export "
          "answers as the Python reference does", "[cli][chat][python]") {
  if (!python_has_torch()) {
    WARN("skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)");
    return;
  }
  TempDir dir;
  const std::string hf = dir / "hf", base = dir / "base", run = dir / "run", merged = dir / "merged";
  write_smollm2_tokenizer(hf);
  fs::copy_file(fs::path(LMZOO_SOURCE_DIR) / "tests/fixtures/chat_templates/smollm2-instruct.jinja",
                fs::path(hf) / "chat_template.jinja");
  write_text(hf + "/generation_config.json", R"({"bos_token_id": 1, "eos_token_id": 2})");  // <|im_end|>
  REQUIRE(run_shell(kReference + " make smollm2 " + hf + " --vocab 264 --context 64 --seed 5", dir / "make.log"));
  auto imported = run_cli("import " + hf + " --out " + base);
  INFO(imported.err);
  REQUIRE(imported.exit_code == 0);

  write_text(dir / "chat.jsonl", reversal_jsonl());
  auto prepared = run_cli("prepare --tokenizer " + base + " --chat " + (dir / "chat.jsonl") + " --out " +
                          (dir / "data") + " --val-fraction 0.125");
  INFO(prepared.out << prepared.err);
  REQUIRE(prepared.exit_code == 0);
  CHECK(prepared.out.find("template: the default") == std::string::npos);  // SmolLM2's own

  auto train = run_cli("train --data " + (dir / "data") + " --out " + run + " --init " + base +
                       " --lora-rank 8 --lora-targets q,k,v,o,gate,up,down --batch-size 16 --steps 200"
                       " --eval-interval 200 --lr 1e-2 --warmup 10 --device cpu --threads 1");
  INFO(train.err);
  REQUIRE(train.exit_code == 0);
  CHECK(train.err.find("(LoRA: ") != std::string::npos);

  int right = 0;
  for (const auto& a : kWords) {
    for (const auto& b : kWords) {
      write_text(dir / "ask.json", question(a, b).dump());
      auto answer = run_cli("generate --checkpoint " + run + " --chat " + (dir / "ask.json") +
                            " --temperature 0 --max-new-tokens 8 --device cpu");
      INFO(answer.err);
      REQUIRE(answer.exit_code == 0);
      right += answer.out == b + " " + a + "\n";
    }
  }
  INFO("right answers: " << right << " of 16");
  CHECK(right >= 14);

  // The merged export, continued by the Python reference from the prompt ids lmzoo renders, gives lmzoo's answer.
  auto exported = run_cli("export --checkpoint " + run + " --merge-lora --format hf --out " + merged);
  INFO(exported.err);
  REQUIRE(exported.exit_code == 0);
  CHECK(read_text(merged + "/chat_template.jinja") == read_text(hf + "/chat_template.jinja"));
  auto reimported = run_cli("import " + merged + " --out " + (dir / "reimported"));  // the template read back
  INFO(reimported.err);
  REQUIRE(reimported.exit_code == 0);
  // The GGUF file carries the checkpoint's template too (tokenizer.chat_template), and import reads it back.
  auto gguf = run_cli("export --checkpoint " + run + " --merge-lora --format gguf --out " + (dir / "model.gguf"));
  INFO(gguf.err);
  REQUIRE(gguf.exit_code == 0);
  auto from_gguf = run_cli("import " + (dir / "model.gguf") + " --out " + (dir / "from-gguf"));
  INFO(from_gguf.err);
  REQUIRE(from_gguf.exit_code == 0);
  const Session gguf_session = Session::open(dir / "from-gguf", "cpu");
  CHECK(gguf_session.info().chat.chat_template == read_text(hf + "/chat_template.jinja"));
  Session session = Session::open(dir / "reimported", "cpu");
  SamplingOptions greedy;
  greedy.temperature = 0.0;
  greedy.max_new_tokens = 8;
  const ChatReply reply = chat_reply(session, conversation_from_json({{"messages", question("dog", "cat")}}, "question: "), greedy);
  CHECK(reply.text == "cat dog");
  REQUIRE(!reply.tokens.empty());
  CHECK(reply.tokens.back() == 2);  // stopped at <|im_end|>
  write_text(dir / "ids.json", nlohmann::json{{"input_ids", {reply.prompt}}}.dump());
  REQUIRE(run_shell(kReference + " greedy smollm2 " + merged + " " + (dir / "ids.json") + " --new " +
                        std::to_string(reply.tokens.size()),
                    dir / "greedy.json"));
  CHECK(nlohmann::json::parse(read_text(dir / "greedy.json"))[0].get<std::vector<int64_t>>() == reply.tokens);
}
