#include "ember/threads.h"

#include <omp.h>

#include <string>

#include "base/parallel.h"
#include "base/thread_count.h"
#include "ember/error.h"

namespace ember {

int get_num_threads() { return base::num_threads(); }

void set_num_threads(int n) {
  if (n < 1) throw Error("set_num_threads expects a positive integer, got " + std::to_string(n));
  base::apply_default_thread_count();  // first, so that it cannot override n later
  omp_set_num_threads(n);
}

}  // namespace ember
