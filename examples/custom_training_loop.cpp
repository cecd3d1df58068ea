// A training loop of the program's own on lmzoo's parts: a SentencePiece tokenizer trained on a text file, a small
// GPT built from a preset, lmzoo's next-token objective (task_loss) stepped by LibTorch's AdamW, and a checkpoint
// that lmzoo's CLI and Session load. Prints one JSON line per step ({"step","loss"}), then a summary line.
// usage: custom_training_loop TEXT_FILE OUT_DIR [STEPS]
#include <cstdlib>
#include <iostream>

#include <lmzoo/lmzoo.h>

namespace {

// BATCH windows of LENGTH tokens at seeded random offsets, with the next token of each position as its label.
lmzoo::TrainBatch next_token_batch(const torch::Tensor& tokens, int64_t batch, int64_t length) {
  const auto offsets = torch::randint(tokens.size(0) - length - 1, {batch}, torch::kLong);  // (B,)
  const auto positions = offsets.unsqueeze(1) + torch::arange(length).unsqueeze(0);      // (B, T)
  lmzoo::TrainBatch out;
  out.input_ids = tokens.index({positions});     // (B, T)
  out.labels = tokens.index({positions + 1});    // (B, T): the token after each position
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::cerr << "usage: custom_training_loop TEXT_FILE OUT_DIR [STEPS]\n";
    return 2;
  }
  const std::string text_file = argv[1], out_dir = argv[2];
  const int64_t steps = argc == 4 ? std::atoll(argv[3]) : 150;
  try {
    lmzoo::TokenizerTrainOptions tokenizer_options;
    tokenizer_options.inputs = {text_file};
    tokenizer_options.vocab_size = 512;
    tokenizer_options.out_dir = out_dir + "/tokenizer";
    lmzoo::Tokenizer::train(tokenizer_options);
    const lmzoo::Tokenizer tokenizer = lmzoo::Tokenizer::load(tokenizer_options.out_dir);
    const std::vector<int> ids = tokenizer.encode(lmzoo::read_file_bytes(text_file));
    const torch::Tensor tokens = torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kLong);

    lmzoo::ModelConfig config = lmzoo::find_preset("gpt-nano").config;
    config.vocab_size = tokenizer.vocab_size();
    config.n_layer = 2;
    config.max_seq_len = 32;
    torch::manual_seed(0);
    lmzoo::AnyModel model = lmzoo::build_model(config);
    model.module()->train();
    torch::optim::AdamW optimizer(model.module()->parameters(), torch::optim::AdamWOptions(3e-3));

    double first_loss = 0, last_loss = 0;
    for (int64_t step = 1; step <= steps; ++step) {
      const lmzoo::TrainBatch batch = next_token_batch(tokens, 8, config.max_seq_len);
      optimizer.zero_grad();
      torch::Tensor loss = lmzoo::task_loss(model, batch);
      loss.backward();
      optimizer.step();
      last_loss = loss.item<double>();
      if (step == 1) first_loss = last_loss;
      std::cout << nlohmann::json({{"step", step}, {"loss", last_loss}}).dump() << "\n";
    }

    lmzoo::CheckpointInfo info;
    info.model = config;
    info.train.steps = steps;
    info.state.step = steps;
    info.tokenizer_model = tokenizer.serialized();
    lmzoo::save_checkpoint(out_dir + "/model", model.module(), nullptr, info);
    std::cout << nlohmann::json({{"first_loss", first_loss}, {"last_loss", last_loss},
                                 {"checkpoint", out_dir + "/model"}}).dump()
              << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "custom_training_loop: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
