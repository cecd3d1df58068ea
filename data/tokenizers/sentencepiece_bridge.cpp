// Loads liblmzoo_spm.so with dlopen(RTLD_LOCAL) where an installed package says it lies, next to the executable,
// at the build-time path, beside an installed lmzoo binary, or through the library search path, and forwards to its entry points. RTLD_DEEPBIND is added only where it is needed: a
// libsentencepiece with its own protobuf in a process that already holds a shared libprotobuf (Debian 12).
#include "data/tokenizers/sentencepiece_bridge.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstring>

#include <filesystem>
#include <mutex>
#include <stdexcept>

#include "lmzoo_build_config.h"
#include "lmzoo_build_paths.h"
#include "lmzoo_install_paths.h"

namespace lmzoo {

namespace {

struct Bridge {
  SpmNewProcessorFn new_processor = nullptr;
  SpmTrainFn train = nullptr;
};

// Set before main() by a program built against the installed package (lmzoo-config.cmake); empty otherwise.
std::string& installed_bridge_path() {
  static std::string path;
  return path;
}

std::string executable_dir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "" : exe.parent_path().string();
}

// Whether a shared libprotobuf is loaded into this process (Debian's LibTorch links one; pip torch's is static and
// hidden).
bool process_has_shared_protobuf() {
  bool found = false;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        const char* name = info->dlpi_name;
        if (name != nullptr && std::strstr(name, "/libprotobuf") != nullptr) *static_cast<bool*>(data) = true;
        return 0;
      },
      &found);
  return found;
}

int bridge_dlopen_flags() {
  const bool isolate = LMZOO_SPM_EMBEDS_PROTOBUF && process_has_shared_protobuf();
  return RTLD_NOW | RTLD_LOCAL | (isolate ? RTLD_DEEPBIND : 0);
}

const Bridge& bridge() {
  static Bridge loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string name = "liblmzoo_spm.so";
    std::string errors;
    void* handle = nullptr;
    for (const std::string& candidate :
         {installed_bridge_path(), executable_dir() + "/" + name, std::string(LMZOO_SPM_BRIDGE_PATH),
          executable_dir() + "/../" + LMZOO_INSTALL_LIBDIR + "/" + name, name}) {
      if (candidate.empty() || (candidate != name && !std::filesystem::exists(candidate))) continue;
      handle = dlopen(candidate.c_str(), bridge_dlopen_flags());
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

extern "C" void lmzoo_use_sentencepiece_bridge_at(const char* path) { lmzoo::installed_bridge_path() = path; }
