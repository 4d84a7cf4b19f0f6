#pragma once
/// Warnings: calls that are legal but probably not what the caller meant (PyTorch's UserWarning),
/// such as dropout on a one-layer LSTM, which applies no dropout at all.
///
/// By default a warning is written to stderr as "UserWarning: <message>", each distinct message
/// once per process (Python's default filter shows one once per place that warns). A handler
/// installed with set_warning_handler receives every warning instead; it may throw to turn
/// warnings into errors, and the exception then leaves the call that warned.
#include <functional>
#include <string>

namespace ember {

using WarningHandler = std::function<void(const std::string& message)>;

/// Installs `handler` for the whole process (all threads) and returns the one it replaces; an
/// empty handler restores the default.
WarningHandler set_warning_handler(WarningHandler handler);

/// Issues a warning through the installed handler.
void warn(const std::string& message);

}  // namespace ember
