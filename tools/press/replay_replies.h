#pragma once
// Replies files (--replay_replies_out / --replay_replies_in): the reply --replay_check's first
// pass got for every record of a dump, kept in a file so that a later run — against another
// server, or the same server in another memory strategy (bench/memlab) — compares its replies
// with those instead of with a first pass of its own.
//
// Format: a line "arenarpc_replies 1 <records>", then per record a line
// "<0|1 has a reply> <reply bytes> <pkg.Service.Method>" followed by the reply's bytes.

#include <string>

namespace arenarpc::press {

class ReplaySet;

// Writes the first replies of every call of `set`. false with *error on an I/O failure.
bool SaveReplies(ReplaySet& set, const std::string& path, std::string* error);

// Sets every call's first reply from `path`. The file must hold as many records as `set`, for
// the same methods in the same order (the same dump); false with *error saying where it differs.
bool LoadReplies(const std::string& path, ReplaySet& set, std::string* error);

}  // namespace arenarpc::press
