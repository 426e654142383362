// Where the history lives: --db, else $TESSERA_DB, else $XDG_DATA_HOME/tessera/history.sqlite, else
// ~/.local/share/tessera/history.sqlite.
#pragma once

#include <string>

namespace tessera::store {

/// $TESSERA_DB, else $XDG_DATA_HOME/tessera/history.sqlite (when XDG_DATA_HOME is an absolute
/// path), else $HOME/.local/share/tessera/history.sqlite. Throws StoreError(io) when none is set.
std::string default_history_path();
/// `explicit_path` (from --db) when not empty, else default_history_path().
std::string resolve_history_path(const std::string& explicit_path);
/// The file `history_path` names, however the path reaches it (a symlink, "..", a relative path):
/// what tells whether two paths are one history.
std::string canonical_history_path(const std::string& history_path);
/// Creates the directories that will hold the history file; throws StoreError(io) naming them.
void ensure_parent_directory(const std::string& history_path);

}  // namespace tessera::store
