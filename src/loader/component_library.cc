// Loading component libraries: dlopen, check the entry point, create.
#include "tesscpp/internal/loader/component_library.h"

#include <dlfcn.h>

#include <exception>

#include "tesscpp/component.h"

namespace tesscpp {

Result<std::shared_ptr<const ComponentLibrary>> ComponentLibrary::Open(const std::string& path) {
  std::shared_ptr<ComponentLibrary> library(new ComponentLibrary());
  library->path_ = path;
  // RTLD_LOCAL keeps two components' symbols apart; RTLD_NOW reports missing
  // symbols here rather than at the first call.
  library->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library->handle_ == nullptr) {
    return Status::NotFound("cannot load component library '", path, "': ", dlerror());
  }
  auto entry_fn =
      reinterpret_cast<TesscppComponentEntryFn>(dlsym(library->handle_, TESSCPP_COMPONENT_ENTRY_NAME));
  if (entry_fn == nullptr) {
    return Status::NotFound("'", path, "' is not a tesscpp component library: no ",
                            TESSCPP_COMPONENT_ENTRY_NAME, " (did it use TESSCPP_COMPONENT?)");
  }
  const TesscppComponentEntryV1* entry = entry_fn();
  if (entry == nullptr || entry->abi_version != TESSCPP_COMPONENT_ABI_VERSION ||
      entry->struct_size < sizeof(TesscppComponentEntryV1)) {
    return Status::InvalidArgument("component library '", path, "' has component ABI version ",
                                   entry == nullptr ? 0 : entry->abi_version, "; this tesscpp loads version ",
                                   TESSCPP_COMPONENT_ABI_VERSION);
  }
  if (std::string_view(entry->build_signature) != TESSCPP_BUILD_SIGNATURE) {
    return Status::InvalidArgument("component library '", path, "' was built as '", entry->build_signature,
                                   "' but this tesscpp is '", TESSCPP_BUILD_SIGNATURE,
                                   "'; rebuild the component against this tesscpp");
  }
  try {
    library->component_ = static_cast<Component*>(entry->create());
  } catch (const std::exception& e) {
    return Status::Internal("component library '", path, "' failed to create its component: ", e.what());
  } catch (...) {
    return Status::Internal("component library '", path, "' failed to create its component");
  }
  library->destroy_ = entry->destroy;
  if (!library->component_->apply()) {
    return Status::InvalidArgument("component '", library->component_->name(), "' in '", path,
                                   "' defines no apply endpoint");
  }
  return std::shared_ptr<const ComponentLibrary>(std::move(library));
}

ComponentLibrary::~ComponentLibrary() {
  if (component_ != nullptr) destroy_(component_);
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace tesscpp
