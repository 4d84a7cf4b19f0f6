#pragma once
/// Exceptions thrown by ember. Every failure a user can cause is an ember::Error
/// whose message says what went wrong and, where it can, how to fix it.
#include <stdexcept>
#include <string>

namespace ember {

/// The base of every exception ember throws on bad input or an unusable device.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A device ran out of memory. The message states the requested size and what is free.
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

}  // namespace ember
