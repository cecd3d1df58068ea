// Entry points of the lmzoo subcommands, one source file each; argv[0] is the subcommand name.
#pragma once

namespace lmzoo::cli {
int run_tokenizer(int argc, char** argv);
int run_prepare(int argc, char** argv);
int run_train(int argc, char** argv);
int run_eval(int argc, char** argv);
int run_generate(int argc, char** argv);
int run_export(int argc, char** argv);
int run_import(int argc, char** argv);
int run_merge_lora(int argc, char** argv);
int run_presets(int argc, char** argv);
int run_bench(int argc, char** argv);
int run_plot(int argc, char** argv);
}  // namespace lmzoo::cli
