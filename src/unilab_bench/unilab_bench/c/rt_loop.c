/* Copyright 2026 UniLab contributors
 * SPDX-License-Identifier: Apache-2.0
 *
 * The floor any loop on this machine gets: the C baseline of `unilab bench safety`.
 * Usage: rt_loop N PERIOD_NS CPU PRIORITY; prints "mlockall affinity fifo misses",
 * then one wake error (ns) per cycle.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
/* cyclictest-style loop: absolute-deadline clock_nanosleep, wake minus deadline in ns. */
int main(int argc, char **argv) {
  long n = atol(argv[1]), period = atol(argv[2]); int cpu = atoi(argv[3]);
  int prio = atoi(argv[4]); long *e = calloc(n, sizeof(long)); long misses = 0;
  int ml = mlockall(MCL_CURRENT | MCL_FUTURE);
  cpu_set_t set; CPU_ZERO(&set); CPU_SET(cpu, &set);
  int af = sched_setaffinity(0, sizeof set, &set);
  struct sched_param sp = {.sched_priority = prio};
  int ff = sched_setscheduler(0, SCHED_FIFO, &sp);
  struct timespec t, now; clock_gettime(CLOCK_MONOTONIC, &t);
  for (long i = 0; i < n; i++) {
    t.tv_nsec += period;
    while (t.tv_nsec >= 1000000000L) { t.tv_nsec -= 1000000000L; t.tv_sec++; }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
    clock_gettime(CLOCK_MONOTONIC, &now);
    e[i] = (now.tv_sec - t.tv_sec) * 1000000000L + now.tv_nsec - t.tv_nsec;
    if (e[i] > period) { long k = e[i] / period; misses += k;
      t.tv_nsec += k * period; }
  }
  printf("%d %d %d %ld\n", ml, af, ff, misses);
  for (long i = 0; i < n; i++) printf("%ld\n", e[i]);
  return 0;
}
