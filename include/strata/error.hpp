// One exception hierarchy for all of Strata. Every message says what was wrong and what
// was expected (DESIGN.md, "Errors, safety, observability").
#pragma once

#include <stdexcept>
#include <string>

namespace strata {

/// Base of every exception Strata throws.
class error : public std::runtime_error {
 public:
  explicit error(std::string const& what) : std::runtime_error(what) {}
};

/// Invalid configuration from the environment, the command line or runtime options,
/// e.g. a malformed STRATA_SIM_DEVICES. The message names the variable.
class config_error : public error {
 public:
  using error::error;
};

/// A bad argument at an API boundary: a place of another machine, an invalid shape, ...
class invalid_argument : public error {
 public:
  using error::error;
};

/// An index outside what it indexes: a cell outside a tensor, an iterator offset past a
/// block's padding. A kind of invalid_argument.
class out_of_range : public invalid_argument {
 public:
  using invalid_argument::invalid_argument;
};

/// Malformed input data, e.g. a machine description in JSON; the message gives the path.
class parse_error : public error {
 public:
  using error::error;
};

/// A memory place could not satisfy an allocation.
class out_of_memory : public error {
 public:
  using error::error;
};

/// A failure reported by a library or driver underneath Strata (hwloc, CUDA, MPI). The
/// message names the call and the library's own message.
class backend_error : public error {
 public:
  using error::error;
};

/// A request that this build or machine cannot serve, e.g. a backend compiled out.
class not_supported : public error {
 public:
  using error::error;
};

}  // namespace strata
