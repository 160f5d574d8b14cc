// Command-line checks shared by the apps (apps/*): every mistake is a
// strata::invalid_argument that says what was wrong and ends with the app's usage line,
// and numbers are read whole (no trailing characters) and range-checked: whole numbers
// that do not fit 64 bits are refused (not clamped), and a whole number with one bound
// is at most INT_MAX, so that apps may keep it in an int; reals must be finite.
// apps::run_main is every app's main: messages, exit codes, and a failed stdout.
#pragma once

#include <strata/error.hpp>

#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <new>
#include <string>
#include <system_error>
#include <utility>

namespace apps {

/// A number as a message shows it: %g (std::to_string's %f wrote 1e300 as 301 digits).
inline std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

class args {
 public:
  /// `usage`: the app's usage text, shown after every error.
  explicit args(std::string usage) : usage_(std::move(usage)) {}

  /// True, after printing the usage on stdout, when `arg` asks for it (--help, -h): the
  /// app then exits 0 (a request for help is not a mistake).
  /// `print`: false on every rank but 0 of a distributed app, which prints it once.
  bool help(std::string const& arg, bool print = true) const {
    if (arg != "--help" && arg != "-h") return false;
    if (print) std::printf("%s\n", usage_.c_str());
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

  /// `text` (the value of `flag`) as a whole number of at least `least` and at most
  /// INT_MAX (larger values are refused, so that an app may keep it in an int).
  long long whole(std::string const& flag, char const* text, long long least = 1) const {
    long long v = 0;
    if (too_long(text))
      fail(flag + " '" + text + "' is too large; expected at most " + std::to_string(INT_MAX));
    if (!parse(text, v) || v < least)
      fail(flag + " '" + text + "' is not a " +
           (least == 1 ? std::string("positive whole number")
                       : "whole number >= " + std::to_string(least)));
    if (v > INT_MAX)
      fail(flag + " '" + text + "' is too large; expected at most " + std::to_string(INT_MAX));
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

  /// `text` as a finite number (nan, inf and values out of a double's range are refused).
  double real(std::string const& flag, std::string const& text) const {
    return real(flag, text.c_str());
  }
  double real(std::string const& flag, char const* text) const {
    double v = 0;
    std::size_t const n = std::strlen(text);
    char const* first = text + (n > 1 && *text == '+' && text[1] != '-' ? 1 : 0);
    auto [end, ec] = std::from_chars(first, text + n, v);
    if (n == 0 || end != text + n || (ec != std::errc{} && ec != std::errc::result_out_of_range))
      fail(flag + " '" + text + "' is not a number");
    if (ec == std::errc::result_out_of_range)
      fail(flag + " '" + text + "' is out of the range of a double");
    if (!std::isfinite(v)) fail(flag + " '" + text + "' is not a finite number");
    return v;
  }

  /// `text` as a finite number in [least, most].
  double real(std::string const& flag, std::string const& text, double least, double most) const {
    double const v = real(flag, text.c_str());
    if (!(v >= least && v <= most))
      fail(flag + " '" + text + "' is not a number in [" + number_text(least) + ", " +
           number_text(most) + "]");
    return v;
  }

  /// The position of `text` among `names`, or a failure naming them all.
  std::size_t one_of(std::string const& flag, std::string const& text,
                     std::initializer_list<char const*> names) const {
    std::size_t i = 0;
    std::string all;
    for (char const* n : names) {
      if (text == n) return i;
      all += (i++ ? ", " : "") + std::string(n);
    }
    fail(flag + " '" + text + "' is not one of " + all);
  }

  /// `text` as a finite number greater than `above`.
  double real_above(std::string const& flag, std::string const& text, double above) const {
    double const v = real(flag, text.c_str());
    if (!(v > above))
      fail(flag + " '" + text + "' is not a number greater than " + number_text(above));
    return v;
  }

 private:
  // The whole text, in decimal, with an optional sign; false for anything else, and for
  // values outside long long (std::from_chars reports them; strtoll clamped them silently).
  static bool parse(char const* text, long long& v) {
    std::size_t const n = std::strlen(text);
    char const* first = text;
    if (n > 1 && *first == '+' && first[1] != '-') ++first;
    auto [end, ec] = std::from_chars(first, text + n, v);
    return n > 0 && end == text + n && ec == std::errc{};
  }

  // Positive digits beyond long long's range (which parse() refuses).
  static bool too_long(char const* text) {
    std::size_t const n = std::strlen(text);
    char const* p = text + (n > 0 && *text == '+' ? 1 : 0);
    if (*p == '\0' || std::strspn(p, "0123456789") != std::strlen(p)) return false;
    long long v = 0;
    return std::from_chars(p, text + n, v).ec == std::errc::result_out_of_range;
  }

  std::string usage_;
};

namespace detail {

inline void say(char const* app, std::string const& what) {
  std::string const prefix = std::string(app) + ": ";
  std::fflush(stdout);
  std::fprintf(stderr, "%s%s\n", what.rfind(prefix, 0) == 0 ? "" : prefix.c_str(), what.c_str());
}

/// Prints the exception being handled (call inside a catch block).
inline void say_current(char const* app) {
  try {
    throw;
  } catch (std::bad_alloc const&) {
    say(app, "out of memory: the input is too large for this machine (std::bad_alloc)");
  } catch (std::exception const& e) {
    say(app, e.what());
  } catch (...) {
    say(app, "unknown exception");
  }
}

}  // namespace detail

/// Thrown by report_errors once it has printed the failure: run_main then exits 1
/// without a second message.
struct already_reported {};

/// For the distributed apps, inside the scope of their dist::runtime: runs `body()` and
/// prints an exception's message *before* the runtime ends, then rethrows it as
/// already_reported. A rank that fails alone makes ~dist::runtime end the job with
/// MPI_Abort after a grace period (strata/dist/runtime.hpp), so a message printed after
/// the runtime's end would never appear.
template <class Body>
int report_errors(char const* app, Body&& body) {
  try {
    return body();
  } catch (already_reported const&) {
    throw;
  } catch (...) {
    detail::say_current(app);
    throw already_reported{};
  }
}

/// Every app's main: runs `body` and returns its exit code. An exception becomes
/// "app: what" on stderr and exit 1 (messages that already begin with "app: " keep one
/// prefix; running out of memory says so). Output to stdout is buffered, so a failed write
/// (a full disk, a closed pipe) shows only at the flush: stdout is flushed here and a
/// failure is an error, exit 1, rather than a silent exit 0.
template <class Body>
int run_main(char const* app, int argc, char** argv, Body&& body) {
  int rc = 1;
  try {
    rc = body(argc, argv);
  } catch (already_reported const&) {
    rc = 1;
  } catch (...) {
    detail::say_current(app);
    rc = 1;
  }
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "%s: error: cannot write the output: %s\n", app,
                 errno != 0 ? std::strerror(errno) : "write error");
    if (rc == 0) rc = 1;
  }
  return rc;
}

}  // namespace apps
