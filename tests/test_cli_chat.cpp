// End to end on the command line: conversations prepared with the chat template, a gpt trained on the answers only
// (padded and packed), its answer perplexity, chat generation that stops at the end-of-turn id (from a file and
// interactively), the template carried into checkpoints and HF exports; bad chat input refused in one line.
#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/chat/chat_encoding.h"
#include "data/tokenizers/special_ids.h"
#include "data/tokenizers/tokenizer.h"
#include "tests/catch_compat.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"
#include "tests/smollm2_tokenizer.h"

using namespace lmzoo;
using namespace lmzoo::test;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kWords = {"the", "cat", "a", "dog"};

std::string reversed(const std::string& a, const std::string& b) { return b + " " + a; }

// Every ordered pair of words: "x y" answered by "y x", 4 times each (with and without a system prompt).
std::string reversal_jsonl() {
  std::string out;
  for (int copy = 0; copy < 4; ++copy) {
    for (const auto& a : kWords) {
      for (const auto& b : kWords) {
        nlohmann::json messages = nlohmann::json::array();
        if (copy % 2) messages.push_back({{"role", "system"}, {"content", "Reverse the words."}});
        messages.push_back({{"role", "user"}, {"content", a + " " + b}});
        messages.push_back({{"role", "assistant"}, {"content", reversed(a, b)}});
        out += nlohmann::json{{"messages", messages}}.dump() + "\n";
      }
    }
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void check_one_line_error(const CliResult& r, int exit_code, const std::string& fragment) {
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == exit_code);
  CHECK(count_lines(r.err) == 1);
  CHECK(r.err.find(fragment) != std::string::npos);
}

}  // namespace

TEST_CASE("CLI: a gpt learns to answer chats with the template; eval scores answers; generate --chat stops at the "
          "end of its turn", "[cli][chat]") {
  TempDir dir;
  write_smollm2_tokenizer(dir.path / "tok");
  write_text(dir / "tok/generation_config.json", R"({"eos_token_id": 2})");  // <|im_end|>
  write_text(dir / "chat.jsonl", reversal_jsonl());
  auto prepared = run_cli("prepare --tokenizer " + (dir / "tok") + " --chat " + (dir / "chat.jsonl") + " --out " +
                          (dir / "data") + " --val-fraction 0.125");
  INFO(prepared.out << prepared.err);
  REQUIRE(prepared.exit_code == 0);
  CHECK(prepared.out.find("template: the default (ChatML)") != std::string::npos);

  for (const char* layout : {"", " --packing"}) {
    CAPTURE(layout);
    const std::string run = dir / (std::string("run") + (*layout ? "-packed" : ""));
    auto train = run_cli("train --data " + (dir / "data") + " --out " + run +
                         " --n-layer 2 --n-head 4 --d-model 64 --seq-len 64 --position rope --norm rmsnorm"
                         " --activation swiglu --batch-size 16 --steps 150 --eval-interval 150 --lr 3e-3 --warmup 10"
                         " --device cpu --threads 1" + layout);
    INFO(train.err);
    REQUIRE(train.exit_code == 0);
    CHECK(train.err.find("chat data: 56 training examples") != std::string::npos);
    CHECK(fs::exists(run + "/last/chat_template.jinja"));
    CHECK(read_text(run + "/last/generation_config.json").find("2") != std::string::npos);

    auto eval = run_cli("eval --checkpoint " + run + " --data " + (dir / "data") + " --device cpu");
    INFO(eval.err);
    REQUIRE(eval.exit_code == 0);
    CHECK(eval.out.find("answer tokens") != std::string::npos);

    // The reversal is learnt: greedy answers to every pair (the conversation in a file, one at a time).
    int right = 0;
    for (const auto& a : kWords) {
      for (const auto& b : kWords) {
        write_text(dir / "ask.json", nlohmann::json::array({{{"role", "user"}, {"content", a + " " + b}}}).dump());
        auto answer = run_cli("generate --checkpoint " + run + " --chat " + (dir / "ask.json") +
                              " --temperature 0 --max-new-tokens 8 --device cpu");
        INFO(answer.err);
        REQUIRE(answer.exit_code == 0);
        right += answer.out == reversed(a, b) + "\n";
      }
    }
    INFO("right answers: " << right << " of 16");
    CHECK(right >= 14);
  }

  // Interactively: one answer line per user line, the conversation kept.
  write_text(dir / "turns.txt", "the cat\na dog\n");
  auto chat = run_cli("generate --checkpoint " + (dir / "run") + " --chat - --temperature 0 --max-new-tokens 8 "
                      "--device cpu", dir / "turns.txt");
  INFO(chat.err);
  REQUIRE(chat.exit_code == 0);
  CHECK(lines_of(chat.out).size() == 2);

  // The export carries the template where transformers 4 and 5 read it, and the end-of-turn id.
  auto exported = run_cli("export --checkpoint " + (dir / "run") + " --format hf --out " + (dir / "hf"));
  INFO(exported.err);
  REQUIRE(exported.exit_code == 0);
  CHECK(read_text(dir / "hf/chat_template.jinja") == read_text(dir / "run/last/chat_template.jinja"));
  CHECK(nlohmann::json::parse(read_text(dir / "hf/tokenizer_config.json"))["chat_template"] ==
        read_text(dir / "hf/chat_template.jinja"));
  CHECK(nlohmann::json::parse(read_text(dir / "hf/generation_config.json"))["eos_token_id"] ==
        nlohmann::json::array({2}));
}

