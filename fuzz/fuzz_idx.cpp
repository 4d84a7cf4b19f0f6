// Fuzzes data::read_idx_from_bytes on plain and gzip-compressed IDX bytes. An accepted plain
// file must give a uint8 tensor whose sizes are the header's and whose bytes are the file's data.
#include <cstring>
#include <vector>

#include "ember/data/mnist.h"
#include "fuzz_common.h"

namespace ember::fuzz {

void idx_one_input(std::span<const uint8_t> bytes) {
  Tensor t;
  try {
    t = data::read_idx_from_bytes(bytes, "fuzz input");
  } catch (const Error&) {
    return;
  }
  accepted("reading an accepted IDX file", [&] {
    touch(t);
    expect(t.dtype() == kUInt8, "an IDX tensor is not uint8");
    expect(t.dim() >= 1 && t.dim() <= 255, "an IDX tensor has a dimension count the format cannot hold");
    const bool gzipped = bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
    if (gzipped) return;  // the inflated bytes are not at hand to compare with
    // Plain: 4 bytes of magic, 4 per dimension (big-endian), then exactly the data.
    const size_t header = 4 + 4 * static_cast<size_t>(t.dim());
    expect(bytes.size() >= header && bytes[3] == t.dim(), "the dimension count differs from the header's");
    for (int64_t d = 0; d < t.dim(); ++d) {
      const uint8_t* p = bytes.data() + 4 + 4 * d;
      const int64_t size = (int64_t{p[0]} << 24) | (int64_t{p[1]} << 16) | (int64_t{p[2]} << 8) | int64_t{p[3]};
      expect(t.size(d) == size, "a size differs from the header's");
    }
    expect(bytes.size() - header == t.nbytes(), "the data is not exactly the bytes after the header");
    expect(t.nbytes() == 0 || std::memcmp(t.data_ptr(), bytes.data() + header, t.nbytes()) == 0,
           "the tensor's bytes differ from the file's");
  });
}

}  // namespace ember::fuzz

EMBER_FUZZ_ENTRY(ember::fuzz::idx_one_input)
