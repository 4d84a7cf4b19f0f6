#include "ember/nn/sizes.h"

#include "core/check.h"

namespace ember::nn::detail {

void throw_size_count(const char* what, const char* name, size_t d) {
  ::ember::detail::fail(what, ": ", name, " must either be a single int, or a tuple of ", d, " ints");
}

}  // namespace ember::nn::detail
