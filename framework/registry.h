// A name -> entry table whose built-in entries are added on first use: layer types, task heads and tasks are each one
// of these, so adding one is one registration line.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace hr {

template <class Entry>
class Registry {
 public:
  explicit Registry(const std::function<void(Registry&)>& builtins) { builtins(*this); }
  void add(const std::string& name, Entry entry) { table_[name] = std::move(entry); }
  const Entry* find(const std::string& name) const {
    auto it = table_.find(name);
    return it == table_.end() ? nullptr : &it->second;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [name, e] : table_) out.push_back(name);
    return out;
  }
  std::string known() const {  // "a, b, c", for error messages
    std::string s;
    for (const auto& [name, e] : table_) s += (s.empty() ? "" : ", ") + name;
    return s;
  }

 private:
  std::map<std::string, Entry> table_;
};

}  // namespace hr
