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
/// Why a command that only reads cannot open the history at `path` ("" when it can): no file there,
/// a directory, no regular file, or an empty file. Opened, an empty file became a history (runs list
/// wrote 160 KiB into it) and /dev/null failed on commit: a reader leaves such a file as it is.
std::string read_only_history_problem(const std::string& path);
/// Why no command, reading or writing, can open `path` as a history ("" when one may): a directory, or
/// a file that is no regular file (/dev/null: SQLite created /dev/null-journal, then said "disk I/O error").
std::string non_regular_history_problem(const std::string& path);
/// Creates the directories that will hold the history file; throws StoreError(io) naming them.
void ensure_parent_directory(const std::string& history_path);

}  // namespace tessera::store
