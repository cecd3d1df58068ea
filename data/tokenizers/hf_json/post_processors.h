// tokenizer.json "post_processor"s for one sequence (TemplateProcessing's "single", BertProcessing,
// RobertaProcessing, ByteLevel, Sequence): the ids add_special_tokens wraps around an encoding. Leaves out: pairs,
// type ids, offsets and attention masks (lmzoo cuts its own windows).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace lmzoo::hf {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual std::vector<int> process(std::vector<int> ids) const = 0;
};

// The post-processor J describes (FIELD_PATH names it in errors); nullptr for null.
std::unique_ptr<PostProcessor> make_post_processor(const nlohmann::json& j, const std::string& field_path);

}  // namespace lmzoo::hf
