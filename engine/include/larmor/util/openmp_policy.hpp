#pragma once
// OpenMP's waiting policy for Larmor's processes. libgomp's default lets idle workers spin after every
// parallel region; when the machine has more runnable threads than cores (a build, a second test, the
// GUI's own threads, FFTW's workers) the spinning workers hold the cores the others need, and every
// barrier waits for a preempted thread: CG-SENSE on 256^2 x 8 coils took 1.4 s per 3 iterations instead of
// 0.23 s on a loaded 2-core machine (measured). PASSIVE makes idle workers sleep; Larmor's parallel loops
// are coarse (whole images), so sleeping costs nothing measurable.
//
// libgomp reads OMP_WAIT_POLICY once, when it is loaded, before main() runs; so the programs call
// usePassiveOpenMpWait(argv) first thing in main(): when the variable is unset it is set to PASSIVE and the
// process re-executes itself (/proc/self/exe, same arguments). A user's own OMP_WAIT_POLICY is kept.
// larmor-cli skips it for commands that run no OpenMP loops (info, devices, ...: the second start-up is
// ~20 ms of their time).
namespace larmor {

/// Returns only when OMP_WAIT_POLICY was already set (by the user or by the re-executed parent) or when
/// re-executing failed (then the default policy stays, which is slower but correct).
void usePassiveOpenMpWait(char** argv);

}  // namespace larmor