TEST_CASE("CLI: bad chat input is one line, exit 2, nothing written", "[cli][chat]") {
  TempDir dir;
  write_smollm2_tokenizer(dir.path / "tok");
  const std::string prepare = "prepare --tokenizer " + (dir / "tok") + " --out " + (dir / "out") + " --chat ";
  write_text(dir / "bad.jsonl", R"({"prompt": "a", "completion": "b"})" "\n{oops\n");
  check_one_line_error(run_cli(prepare + (dir / "bad.jsonl")), 2, dir / "bad.jsonl" + ":2: invalid JSON");
  write_text(dir / "role.jsonl", R"({"messages": [{"role": "robot", "content": "b"}]})" "\n");
  check_one_line_error(run_cli(prepare + (dir / "role.jsonl")), 2, "unknown role 'robot'");
  write_text(dir / "mute.jsonl", R"({"messages": [{"role": "user", "content": "b"}]})" "\n");
  check_one_line_error(run_cli(prepare + (dir / "mute.jsonl")), 2, "no assistant turn");
  write_text(dir / "ok.jsonl", R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},)"
                               R"( {"role": "assistant", "content": "a"}]})" "\n");
  write_text(dir / "raises.jinja", "{% if messages[0].role == 'system' %}{{ raise_exception('no system role here') }}"
                                   "{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}");
  check_one_line_error(run_cli(prepare + (dir / "ok.jsonl") + " --chat-template " + (dir / "raises.jinja")), 2,
                       "no system role here");
  CHECK_FALSE(fs::exists(dir / "out"));

  check_one_line_error(run_cli("prepare --tokenizer " + (dir / "tok") + " --out " + (dir / "out") + " --input " +
                               (dir / "ok.jsonl") + " --chat-template " + (dir / "raises.jinja")),
                       2, "--chat-template applies to --chat");
  REQUIRE(run_cli(prepare + (dir / "ok.jsonl") + " --val-fraction 0").exit_code == 0);
  check_one_line_error(run_cli("train --data " + (dir / "out") + " --out " + (dir / "run") +
                               " --objective causal --steps 1 --device cpu"),
                       2, "holds prepared conversations, which train --objective chat");
  check_one_line_error(run_cli("train --data " + (dir / "out") + " --out " + (dir / "run") +
                               " --objective chat --arch bert --steps 1 --device cpu"),
                       2, "objective 'chat' trains gpt");
  CHECK_FALSE(fs::exists(dir / "run"));
}

TEST_CASE("CLI: tokenizer train --special-tokens keeps a chat template's markers whole", "[cli][chat]") {
  const Fixture& f = tiny_corpus();
  TempDir dir;
  auto trained = run_cli("tokenizer train --input " + f.text_file + " --vocab-size 600 --out " + (dir / "tok") +
                         " --special-tokens '<|im_start|>,<|im_end|>'");
  INFO(trained.err);
  REQUIRE(trained.exit_code == 0);
  const Tokenizer tokenizer = Tokenizer::load(dir / "tok");
  const int start = tokenizer.piece_to_id("<|im_start|>"), end = tokenizer.piece_to_id("<|im_end|>");
  CHECK(start == lmzoo::special::kNumSpecial);  // right after the fixed special ids, in the order given
  CHECK(end == start + 1);
  const auto ids = tokenizer.encode("<|im_start|>user\nthe cat<|im_end|>\n");
  REQUIRE(ids.size() > 3);
  CHECK(ids.front() == start);
  CHECK(std::count(ids.begin(), ids.end(), end) == 1);
  CHECK(tokenizer.decode(ids) == "<|im_start|>user\nthe cat<|im_end|>\n");
  // ChatML's end marker is then an end-of-turn id of the default template.
  const lmzoo::ChatEncoder encoder(tokenizer, "", {});
  CHECK(std::find(encoder.stop_ids().begin(), encoder.stop_ids().end(), end) != encoder.stop_ids().end());
  check_one_line_error(run_cli("tokenizer train --input " + f.text_file + " --out " + (dir / "tok2") +
                               " --special-tokens '<a>,<a>'"),
                       2, "special token '<a>' is given twice");
}
