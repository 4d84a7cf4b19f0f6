#pragma once
/// Print options, as torch.set_printoptions.
#include <cstdint>
#include <optional>

namespace ember {

struct PrintOptions {
  int precision = 4;
  int64_t threshold = 1000;
  int edgeitems = 3;
  int linewidth = 80;
  /// Unset: choose automatically; true/false forces scientific or fixed notation.
  std::optional<bool> sci_mode;
};

/// Replaces the print options (like torch.set_printoptions, every field is set, sci_mode included).
void set_printoptions(const PrintOptions& options);
const PrintOptions& get_printoptions();

}  // namespace ember
