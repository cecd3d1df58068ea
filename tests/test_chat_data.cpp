// Chat data: JSONL conversations read (both TRL formats, bad lines named), rendered and tokenized with per-token
// answer masks (special-token markers, plain-text markers, trimming and raising templates), prepared into a chat
// directory and read back, and the chat task's batches (labels only on answers; packed = unpacked loss).
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/chat/chat_data.h"
#include "data/chat/chat_encoding.h"
#include "data/chat/chat_template.h"
#include "data/chat/conversation.h"
#include "data/corpus/shards.h"
#include "models/gpt.h"
#include "models/registry.h"
#include "tests/catch_compat.h"
#include "tests/cli_helpers.h"
#include "tests/fixtures.h"
#include "tests/model_fixtures.h"
#include "tests/smollm2_tokenizer.h"
#include "train/chat_task.h"
#include "train/task.h"

using namespace lmzoo;
using namespace lmzoo::test;
namespace fs = std::filesystem;

namespace {

Conversation two_turns() {
  return {{ChatRole::kSystem, "Be brief."},
          {ChatRole::kUser, "the cat"},
          {ChatRole::kAssistant, "cat the"},
          {ChatRole::kUser, "a cat"},
          {ChatRole::kAssistant, "the"}};
}

// ChatML as lmzoo's default template writes it, by hand.
std::string chatml(const Conversation& c) {
  std::string out;
  for (const auto& m : c) out += "<|im_start|>" + enum_name(m.role) + "\n" + m.content + "<|im_end|>\n";
  return out;
}

// The runs of consecutive scored tokens.
std::vector<std::vector<int>> scored_runs(const EncodedChat& e) {
  std::vector<std::vector<int>> runs;
  for (size_t i = 0; i < e.tokens.size(); ++i) {
    if (!e.scored[i]) continue;
    if (i == 0 || !e.scored[i - 1]) runs.emplace_back();
    runs.back().push_back(e.tokens[i]);
  }
  return runs;
}

std::vector<int> concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("chat JSONL: messages lists and prompt/completion pairs read as conversations", "[chat]") {
  TempDir dir;
  const std::string path = dir / "chat.jsonl";
  write_text(path, R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]})"
                   "\n\n"
                   R"({"prompt": "2+2?", "completion": "4"})"
                   "\n"
                   R"({"prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}], )"
                   R"("completion": [{"role": "assistant", "content": "a"}]})"
                   "\n");
  const auto all = read_conversations(path);
  REQUIRE(all.size() == 3);
  CHECK(all[0].messages.size() == 2);
  CHECK(all[0].messages[1].role == ChatRole::kAssistant);
  CHECK(all[0].messages[1].content == "hello");
  CHECK(all[1].messages.size() == 2);
  CHECK(all[1].messages[0].role == ChatRole::kUser);
  CHECK(all[1].messages[0].content == "2+2?");
  CHECK(all[1].messages[1].content == "4");
  CHECK(all[1].where == path + ":3: ");
  CHECK(all[2].messages.size() == 3);
  CHECK(all[2].messages[0].role == ChatRole::kSystem);
}

