// Loads liblmzoo_spm.so with dlopen(RTLD_LOCAL | RTLD_DEEPBIND) next to the executable, at the
// build-time path, or through the library search path, and forwards to its entry points.
#include "data/sentencepiece_bridge.h"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <stdexcept>

#include "lmzoo_build_paths.h"

namespace lmzoo {

namespace {

struct Bridge {
  SpmNewProcessorFn new_processor = nullptr;
  SpmTrainFn train = nullptr;
};

std::string executable_dir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "" : exe.parent_path().string();
}

const Bridge& bridge() {
  static Bridge loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string name = "liblmzoo_spm.so";
    std::string errors;
    void* handle = nullptr;
    for (const std::string& candidate :
         {executable_dir() + "/" + name, std::string(LMZOO_SPM_BRIDGE_PATH), executable_dir() + "/../lib/" + name, name}) {
      if (candidate.empty() || (candidate != name && !std::filesystem::exists(candidate))) continue;
      handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
      if (handle) break;
      errors += std::string(" ") + dlerror();
    }
    if (!handle) throw std::runtime_error("cannot load the SentencePiece bridge " + name + errors);
    loaded.new_processor = reinterpret_cast<SpmNewProcessorFn>(dlsym(handle, "lmzoo_spm_new_processor"));
    loaded.train = reinterpret_cast<SpmTrainFn>(dlsym(handle, "lmzoo_spm_train"));
    if (!loaded.new_processor || !loaded.train) throw std::runtime_error(name + " lacks its entry points");
  });
  return loaded;
}

}  // namespace

std::unique_ptr<SpmProcessor> new_spm_processor() { return std::unique_ptr<SpmProcessor>(bridge().new_processor()); }

std::string spm_train(const SpmArgs& args, const std::vector<std::string>& sentences, std::string* model_proto) {
  return bridge().train(args, sentences, model_proto);
}

}  // namespace lmzoo
