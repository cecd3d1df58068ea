// Closed sets as enum classes: each enum has one table (EnumTable<E>) giving every value its CLI/JSON name and a
// help phrase; parsing, printing, help text and JSON go through it. In data/, the lowest layer, so every layer
// can use it. Leaves out: the enums themselves (models/model_enums.h, train/train_enums.h, beside their users).
#pragma once
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace lmzoo {

template <typename E>
struct EnumEntry {
  E value;
  const char* name;  // as the CLI and config files spell it
  const char* help;  // a short phrase for --help
};

// Specialised once per enum with `static constexpr const char* what` (the field's name in messages) and
// `static constexpr EnumEntry<E> entries[]` listing every value once.
template <typename E>
struct EnumTable;

template <typename E>
std::string enum_name(E value) {
  for (const auto& entry : EnumTable<E>::entries) {
    if (entry.value == value) return entry.name;
  }
  throw std::logic_error(std::string(EnumTable<E>::what) + " value outside its table");
}

// "a|b|c" (or with another separator): the valid names in table order.
template <typename E>
std::string enum_choices(const std::string& separator = "|") {
  std::string out;
  for (const auto& entry : EnumTable<E>::entries) out += (out.empty() ? "" : separator) + std::string(entry.name);
  return out;
}

// "a (help), b (help)": for option descriptions.
template <typename E>
std::string enum_help() {
  std::string out;
  for (const auto& entry : EnumTable<E>::entries) {
    out += (out.empty() ? "" : ", ") + std::string(entry.name) + " (" + entry.help + ")";
  }
  return out;
}

template <typename E>
std::optional<E> find_enum(const std::string& name) {
  for (const auto& entry : EnumTable<E>::entries) {
    if (name == entry.name) return entry.value;
  }
  return std::nullopt;
}

// Throws std::invalid_argument "WHAT 'NAME' is not one of a|b|c".
template <typename E>
E parse_enum(const std::string& name) {
  if (auto value = find_enum<E>(name)) return *value;
  throw std::invalid_argument(std::string(EnumTable<E>::what) + " '" + name + "' is not one of " + enum_choices<E>());
}

// Streams the table name (test failure messages, logs).
template <typename E, typename = decltype(EnumTable<E>::entries)>
std::ostream& operator<<(std::ostream& out, E value) {
  return out << enum_name(value);
}

}  // namespace lmzoo

// JSON as the table's names; an unknown name throws std::invalid_argument naming the valid ones. Use at namespace
// lmzoo scope after the EnumTable specialisation.
#define LMZOO_ENUM_JSON(E)                                                                              \
  inline void to_json(nlohmann::json& j, E value) { j = ::lmzoo::enum_name(value); }                   \
  inline void from_json(const nlohmann::json& j, E& value) {                                           \
    if (!j.is_string()) {                                                                              \
      throw std::invalid_argument(std::string(::lmzoo::EnumTable<E>::what) + " must be a string, one of " + \
                                  ::lmzoo::enum_choices<E>());                                         \
    }                                                                                                  \
    value = ::lmzoo::parse_enum<E>(j.get<std::string>());                                              \
  }