TEST_CASE("chat JSONL: a bad line is refused naming the file and line", "[chat]") {
  TempDir dir;
  const std::string path = dir / "bad.jsonl";
  auto refused = [&](const std::string& second_line) {
    write_text(path, R"({"prompt": "a", "completion": "b"})" "\n" + second_line + "\n");
    try {
      read_conversations(path);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK(refused("{not json") == path + ":2: invalid JSON");
  CHECK_THAT(refused(R"({"messages": [{"role": "bot", "content": "x"}]})"),
             Catch::Contains(path + ":2: unknown role 'bot'"));
  CHECK_THAT(refused(R"({"messages": [{"role": "user", "content": "x"}]})"),
             Catch::Contains(path + ":2: the conversation has no assistant turn"));
  CHECK_THAT(refused(R"({"messages": [{"role": "user", "content": 3}]})"),
             Catch::Contains(path + ":2: a user message has no string \"content\""));
  CHECK_THAT(refused(R"({"text": "x"})"), Catch::Contains(path + ":2: expected \"messages\""));
}

TEST_CASE("chat encoding: with ChatML's markers as special tokens the answers and their <|im_end|> are scored",
          "[chat]") {
  TempDir dir;
  write_smollm2_tokenizer(dir.path / "tok");
  const Tokenizer tokenizer = Tokenizer::load(dir / "tok");
  const ChatEncoder encoder(tokenizer, "", {2});  // the default template; <|im_end|> (id 2) ends a turn
  const Conversation c = two_turns();
  CHECK(encoder.render(c, false) == chatml(c));
  CHECK(encoder.render({c[0], c[1]}, true) == chatml({c[0], c[1]}) + "<|im_start|>assistant\n");
  const EncodedChat e = encoder.encode(c);
  CHECK(e.tokens == tokenizer.encode(chatml(c)));  // the whole text's tokens
  const auto runs = scored_runs(e);
  REQUIRE(runs.size() == 2);
  CHECK(runs[0] == concat(tokenizer.encode("cat the"), {2}));
  CHECK(runs[1] == concat(tokenizer.encode("the"), {2}));
  const int64_t scored = std::count(e.scored.begin(), e.scored.end(), uint8_t(1));
  CHECK(scored == int64_t(runs[0].size() + runs[1].size()));
}

TEST_CASE("chat encoding: plain-text markers and tokens across an answer's edge", "[chat]") {
  const Fixture& f = tiny_corpus();  // lmzoo's own SentencePiece model: <|im_start|> is plain text
  const Tokenizer tokenizer = Tokenizer::load(f.tokenizer_dir);
  const ChatEncoder encoder(tokenizer, "", {});
  const Conversation c = two_turns();
  const EncodedChat e = encoder.encode(c);
  CHECK(e.tokens == tokenizer.encode(chatml(c)));  // exactly the whole text's tokens, whatever crosses an edge
  const auto runs = scored_runs(e);
  REQUIRE(runs.size() == 2);
  for (size_t k = 0; k < runs.size(); ++k) {
    const std::string answer = tokenizer.decode(runs[k]);
    const std::string expected = (k == 0 ? "cat the" : "the") + std::string("<|im_end|>");
    CAPTURE(answer);
    // Each run covers its answer and marker, and at most the token that straddles the answer's start.
    CHECK(answer.size() >= expected.size());
    CHECK(answer.substr(answer.size() - expected.size()) == expected);
    CHECK(answer.size() <= expected.size() + 12);
  }
}

TEST_CASE("chat encoding: a template that trims answers and one that raises", "[chat]") {
  TempDir dir;
  write_smollm2_tokenizer(dir.path / "tok");
  const Tokenizer tokenizer = Tokenizer::load(dir / "tok");
  const std::string trims =
      "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}"
      "{% endif %}<|im_start|>{{ m.role }}\n{{ m.content | trim }}<|im_end|>\n{% endfor %}";
  const ChatEncoder encoder(tokenizer, trims, {2});
  const Conversation c = {{ChatRole::kUser, " the cat "}, {ChatRole::kAssistant, "  cat the\n"}};
  const EncodedChat e = encoder.encode(c);
  const auto runs = scored_runs(e);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0] == concat(tokenizer.encode("cat the"), {2}));
  try {
    encoder.encode(two_turns());
    FAIL("a raising template encoded");
  } catch (const ChatTemplateError& error) {
    CHECK_THAT(std::string(error.what()), Catch::Contains("System role not supported"));
  }
}

TEST_CASE("prepare --chat writes what the encoder makes and reads back example by example", "[chat]") {
  TempDir dir;
  write_smollm2_tokenizer(dir.path / "tok");
  write_text(dir / "tok/generation_config.json", R"({"eos_token_id": [2, 0]})");
  const std::string path = dir / "chat.jsonl";
  std::string lines;
  for (int i = 0; i < 10; ++i) {
    lines += nlohmann::ordered_json{{"messages", messages_json({{ChatRole::kUser, "the cat " + std::to_string(i)},
                                                        {ChatRole::kAssistant, std::string(size_t(i + 1), 'a')}})}}
                 .dump() +
             "\n";
  }
  write_text(path, lines);
  PrepareChatOptions o;
  o.tokenizer = dir / "tok";
  o.inputs = {path};
  o.out_dir = dir / "data";
  o.val_fraction = 0.2;
  o.threads = 2;
  const PrepareChatResult r = prepare_chat(o);
  CHECK(r.train_examples == 8);
  CHECK(r.val_examples == 2);
  CHECK(is_chat_dir(o.out_dir));
  CHECK(read_manifest(o.out_dir)["stop_ids"] == nlohmann::json::array({2, 0}));
  const Tokenizer tokenizer = Tokenizer::load(dir / "tok");
  const ChatEncoder encoder(tokenizer, "", {2, 0});
  const auto all = read_conversations(path);
  for (const char* split : {"train", "val"}) {
    const ChatExamples examples = load_chat_examples(o.out_dir, split);
    const size_t first = std::string(split) == "train" ? 0 : 8;
    REQUIRE(examples.size() == (first == 0 ? 8 : 2));
    for (int64_t i = 0; i < examples.size(); ++i) {
      const EncodedChat expected = encoder.encode(all[first + size_t(i)].messages);
      const auto begin = size_t(examples.offsets[size_t(i)]), end = size_t(examples.offsets[size_t(i) + 1]);
      CHECK(std::vector<int>(examples.tokens.begin() + long(begin), examples.tokens.begin() + long(end)) ==
            expected.tokens);
      CHECK(std::vector<uint8_t>(examples.scored.begin() + long(begin), examples.scored.begin() + long(end)) ==
            expected.scored);
    }
  }
  // A bad line anywhere: nothing is written.
  write_text(path, lines + R"({"messages": [{"role": "user", "content": "no answer"}]})" "\n");
  o.out_dir = dir / "data2";
  CHECK_THROWS_AS(prepare_chat(o), std::invalid_argument);
  CHECK_FALSE(fs::exists(o.out_dir));
}

