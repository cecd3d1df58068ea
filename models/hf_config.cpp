// Hugging Face config.json <-> ModelConfig through the family registry (models/hf/): the family named by the file
// reads it, refusing any field value that would make lmzoo compute something else than transformers; the family
// whose switches a model has writes it.
#include "models/hf_config.h"

#include <fstream>
#include <sstream>

#include "models/hf/family.h"

namespace lmzoo {

using nlohmann::json;

json read_hf_json_file(const std::string& path, const std::string& missing) {
  std::ifstream in(path);
  if (!in) throw HfFormatError(missing);
  std::stringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::exception&) {
    throw HfFormatError(path + " is not valid JSON");
  }
}

namespace {

// The class config.json names: its "architectures" entry, else the model_type's usual class.
HfArchitecture architecture_of(const hf::HfFields& f, const std::string& model_type) {
  if (f.has("architectures")) {
    const json& list = f.raw().at("architectures");
    if (!list.is_array() || list.size() != 1 || !list[0].is_string()) {
      throw HfFormatError("config.json: 'architectures' must list one class, got " + list.dump());
    }
    try {
      return parse_enum<HfArchitecture>(list[0].get<std::string>());
    } catch (const std::invalid_argument& e) {
      throw HfFormatError(std::string("config.json: ") + e.what());
    }
  }
  if (model_type.empty()) throw HfFormatError("config.json names neither 'architectures' nor 'model_type'");
  const hf::HfFamily* family = hf::hf_family_named(model_type);
  if (!family) {
    throw HfFormatError("config.json: model_type '" + model_type + "' is not supported (" +
                        hf::supported_model_types() + ")");
  }
  return family->classes.front();
}

HfModelDescription read_model_config(const json& hf_config) {
  if (!hf_config.is_object()) throw HfFormatError("config.json is not a JSON object");
  const hf::HfFields f(hf_config);
  const std::string model_type = f.text("model_type", "");
  HfModelDescription d{architecture_of(f, model_type), ModelConfig{}, {}};
  const hf::HfFamily& family = hf::hf_family_of(d.architecture);
  if (!model_type.empty() && model_type != family.model_type) {
    throw HfFormatError("config.json: model_type '" + model_type + "' does not match architecture " +
                        enum_name(d.architecture));
  }
  family.read(f, d);
  try {
    d.config.validate();
  } catch (const std::invalid_argument& e) {
    throw HfFormatError(std::string("config.json describes a model lmzoo cannot build: ") + e.what());
  }
  return d;
}

}  // namespace

HfModelDescription model_config_from_hf(const json& hf_config) {
  try {
    return read_model_config(hf_config);
  } catch (const HfConfigError&) {
    throw;
  } catch (const HfFormatError& e) {
    throw HfConfigError(e.what());
  }
}

HfArchitecture hf_architecture_of(const ModelConfig& c) {
  for (const hf::HfFamily* family : hf::hf_families()) {
    if (auto twin = family->twin(c)) return *twin;
  }
  throw std::logic_error("no Hugging Face family is asked about a " + enum_name(c.arch) + " model");
}

json hf_config_from_model(const ModelConfig& c, HfArchitecture a, const HfTokenIds& ids) {
  const hf::HfFamily& family = hf::hf_family_of(a);
  json j = {{"architectures", {enum_name(a)}},
            {"model_type", family.model_type},
            {"vocab_size", c.padded_vocab()},
            {"torch_dtype", "float32"},  // 4.x's name
            {"dtype", "float32"},        // 5.x's
            {"tie_word_embeddings", c.tie_embeddings}};
  if (ids.pad >= 0) j["pad_token_id"] = ids.pad;
  if (ids.bos >= 0) j["bos_token_id"] = ids.bos;
  if (ids.eos >= 0) j["eos_token_id"] = ids.eos;
  j.update(family.write(c, a, ids));
  return j;
}

int64_t vocab_multiple_for(int64_t tokens, int64_t rows) {
  if (tokens > rows) {
    throw HfFormatError("the tokenizer has " + std::to_string(tokens) + " tokens but the model's embeddings only " +
                        std::to_string(rows) + " rows");
  }
  for (int64_t m = 1; m <= rows; m *= 2) {
    if ((tokens + m - 1) / m * m == rows) return m;
  }
  return rows;
}

}  // namespace lmzoo
