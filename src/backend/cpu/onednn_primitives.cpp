#include "backend/cpu/onednn_primitives.h"

#include <array>
#include <vector>

namespace ember::cpu {

dnnl::engine& onednn_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void* staging(int slot, size_t bytes) {
  thread_local std::array<std::vector<float>, 4> buffers;
  std::vector<float>& buffer = buffers[static_cast<size_t>(slot)];
  if (buffer.size() * sizeof(float) < bytes) buffer.resize(bytes / sizeof(float) + 1);
  return buffer.data();
}

void execute(const dnnl::primitive& prim, const dnnl::memory::desc& scratchpad, dnnl::stream& stream,
             std::unordered_map<int, dnnl::memory> args) {
  if (scratchpad.get_size() > 0) {
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(scratchpad, onednn_engine(), staging(3, scratchpad.get_size())));
  }
  prim.execute(stream, args);
}

}  // namespace ember::cpu
