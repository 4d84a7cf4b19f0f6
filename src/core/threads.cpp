#include "ember/threads.h"

#include <omp.h>

#include "backend/cpu/parallel.h"
#include "backend/cpu/thread_count.h"
#include "core/check.h"

namespace ember {

int get_num_threads() { return cpu::num_threads(); }

void set_num_threads(int n) {
  EMBER_CHECK(n >= 1, "set_num_threads expects a positive integer, got ", n);
  cpu::apply_default_thread_count();  // first, so that it cannot override n later
  omp_set_num_threads(n);
}

}  // namespace ember
