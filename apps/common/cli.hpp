// Command-line checks shared by the apps (apps/*): every mistake is a
// strata::invalid_argument that says what was wrong and ends with the app's usage line,
// and numbers are read whole (no trailing characters) and range-checked.
#pragma once

#include <strata/error.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

namespace apps {

class args {
 public:
  /// `usage`: the app's usage text, shown after every error.
  explicit args(std::string usage) : usage_(std::move(usage)) {}

  /// True, after printing the usage on stdout, when `arg` asks for it (--help, -h): the
  /// app then exits 0 (a request for help is not a mistake).
  bool help(std::string const& arg) const {
    if (arg != "--help" && arg != "-h") return false;
    std::printf("%s\n", usage_.c_str());
    return true;
  }

  /// For apps without options of their own (Strata's --strata-* flags are taken by the
  /// runtime first): true after the usage for --help; any other argument is a mistake.
  bool no_options(int argc, char** argv) const {
    for (int i = 1; i < argc; ++i) {
      if (help(argv[i])) return true;
      fail("unknown argument '" + std::string(argv[i]) + "'");
    }
    return false;
  }

  /// Throws strata::invalid_argument: `why`, then the usage text.
  [[noreturn]] void fail(std::string const& why) const {
    throw strata::invalid_argument(why + "\n" + usage_);
  }

  /// `text` (the value of `flag`) as a whole number of at least `least`.
  long long whole(std::string const& flag, char const* text, long long least = 1) const {
    long long v = 0;
    if (!parse(text, v) || v < least)
      fail(flag + " '" + text + "' is not a " +
           (least == 1 ? std::string("positive whole number")
                       : "whole number >= " + std::to_string(least)));
    return v;
  }

  /// `text` as a whole number in [least, most].
  long long whole(std::string const& flag, char const* text, long long least,
                  long long most) const {
    long long v = 0;
    if (!parse(text, v) || v < least || v > most)
      fail(flag + " '" + text + "' is not a whole number in [" + std::to_string(least) + ", " +
           std::to_string(most) + "]");
    return v;
  }

  long long whole(std::string const& flag, std::string const& text, long long least = 1) const {
    return whole(flag, text.c_str(), least);
  }
  long long whole(std::string const& flag, std::string const& text, long long least,
                  long long most) const {
    return whole(flag, text.c_str(), least, most);
  }

  /// `text` as a number.
  double real(std::string const& flag, std::string const& text) const {
    return real(flag, text.c_str());
  }
  double real(std::string const& flag, char const* text) const {
    char* end = nullptr;
    double v = std::strtod(text, &end);
    if (*text == '\0' || *end != '\0') fail(flag + " '" + text + "' is not a number");
    return v;
  }

 private:
  static bool parse(char const* text, long long& v) {
    char* end = nullptr;
    v = std::strtoll(text, &end, 10);
    return *text != '\0' && *end == '\0';
  }

  std::string usage_;
};

}  // namespace apps