TEST_CASE("chat task: labels only on answers, packed rows give the unpacked loss, long examples refused or cut",
          "[chat]") {
  TempDir dir;
  write_smollm2_tokenizer(dir.path / "tok");
  std::string lines;
  for (int i = 0; i < 6; ++i) {
    lines += nlohmann::json{{"prompt", "the cat " + std::string(size_t(i), 'c')},
                            {"completion", "cat " + std::string(size_t(6 - i), 'a')}}.dump() + "\n";
  }
  write_text(dir / "chat.jsonl", lines);
  PrepareChatOptions o;
  o.tokenizer = dir / "tok";
  o.inputs = {dir / "chat.jsonl"};
  o.out_dir = dir / "data";
  o.val_fraction = 0;
  prepare_chat(o);
  const Tokenizer tokenizer = Tokenizer::load(o.out_dir);
  const ChatExamples examples = load_chat_examples(o.out_dir, "train");
  int64_t longest = 0, scored = 0;
  for (int64_t i = 0; i < examples.size(); ++i) {
    longest = std::max(longest, examples.offsets[size_t(i) + 1] - examples.offsets[size_t(i)]);
    for (int64_t t = examples.offsets[size_t(i)] + 1; t < examples.offsets[size_t(i) + 1]; ++t) scored += examples.scored[size_t(t)];
  }

  ModelConfig model = tiny_gpt_config(tokenizer.vocab_size(), 32, 4, 64);
  model.position = Position::kRope;
  TrainConfig config;
  config.objective = Objective::kChat;
  config.data_dir = o.out_dir;
  config.batch_size = 6;
  auto unpacked = make_chat_task(model, config, tokenizer, {});
  config.packing = true;
  ChatFitSummary fit;
  auto packed = make_chat_task(model, config, tokenizer, {}, &fit);
  CHECK(fit.rows < 6);  // several examples share a row
  // Every training example once per epoch: batch 0 holds all six, in both layouts.
  const TrainBatch a = unpacked->train_batch(0, 0);
  const TrainBatch b = packed->train_batch(0, 0);
  CHECK(scored_targets(a) == scored);
  CHECK(a.input_ids.size(1) == longest - 1);
  torch::manual_seed(0);
  AnyModel gpt = build_model(model);
  gpt.module()->eval();
  torch::NoGradGuard no_grad;
  // The packed task's batch 0 repeats its rows to fill 6; its first fit.rows rows are the whole epoch.
  TrainBatch epoch;
  epoch.input_ids = b.input_ids.slice(0, 0, fit.rows);
  epoch.labels = b.labels.slice(0, 0, fit.rows);
  epoch.segment_ids = b.segment_ids.slice(0, 0, fit.rows);
  CHECK(scored_targets(epoch) == scored);
  CHECK(task_loss(gpt, epoch).item<double>() == Approx(task_loss(gpt, a).item<double>()).epsilon(1e-5));

  config.packing = false;
  config.max_length = longest - 3;
  CHECK_THROWS_WITH(make_chat_task(model, config, tokenizer, {}),
                    Catch::Contains("examples are longer than a row of " + std::to_string(longest - 2) + " tokens"));
  config.truncate = Truncation::kLeft;
  auto cut = make_chat_task(model, config, tokenizer, {});
  CHECK(cut->train_batch(0, 0).input_ids.size(1) == longest - 3);
}
