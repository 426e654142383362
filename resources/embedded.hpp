// Access to the resource files compiled into the binaries (see cmake/EmbedFiles.cmake).
#pragma once

#include <string_view>
#include <utility>
#include <vector>

namespace tessera::resources {

/// (file name, JSON text) of every file in resources/presets/models/.
std::vector<std::pair<std::string_view, std::string_view>> model_preset_files();
/// (file name, JSON text) of every file in resources/presets/gpus/.
std::vector<std::pair<std::string_view, std::string_view>> gpu_preset_files();

}  // namespace tessera::resources
