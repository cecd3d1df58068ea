// Loads a checkpoint of any family, scores a text file with it and continues a prompt greedily: lmzoo's Session,
// evaluate() and generate(). Prints the evaluation's JSON line, then the prompt and its continuation.
// usage: load_and_generate CHECKPOINT TEXT_FILE PROMPT [MAX_NEW_TOKENS]
#include <cstdlib>
#include <iostream>

#include <lmzoo/lmzoo.h>

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::cerr << "usage: load_and_generate CHECKPOINT TEXT_FILE PROMPT [MAX_NEW_TOKENS]\n";
    return 2;
  }
  try {
    lmzoo::Session session = lmzoo::Session::open(argv[1], "auto");

    lmzoo::EvalRequest eval;
    eval.text_file = argv[2];
    std::cout << lmzoo::evaluate(session, eval).to_json().dump() << "\n";

    lmzoo::GenerateRequest request;
    request.prompt = argv[3];
    request.sampling.temperature = 0;  // greedy
    request.sampling.max_new_tokens = argc == 5 ? std::atoll(argv[4]) : 20;
    std::cout << lmzoo::generate(session, request).texts.front() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "load_and_generate: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
