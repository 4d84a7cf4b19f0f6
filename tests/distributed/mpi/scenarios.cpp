// Jobs in which one rank misbehaves, run by check_scenario.sh under mpirun. Each must end with
// an error that names the rank, never hang:
//   late-rank  rank 1 stays away from the collective; rank 0's all_reduce times out (after
//              EMBER_DIST_TIMEOUT seconds) and names rank 1
//   dead-rank  rank 1 is killed while rank 0 waits in an all_reduce
// Rank 0 prints what happened as "scenario: ..." lines for the script to check.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <thread>

#include "ember/ember.h"

using namespace ember;

int main(int argc, char** argv) {
  if (argc != 2 || (std::strcmp(argv[1], "late-rank") != 0 && std::strcmp(argv[1], "dead-rank") != 0)) {
    std::cerr << "usage: ember_mpi_scenarios late-rank|dead-rank (under mpirun -np 2)\n";
    return 2;
  }
  const bool late = std::strcmp(argv[1], "late-rank") == 0;
  distributed::init();
  Tensor t = ones({4});
  distributed::barrier();  // everyone is up
  if (distributed::rank() == 1) {
    if (!late) ::raise(SIGKILL);
    std::this_thread::sleep_for(std::chrono::seconds(60));  // mpirun ends the job before this
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    distributed::all_reduce(t);
    std::cout << "scenario: all_reduce returned although rank 1 never joined" << std::endl;
    return 1;
  } catch (const Error& e) {
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "scenario: error after " << waited << " s: " << e.what() << std::endl;
    // Without MPI_Finalize this rank's exit makes mpirun stop the whole job, which is what a
    // trainer that dies of the error does too.
    std::_Exit(3);
  }
}
