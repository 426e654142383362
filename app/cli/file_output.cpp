// Files tessera-cli writes whole or not at all (see commands.hpp, write_file_whole).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "commands.hpp"

namespace tessera::cli {

void write_file_whole(const std::string& path, const std::string& text, bool executable) {
  namespace fs = std::filesystem;
  const std::string partial = path + ".part." + std::to_string(::getpid());
  const auto fail = [&](int error) {
    std::error_code ignored;
    fs::remove(partial, ignored);
    throw UsageError("cannot write " + path + ": " + std::strerror(error != 0 ? error : EIO));
  };
  {
    errno = 0;
    std::ofstream out(partial, std::ios::binary);
    if (!out) fail(errno);
    out << text;
    out.flush();
    if (!out) fail(errno);
  }
  std::error_code ec;
  if (executable) fs::permissions(partial, fs::perms::owner_exec, fs::perm_options::add, ec);
  if (!ec) fs::rename(partial, path, ec);
  if (ec) fail(ec.value());
}

}  // namespace tessera::cli
