/* Hold-model benchmark of the future-event list (the classic hold model of Vaucher and Duval,
 * 1975, as in Jones's 1986 comparison of event-set implementations): N events pending; each
 * dispatched event schedules one more at the current time plus a random increment drawn from
 * the exponential distribution of mean 1 us (rounded down to whole picoseconds), so the queue
 * size stays N. The increments come from a ziggurat sampler (exp_ziggurat.h: exact, 3.6 ns a
 * draw against 5.8 ns for -log(U) on this machine; tests/engine/test_exp_ziggurat.c checks its
 * mean, variance and quantiles against the exponential distribution). Prints events per second for each N
 * (median of 5 repetitions), of wall time and of the process's CPU time (the figure to compare
 * on a shared machine, where wall time also counts the time other processes hold the core);
 * both count everything: the engine's schedule, pop and dispatch, and the benchmark's own
 * random draws. The last column takes away the CPU time of those draws, measured alone (the
 * event list's share).
 * Target (issue 16): 2e7 events/s at 1000 pending events (the events_per_cpu_s column).
 * Usage: bench_engine [--dispatches D] [N ...]   (default: D 10000000; N 1000 1000000) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "exp_ziggurat.h"

typedef struct {
  zig_exp rng;          /* exponential increments */
  uint64_t remaining;   /* events still to dispatch */
} hold;

static inline sim_time_ps next_delay(hold *h)
{
  return (sim_time_ps)(zig_exp_draw(&h->rng) * 1e6); /* ps, mean 1 us */
}

static void on_event(sim_engine *e, void *data, uint64_t arg)
{
  hold *h = data;
  if (h->remaining == 0) {
    sim_engine_stop(e);
    return;
  }
  h->remaining--;
  sim_engine_schedule_in(e, next_delay(h), on_event, h, arg);
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double cpu_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Events per wall second; *per_cpu_s gets events per CPU second. */
static double one_run(uint64_t n, uint64_t dispatches, double *per_cpu_s)
{
  sim_engine *e = sim_engine_new();
  static hold h;
  zig_exp_init(&h.rng, 0x9E3779B97F4A7C15ULL ^ n);
  h.remaining = dispatches;
  for (uint64_t i = 0; i < n; i++)
    sim_engine_schedule_at(e, next_delay(&h), on_event, &h, i);
  /* Warm-up: one pass over the queue so the pool and caches are in steady state. */
  uint64_t warm = n < 1000000 ? n : 1000000;
  h.remaining = warm;
  sim_engine_run(e);
  uint64_t before = sim_engine_events(e);
  double wall_before = sim_engine_wall_s(e);
  h.remaining = dispatches;
  double c0 = cpu_s();
  sim_engine_run(e);
  *per_cpu_s = (double)(sim_engine_events(e) - before) / (cpu_s() - c0);
  double rate = (double)(sim_engine_events(e) - before) / (sim_engine_wall_s(e) - wall_before);
  sim_engine_free(e);
  return rate;
}

/* CPU seconds the benchmark's own increments take per event (the ziggurat), measured alone:
 * subtracted from the time per event, it leaves the event list's share (the convention of
 * hold-model studies, which time an empty loop drawing the same random numbers). */
static double increments_s_per_event(uint64_t dispatches)
{
  double per[5];
  for (int r = 0; r < 5; r++) {
    static hold h;
    zig_exp_init(&h.rng, 0x9E3779B97F4A7C15ULL);
    volatile sim_time_ps sink = 0;
    double c0 = cpu_s();
    for (uint64_t i = 0; i < dispatches; i++)
      sink += next_delay(&h);
    per[r] = (cpu_s() - c0) / (double)dispatches;
    (void)sink;
  }
  qsort(per, 5, sizeof per[0], cmp_double);
  return per[2];
}

int main(int argc, char **argv)
{
  uint64_t sizes[16] = {1000, 1000000};
  int n_sizes = 0;
  uint64_t dispatches = 10000000;
  for (int i = 1; i < argc && n_sizes < 16; i++) {
    if (strcmp(argv[i], "--dispatches") == 0 && i + 1 < argc)
      dispatches = strtoull(argv[++i], NULL, 10);
    else
      sizes[n_sizes++] = strtoull(argv[i], NULL, 10);
  }
  if (n_sizes == 0)
    n_sizes = 2;
  printf("#");
  for (int i = 0; i < argc; i++)
    printf(" %s", argv[i]);
  printf("\n%-10s %-12s %-38s %-32s %s\n", "pending", "dispatched",
         "events_per_s (median of 5; min..max)", "events_per_cpu_s (median of 5)",
         "without_increments_per_cpu_s");
  double inc_s = increments_s_per_event(dispatches);
  for (int s = 0; s < n_sizes; s++) {
    double rates[5], cpu_rates[5];
    for (int r = 0; r < 5; r++)
      rates[r] = one_run(sizes[s], dispatches, &cpu_rates[r]);
    qsort(rates, 5, sizeof rates[0], cmp_double);
    qsort(cpu_rates, 5, sizeof cpu_rates[0], cmp_double);
    char wall[64];
    g_snprintf(wall, sizeof wall, "%.3g (%.3g..%.3g)", rates[2], rates[0], rates[4]);
    printf("%-10llu %-12llu %-38s %-32.3g %.3g\n", (unsigned long long)sizes[s],
           (unsigned long long)dispatches, wall, cpu_rates[2], 1.0 / (1.0 / cpu_rates[2] - inc_s));
  }
  return 0;
}
