#include "press/replay_replies.h"

#include <fstream>
#include <iterator>
#include <sstream>

#include "press/replay_set.h"

namespace arenarpc::press {
namespace {

constexpr const char* kMagic = "arenarpc_replies";
constexpr int kVersion = 1;

}  // namespace

bool SaveReplies(ReplaySet& set, const std::string& path, std::string* error) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    *error = "--replay_replies_out: cannot write " + path;
    return false;
  }
  out << kMagic << " " << kVersion << " " << set.calls().size() << "\n";
  for (const ReplayCall& call : set.calls()) {
    out << (call.has_first_reply ? 1 : 0) << " " << call.first_reply.size() << " "
        << call.method_name << "\n";
    out.write(call.first_reply.data(), static_cast<std::streamsize>(call.first_reply.size()));
  }
  out.flush();
  if (!out) {
    *error = "--replay_replies_out: writing " + path + " failed";
    return false;
  }
  return true;
}

bool LoadReplies(const std::string& path, ReplaySet& set, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "--replay_replies_in: cannot read " + path;
    return false;
  }
  const std::string where = "--replay_replies_in: " + path + ": ";
  std::string line;
  std::getline(in, line);
  std::istringstream header(line);
  std::string magic;
  int version = 0;
  size_t records = 0;
  if (!(header >> magic >> version >> records) || magic != kMagic || version != kVersion) {
    *error = where + "not a replies file (written by --replay_replies_out)";
    return false;
  }
  if (records != set.calls().size()) {
    *error = where + "holds the replies to " + std::to_string(records) + " records, the dump has " +
             std::to_string(set.calls().size()) + " (replies of another dump?)";
    return false;
  }
  for (size_t i = 0; i < records; ++i) {
    ReplayCall& call = set.calls()[i];
    int has_reply = 0;
    size_t size = 0;
    std::string method;
    if (!std::getline(in, line) || !(std::istringstream(line) >> has_reply >> size >> method)) {
      *error = where + "record " + std::to_string(i) + ": damaged entry";
      return false;
    }
    if (method != call.method_name) {
      *error = where + "record " + std::to_string(i) + " is a reply of " + method +
               ", the dump's record calls " + call.method_name + " (replies of another dump?)";
      return false;
    }
    call.first_reply.resize(size);
    if (!in.read(call.first_reply.data(), static_cast<std::streamsize>(size))) {
      *error = where + "record " + std::to_string(i) + ": cut short";
      return false;
    }
    call.has_first_reply = has_reply != 0;
  }
  return true;
}

}  // namespace arenarpc::press
