// The Hugging Face family registry (models/hf/): every class in exactly one family, model_type lookups both ways,
// and the list of supported types a refusal names.
#include <map>

#include <nlohmann/json.hpp>

#include "models/hf/family.h"
#include "tests/catch_compat.h"
#include "tests/hf_round_trip.h"

using namespace lmzoo;
using namespace lmzoo::test;

TEST_CASE("every Hugging Face class belongs to exactly one registered family", "[hf]") {
  std::map<HfArchitecture, int> owners;
  for (const hf::HfFamily* family : hf::hf_families()) {
    REQUIRE_FALSE(family->classes.empty());
    CHECK(hf::hf_family_named(family->model_type) == family);
    for (HfArchitecture a : family->classes) ++owners[a];
  }
  for (const auto& entry : EnumTable<HfArchitecture>::entries) {
    INFO(entry.name);
    CHECK(owners[entry.value] == 1);
    CHECK(&hf::hf_family_of(entry.value) != nullptr);
  }
  CHECK(owners.size() == std::size(EnumTable<HfArchitecture>::entries));
}

TEST_CASE("a config.json naming only a model_type reads as that family's first class", "[hf]") {
  for (const hf::HfFamily* family : hf::hf_families()) {
    INFO(family->model_type);
    // The type is known, so the family's reader runs and names the first field it lacks.
    CHECK(refusal({{"model_type", family->model_type}}) == "config.json has no 'vocab_size'");
  }
  const std::string unknown = refusal({{"model_type", "gemma"}});
  CHECK(unknown.find("model_type 'gemma' is not supported (gpt2, bert, t5, llama, qwen2, mistral, gpt_neox, roberta, "
                     "distilbert, phi3)") != std::string::npos);
}
