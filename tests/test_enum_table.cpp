// Tests of the closed-set tables (base/enum_table.h): every enum's names are unique, round-trip through
// parse_enum and JSON, keep the spellings that config files already hold, and a bad name lists the valid ones.
#include "tests/catch_compat.h"

#include <set>

#include "data/tokenizers/hf_json/split_pattern.h"
#include "data/tokenizers/tokenizer.h"
#include "models/config.h"
#include "models/registry.h"
#include "train/train_config.h"

using namespace lmzoo;

namespace {

// Each value once, each name once; name -> value -> name; a stranger is refused naming the table's names.
template <typename E>
void check_table(const std::string& expected_choices) {
  std::set<std::string> names;
  std::set<int> values;
  for (const auto& entry : EnumTable<E>::entries) {
    INFO(entry.name);
    CHECK(names.insert(entry.name).second);
    CHECK(values.insert(int(entry.value)).second);
    CHECK(parse_enum<E>(entry.name) == entry.value);
    CHECK(enum_name(entry.value) == entry.name);
    CHECK(std::string(entry.help).size() > 0);
  }
  CHECK(enum_choices<E>() == expected_choices);
  CHECK_FALSE(find_enum<E>("no-such-name").has_value());
  CHECK_THROWS_WITH(parse_enum<E>("no-such-name"), std::string(EnumTable<E>::what) +
                                                         " 'no-such-name' is not one of " + expected_choices);
}

template <typename E>
void check_json(const std::string& expected_choices) {
  check_table<E>(expected_choices);
  for (const auto& entry : EnumTable<E>::entries) {
    const nlohmann::json j = entry.value;
    CHECK(j == nlohmann::json(entry.name));
    CHECK(j.get<E>() == entry.value);
  }
  CHECK_THROWS_WITH(nlohmann::json(7).get<E>(),
                    std::string(EnumTable<E>::what) + " must be a string, one of " + expected_choices);
}

}  // namespace

TEST_CASE("every closed set has one table whose names round-trip and list themselves", "[enums]") {
  // The spellings are those config.json and the CLI have always used (older checkpoints hold them).
  check_json<Arch>("gpt|bert|t5");
  check_json<Position>("learned|sinusoidal|rope|alibi|relative|none");
  check_json<NormKind>("layernorm|rmsnorm");
  check_json<NormPosition>("pre|post");
  check_json<Activation>("relu|gelu|gelu-tanh|silu|geglu|swiglu");
  check_json<InitScheme>("gpt2|bert|t5");
  check_json<Objective>("causal|mlm|classify|span|prefix|seq2seq|chat");
  check_json<Precision>("fp32|bf16|fp16");
  check_json<Schedule>("cosine|linear|constant");
  check_json<AttentionKernel>("default|fastest|flash|efficient|cudnn|math");
  check_table<TokenizerType>("bpe|unigram|char");
  check_json<TokenizerKind>("sentencepiece|gpt2-bpe|wordpiece|tokenizer-json");  // serialized tokenizer blobs hold them
  check_table<hf::SplitBehavior>("Removed|Isolated|MergedWithPrevious|MergedWithNext|Contiguous");  // tokenizer.json spellings
}

TEST_CASE("a config file written with strings reads into the enums and back to the same strings", "[enums]") {
  const nlohmann::json stored = {{"format_version", 3}, {"arch", "gpt"},           {"vocab_size", 99},
                                 {"position", "rope"},  {"norm", "rmsnorm"},      {"norm_position", "post"},
                                 {"activation", "gelu-tanh"}, {"init", "bert"},   {"d_model", 32},
                                 {"n_head", 4}};
  const ModelConfig c = model_config_from_json(stored);
  CHECK(c.arch == Arch::kGpt);
  CHECK(c.position == Position::kRope);
  CHECK(c.norm == NormKind::kRmsNorm);
  CHECK(c.norm_position == NormPosition::kPost);
  CHECK(c.activation == Activation::kGeluTanh);
  CHECK(c.init == InitScheme::kBert);
  const nlohmann::json written = c;
  for (const char* key : {"arch", "position", "norm", "norm_position", "activation", "init"}) {
    CHECK(written.at(key) == stored.at(key));
  }
  nlohmann::json bad = stored;
  bad["norm"] = "batchnorm";
  CHECK_THROWS_WITH(model_config_from_json(bad), "model config: norm 'batchnorm' is not one of layernorm|rmsnorm");
  TrainConfig t;
  t.objective = Objective::kSpan;
  t.precision = Precision::kBf16;
  t.schedule = Schedule::kLinear;
  const nlohmann::json train_json = t;
  CHECK(train_json.at("objective") == "span");
  CHECK(train_json.at("precision") == "bf16");
  CHECK(train_json.at("schedule") == "linear");
  CHECK(train_json.get<TrainConfig>().schedule == Schedule::kLinear);
}
