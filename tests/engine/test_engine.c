/* Engine tests: queue order and FIFO ties against a sorted reference and a reference list
 * under random cancels and reschedules, events in the past as errors naming their call,
 * cancel and reschedule, determinism of the dispatch order, checked time arithmetic. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "engine.h"

typedef struct {
  sim_time_ps t;
  uint64_t order; /* insertion order: the FIFO tie-breaker */
} ref_event;

typedef struct {
  ref_event *seen;
  size_t n_seen;
} recorder;

static void record(sim_engine *e, void *data, uint64_t arg)
{
  recorder *r = data;
  r->seen[r->n_seen++] = (ref_event){sim_engine_now(e), arg};
}

static int cmp_ref(const void *a, const void *b)
{
  const ref_event *x = a, *y = b;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  return x->order < y->order ? -1 : (x->order > y->order);
}

/* One million events at random times drawn from a small range (so ties are frequent) come out
 * exactly in (time, insertion order), i.e. what a stable sort of the inputs gives. */
static void test_queue_order_fifo_1e6(void **state)
{
  const size_t n = 1000000;
  g_autoptr(sim_engine) e = sim_engine_new();
  ref_event *ref = g_new(ref_event, n);
  recorder r = {g_new(ref_event, n), 0};
  GRand *rng = g_rand_new_with_seed(42);
  for (size_t i = 0; i < n; i++) {
    sim_time_ps t = g_rand_int_range(rng, 0, 50000);  /* ~20 events per distinct time */
    ref[i] = (ref_event){t, i};
    assert_non_null(sim_engine_schedule_at(e, t, record, &r, i));
  }
  qsort(ref, n, sizeof *ref, cmp_ref);
  assert_int_equal(sim_engine_run(e), n);
  assert_int_equal(r.n_seen, n);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(r.seen[i].t, ref[i].t);
    assert_int_equal(r.seen[i].order, ref[i].order);
  }
  g_rand_free(rng);
  g_free(ref);
  g_free(r.seen);
}

typedef struct {
  int line;                 /* the line of the call that asks for the past */
  gboolean refused;         /* it got NULL */
} past_probe;

static void noop(sim_engine *e, void *data, uint64_t arg) {}

static void schedule_past(sim_engine *e, void *data, uint64_t arg)
{
  past_probe *p = data;
  /* now is 100 ps: 99 is in the past, 100 would be allowed */
  p->line = __LINE__ + 1;
  p->refused = sim_engine_schedule_at(e, 99, noop, NULL, 0) == NULL;
  (void)arg;
}

static void schedule_negative(sim_engine *e, void *data, uint64_t arg)
{
  past_probe *p = data;
  p->line = __LINE__ + 1;
  p->refused = sim_engine_schedule_in(e, -1, noop, NULL, 0) == NULL;
}

/* Sequence numbers reach 2^32 - 1: the pending events are renumbered, and the order (time,
 * then scheduling order) is still that of a stable sort, across the renumbering, with
 * cancelled and rescheduled events among them. */
static void test_sequence_renumbering(void **state)
{
  const size_t n = 3000;
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autofree ref_event *want = g_new(ref_event, n);
  g_autofree sim_event **evs = g_new(sim_event *, n);
  recorder rec = {g_new(ref_event, n), 0};
  size_t k = 0;
  uint64_t rng = 12345;
  for (size_t i = 0; i < n; i++) {
    if (i == n / 3)
      sim__engine_set_next_seq(e, UINT32_MAX - 7);  /* renumbering 7 schedules later */
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    sim_time_ps t = (sim_time_ps)((rng >> 33) % 16);   /* many equal times */
    evs[i] = sim_engine_schedule_at(e, t, record, &rec, i);
    want[k++] = (ref_event){t, i};
  }
  /* Cancel every 10th event; move every 7th (not cancelled) to time 20 + i % 5: it takes the
   * order of a new schedule call. */
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (i % 10 == 0) {
      sim_engine_cancel(e, evs[i]);
      continue;
    }
    if (i % 7 == 0) {
      sim_time_ps t = 20 + (sim_time_ps)(i % 5);
      assert_true(sim_engine_reschedule(e, evs[i], t));
      want[m++] = (ref_event){t, n + i};
      continue;
    }
    want[m++] = want[i];
  }
  assert_int_equal(sim_engine_run(e), m);
  qsort(want, m, sizeof *want, cmp_ref);
  for (size_t i = 0; i < m; i++) {
    assert_int_equal(rec.seen[i].t, want[i].t);
    /* Rescheduled events carry their original index as arg. */
    assert_int_equal(rec.seen[i].order, want[i].order >= n ? want[i].order - n : want[i].order);
  }
  g_free(rec.seen);
}

/* An event asked for in the past is an error naming the call (this file and the line of the
 * call) and both times; the run stops after the event that asked for it (the event at the same
 * time scheduled after it does not run), and later runs dispatch nothing. Only the first error
 * is kept. */
static void test_past_event_is_error(void **state)
{
  g_autoptr(sim_engine) e = sim_engine_new();
  past_probe p = {0, FALSE}, q = {0, FALSE};
  sim_engine_schedule_at(e, 100, schedule_past, &p, 0);
  sim_engine_schedule_at(e, 100, schedule_negative, &q, 0);
  assert_null(sim_engine_error(e));
  assert_int_equal(sim_engine_run(e), 1);
  assert_true(p.refused);
  assert_false(q.refused);   /* never ran */
  assert_int_equal(sim_engine_now(e), 100);
  g_autofree char *want = g_strdup_printf("an event was scheduled at 99 ps, in the past (the "
                                          "current time is 100 ps), by "
                                          "tests/engine/test_engine.c:%d", p.line);
  assert_non_null(sim_engine_error(e));
  assert_string_equal(sim_engine_error(e), want);
  assert_int_equal(sim_engine_run(e), 0);
  assert_int_equal(sim_engine_pending(e), 1);

  /* A negative delay, and a move into the past, are the same error. */
  g_autoptr(sim_engine) f = sim_engine_new();
  sim_engine_schedule_at(f, 100, schedule_negative, &q, 0);
  sim_engine_run(f);
  assert_true(q.refused);
  g_autofree char *want_in = g_strdup_printf("an event was scheduled with a delay of -1 ps, in "
                                             "the past (the current time is 100 ps), by "
                                             "tests/engine/test_engine.c:%d", q.line);
  assert_string_equal(sim_engine_error(f), want_in);

  g_autoptr(sim_engine) g = sim_engine_new();
  sim_event *ev = sim_engine_schedule_at(g, 50, noop, NULL, 0);
  sim_engine_run_until(g, 40);
  sim_engine_schedule_at(g, 45, noop, NULL, 0);
  assert_int_equal(sim_engine_run_until(g, 45), 1);   /* now 45; ev still at 50 */
  int line = __LINE__ + 1;
  assert_false(sim_engine_reschedule(g, ev, 44));
  g_autofree char *want_move = g_strdup_printf("an event was moved to 44 ps, in the past (the "
                                               "current time is 45 ps), by "
                                               "tests/engine/test_engine.c:%d", line);
  assert_string_equal(sim_engine_error(g), want_move);
  assert_int_equal(sim_engine_event_time(g, ev), 50);
  assert_int_equal(sim_engine_run(g), 0);
}

static void test_cancel_reschedule(void **state)
{
  g_autoptr(sim_engine) e = sim_engine_new();
  recorder r = {g_new(ref_event, 8), 0};
  sim_event *a = sim_engine_schedule_at(e, 10, record, &r, 1);
  sim_event *b = sim_engine_schedule_at(e, 20, record, &r, 2);
  sim_event *c = sim_engine_schedule_at(e, 30, record, &r, 3);
  sim_engine_schedule_at(e, 40, record, &r, 4);
  sim_engine_cancel(e, b);
  assert_true(sim_engine_reschedule(e, c, 5));       /* earlier */
  assert_true(sim_engine_reschedule(e, a, 40));      /* later, and after event 4 (new sequence) */
  assert_int_equal(sim_engine_event_time(e, a), 40);
  assert_int_equal(sim_engine_pending(e), 3);
  sim_engine_run(e);
  assert_int_equal(r.n_seen, 3);
  assert_int_equal(r.seen[0].order, 3);
  assert_int_equal(r.seen[0].t, 5);
  assert_int_equal(r.seen[1].order, 4);
  assert_int_equal(r.seen[2].order, 1);
  g_free(r.seen);
}

/* A self-perpetuating random workload: each event schedules 0..2 more. */
static void chain(sim_engine *e, void *data, uint64_t arg)
{
  GRand *rng = data;
  if (sim_engine_events(e) > 200000)
    return;
  int k = g_rand_int_range(rng, 0, 3);
  for (int i = 0; i < k; i++)
    sim_engine_schedule_in(e, g_rand_int_range(rng, 0, 1000), chain, rng, arg + 1);
}

static uint64_t run_chain(guint32 seed)
{
  g_autoptr(sim_engine) e = sim_engine_new();
  GRand *rng = g_rand_new_with_seed(seed);
  for (int i = 0; i < 100; i++)
    sim_engine_schedule_at(e, g_rand_int_range(rng, 0, 100), chain, rng, 0);
  sim_engine_run(e);
  uint64_t h = sim_engine_trace_hash(e);
  g_rand_free(rng);
  return h;
}

static void test_determinism(void **state)
{
  assert_int_equal(run_chain(7), run_chain(7));
  assert_int_not_equal(run_chain(7), run_chain(8));
}

static void test_time_arithmetic(void **state)
{
  sim_time_ps out = 0;
  assert_int_equal(SIM_US(3), 3000000);
  assert_int_equal(SIM_S(1), 1000000000000LL);
  assert_false(sim_time_add(SIM_TIME_MAX, 1, &out));
  assert_true(sim_time_add(SIM_TIME_MAX - 1, 1, &out));
  assert_int_equal(out, SIM_TIME_MAX);
  assert_false(sim_time_mul(SIM_S(1000000), 1000, &out));
  assert_int_equal(sim_time_add_sat(SIM_TIME_MAX, 5), SIM_TIME_MAX);
  /* 1 byte at 3 B/s is 333333333333.33 ps, rounded up to ...334. */
  assert_int_equal(sim_time_for_work(1, 3), 333333333334LL);
  /* 1 GiB at 10 GB/s: 1073741824 / 1e10 s = 107374182.4 us = 107374182400 ps exactly. */
  assert_int_equal(sim_time_for_work(1073741824.0, 1e10), 107374182400LL);
  /* 16 EiB at 1 B/s does not fit: saturates instead of wrapping. */
  assert_int_equal(sim_time_for_work(18446744073709551615.0, 1), SIM_TIME_MAX);
  assert_int_equal(sim_time_for_work(1e12, 1e12), SIM_S(1));
  assert_int_equal(sim_time_for_work(1.0, 0.0), SIM_TIME_MAX);
  assert_int_equal(sim_time_from_s(2.5e-9), 2500);
}

/* sim_time_for_work is ceil(work * 1e12 / rate) in long double (its definition); a fast path
 * must give the same picoseconds. Byte counts at link rates whose quotient is an integer in
 * exact arithmetic (where a double quotient lands an ulp off) and random ones. */
static void test_time_for_work_matches_long_double(void **state)
{
  static const double rates[] = {12.5e9, 25e9, 1e11, 3e9, 100e9 / 3, 6.25e9, 1.5e11, 1,
                                 1e12,   7,    2.4e11, 4.8e10, 9.9e9, 1e-3, 5e17};
  uint64_t rng = 88172645463325252ULL;
  int ties = 0;
  for (int i = 0; i < 400000; i++) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    double rate = rates[rng % (sizeof rates / sizeof rates[0])];
    double work;
    switch ((rng >> 8) % 3) {
    case 0: /* a whole number of picoseconds at this rate */
      work = (double)((rng >> 20) % 1000000000ULL) * rate / 1e12;
      work = (double)(uint64_t)work;
      break;
    case 1:
      work = (double)((rng >> 16) % (1ULL << 40));
      break;
    default:
      work = (double)((rng >> 24) % 100000ULL) * 0.125;
      break;
    }
    long double ps = (long double)work * 1e12L / (long double)rate;
    sim_time_ps want = work > 0 ? (ps >= (long double)SIM_TIME_MAX ? SIM_TIME_MAX
                                                                   : (sim_time_ps)ceill(ps))
                                : 0;
    ties += ps == floorl(ps);
    if (sim_time_for_work(work, rate) != want)
      fail_msg("work %.17g at %.17g: %lld ps, not %lld", work, rate,
               (long long)sim_time_for_work(work, rate), (long long)want);
  }
  assert_true(ties > 1000);   /* the near-integer quotients were met */
}

typedef struct {
  int procs, tracks, begins, ends, counters, links, finished;
  sim_time_ps last_end;
} counting;

static void o_proc(void *u, const sim_proc_info *p) { ((counting *)u)->procs++; }
static void o_track(void *u, const sim_track_info *t) { ((counting *)u)->tracks++; }
static void o_begin(void *u, const sim_span *s) { ((counting *)u)->begins++; }
static void o_end(void *u, const sim_span *s)
{
  ((counting *)u)->ends++;
  ((counting *)u)->last_end = s->end_ps - s->start_ps;
}
static void o_counter(void *u, sim_proc_id p, const char *n, sim_time_ps t, double v)
{
  ((counting *)u)->counters++;
}
static void o_fin(void *u, sim_time_ps t) { ((counting *)u)->finished++; }

static const sim_observer_ops counting_ops = {
    .proc_added = o_proc, .track_added = o_track, .span_begin = o_begin, .span_end = o_end,
    .counter = o_counter, .finished = o_fin};

static void end_span(sim_engine *e, void *data, uint64_t id) { sim_engine_span_end(e, id); }

static void test_observers(void **state)
{
  g_autoptr(sim_engine) e = sim_engine_new();
  sim_proc_id p = sim_engine_add_proc(e, SIM_PROC_DEVICE, "gpu0", 0);
  sim_track_id t = sim_engine_add_track(e, p, "compute", 0);
  counting c = {0};
  sim_engine_add_observer(e, &counting_ops, &c); /* replays the process and the track */
  assert_int_equal(c.procs, 1);
  assert_int_equal(c.tracks, 1);
  uint64_t id = sim_engine_span_begin(e, t, "conv1", "compute", 0, 0);
  sim_engine_schedule_at(e, SIM_NS(7), end_span, NULL, id);
  sim_engine_counter(e, p, "memory_bytes", 1.0);
  sim_engine_run(e);
  sim_engine_finish(e);
  sim_engine_finish(e);
  assert_int_equal(c.begins, 1);
  assert_int_equal(c.ends, 1);
  assert_int_equal(c.last_end, SIM_NS(7));
  assert_int_equal(c.counters, 1);
  assert_int_equal(c.finished, 1);
}

/* An event that reschedules itself with zero delay: the clock never advances. */
static void spin(sim_engine *e, void *data, uint64_t arg)
{
  sim_engine_schedule_in(e, 0, spin, data, arg);
}

static void test_watchdog(void **state)
{
  g_autoptr(sim_engine) e = sim_engine_new();
  sim_engine_set_stall_limit(e, 1000);
  sim_engine_schedule_at(e, SIM_NS(5), noop, NULL, 0);
  sim_engine_schedule_at(e, SIM_NS(10), spin, NULL, 0);
  sim_engine_run(e);
  assert_true(sim_engine_stalled(e));
  assert_int_equal(sim_engine_now(e), SIM_NS(10));
  /* 1 event at 5 ns; at 10 ns the first event, then 1000 more at the same time are allowed and
   * the 1001st (over the limit) is the last one run: 1 + 1 + 1001. */
  assert_int_equal(sim_engine_events(e), 1003);
  g_autoptr(sim_engine) f = sim_engine_new();
  sim_engine_schedule_at(f, 0, noop, NULL, 0);
  sim_engine_schedule_at(f, 0, noop, NULL, 0);
  sim_engine_run(f);
  assert_false(sim_engine_stalled(f));
}


/* ---- The queue against a reference ------------------------------------------------------- */

/* The reference: a plain list of pending events, the next one found by scanning for the
 * smallest (time, order), where order is the count of schedule calls (a reschedule to a new
 * time counts as one; to the same time it keeps its place), which is what FIFO ties mean. */
#define REF_MAX 512

typedef struct {
  sim_event *ev;
  sim_time_ps t;
  uint64_t order;
  gboolean live;
} ref_slot;

typedef struct {
  ref_slot slot[REF_MAX];
  uint64_t next_order;
  uint64_t rng;
  uint64_t dispatched, limit;
  gboolean wrong;   /* the engine dispatched another event than the reference's next */
} ref_model;

static uint64_t ref_rand(ref_model *m, uint64_t n)
{
  m->rng = m->rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (m->rng >> 33) % n;
}

/* Delays from 0 (ties with now) to 2^40 ps, spread over every byte of the time. */
static sim_time_ps ref_delay(ref_model *m)
{
  switch (ref_rand(m, 4)) {
  case 0: return 0;
  case 1: return (sim_time_ps)ref_rand(m, 4);                       /* many equal times */
  case 2: return (sim_time_ps)ref_rand(m, 70000);
  default: return (sim_time_ps)ref_rand(m, (uint64_t)1 << (ref_rand(m, 40) + 1));
  }
}

static void ref_fire(sim_engine *e, void *data, uint64_t arg);

static void ref_schedule(sim_engine *e, ref_model *m, sim_time_ps at)
{
  for (size_t i = 0; i < REF_MAX; i++)
    if (!m->slot[i].live) {
      m->slot[i] = (ref_slot){sim_engine_schedule_at(e, at, ref_fire, m, i), at,
                              m->next_order++, TRUE};
      assert_non_null(m->slot[i].ev);
      return;
    }
}

/* Random cancels, reschedules (earlier, later, to the same time) and schedules. */
static void ref_stir(sim_engine *e, ref_model *m)
{
  sim_time_ps now = sim_engine_now(e);
  for (int k = (int)ref_rand(m, 4); k > 0; k--) {
    ref_slot *s = &m->slot[ref_rand(m, REF_MAX)];
    if (!s->live)
      continue;
    switch (ref_rand(m, 4)) {
    case 0:
      sim_engine_cancel(e, s->ev);
      s->live = FALSE;
      break;
    case 1: {
      sim_time_ps t = now + (s->t > now ? (sim_time_ps)ref_rand(m, (uint64_t)(s->t - now)) : 0);
      assert_true(sim_engine_reschedule(e, s->ev, t));
      if (t != s->t)
        s->order = m->next_order++;
      s->t = t;
      break;
    }
    case 2:
      assert_true(sim_engine_reschedule(e, s->ev, s->t));   /* keeps its place */
      break;
    default: {
      sim_time_ps t = s->t + ref_delay(m);
      assert_true(sim_engine_reschedule(e, s->ev, t));
      if (t != s->t)
        s->order = m->next_order++;
      s->t = t;
    }
    }
  }
  if (m->dispatched < m->limit)
    for (int k = (int)ref_rand(m, 3); k > 0; k--)
      ref_schedule(e, m, now + ref_delay(m));
}

static void ref_fire(sim_engine *e, void *data, uint64_t arg)
{
  ref_model *m = data;
  size_t best = REF_MAX;
  for (size_t i = 0; i < REF_MAX; i++) {
    const ref_slot *s = &m->slot[i];
    if (s->live && (best == REF_MAX || s->t < m->slot[best].t ||
                    (s->t == m->slot[best].t && s->order < m->slot[best].order)))
      best = i;
  }
  if (best != arg || m->slot[arg].t != sim_engine_now(e))
    m->wrong = TRUE;
  m->slot[arg].live = FALSE;
  m->dispatched++;
  ref_stir(e, m);
}

/* 150000 events with ties, cancels and reschedules dispatch in the reference's order, also when
 * the run is cut by sim_engine_run_until() and events are scheduled from outside between the
 * pieces (before the time of the next pending event: the queue must take times below the one
 * it looked at last). */
static void test_queue_matches_reference(void **state)
{
  g_autoptr(sim_engine) e = sim_engine_new();
  ref_model *m = g_new0(ref_model, 1);
  m->rng = 2026;
  m->limit = 150000;
  for (int i = 0; i < 300; i++)
    ref_schedule(e, m, ref_delay(m));
  sim_time_ps limit = 0;
  while (m->dispatched < m->limit && !m->wrong) {
    limit += (sim_time_ps)ref_rand(m, (uint64_t)1 << 30);
    sim_engine_run_until(e, limit);
    ref_stir(e, m);
    ref_schedule(e, m, sim_engine_now(e) + (sim_time_ps)ref_rand(m, 3));
  }
  sim_engine_run(e);
  assert_false(m->wrong);
  assert_true(m->dispatched > m->limit);
  assert_int_equal(sim_engine_events(e), m->dispatched);
  g_free(m);
}

/* ---- Many events at few times --------------------------------------------------------- */

typedef struct {
  uint64_t order[1200];
  sim_time_ps at[1200];
  uint32_t n;
} crowd_log;

static void crowd_fire(sim_engine *e, void *data, uint64_t arg)
{
  crowd_log *log = data;
  log->order[log->n] = arg;
  log->at[log->n++] = sim_engine_now(e);
}

/* A ring's pattern: 1000 events scheduled a few microseconds ahead at 4 distinct times, the
 * times taken in turn (so each time's events are spread over the schedule calls), dispatch by
 * time and, among equal times, in the order they were scheduled: time 3 MiB ps + 1024 k for
 * the event i with k = i mod 4 (i = 0..999), so first every i with i mod 4 == 0 in increasing
 * order, then those with i mod 4 == 1, and so on. Then 1000 events in decreasing order of time
 * (3 MiB ps + 1023 - i for the event i, all within one group of the queue's sort, too many moves
 * for its insertion), and 150 more at one time among them: increasing time, and the 150 in
 * their order. */
static void test_queue_crowded_times(void **state)
{
  g_autoptr(sim_engine) e = sim_engine_new();
  crowd_log *log = g_new0(crowd_log, 1);
  const sim_time_ps base = (sim_time_ps)3 << 20;
  for (uint64_t i = 0; i < 1000; i++)
    sim_engine_schedule_at(e, base + 1024 * (sim_time_ps)(i % 4), crowd_fire, log, i);
  assert_int_equal(sim_engine_run(e), 1000);
  for (uint32_t j = 0; j < 1000; j++) {
    uint64_t k = j / 250, i = 4 * (j % 250) + k;
    assert_int_equal(log->order[j], i);
    assert_int_equal(log->at[j], base + 1024 * (sim_time_ps)k);
  }

  g_autoptr(sim_engine) f = sim_engine_new();
  log->n = 0;
  for (uint64_t i = 0; i < 1000; i++) {
    sim_engine_schedule_at(f, base + 1023 - (sim_time_ps)i, crowd_fire, log, i);
    if (i == 500)
      for (uint64_t k = 0; k < 150; k++)
        sim_engine_schedule_at(f, base + 700, crowd_fire, log, 1000 + k);
  }
  assert_int_equal(sim_engine_run(f), 1150);
  /* Times base + 24 .. base + 1023, each once (event 1023 - t), and base + 700 151 times:
   * event 323 (scheduled before the 150) then 1000 .. 1149. */
  uint32_t j = 0;
  for (sim_time_ps t = 24; t <= 1023; t++) {
    assert_int_equal(log->at[j], base + t);
    assert_int_equal(log->order[j++], (uint64_t)(1023 - t));
    if (t == 700)
      for (uint64_t k = 0; k < 150; k++) {
        assert_int_equal(log->at[j], base + 700);
        assert_int_equal(log->order[j++], 1000 + k);
      }
  }
  assert_int_equal(j, 1150);
  g_free(log);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_queue_order_fifo_1e6), cmocka_unit_test(test_past_event_is_error),
      cmocka_unit_test(test_cancel_reschedule),   cmocka_unit_test(test_determinism),
      cmocka_unit_test(test_time_arithmetic),     cmocka_unit_test(test_observers),
      cmocka_unit_test(test_watchdog),           cmocka_unit_test(test_sequence_renumbering),
      cmocka_unit_test(test_queue_matches_reference), cmocka_unit_test(test_queue_crowded_times),
      cmocka_unit_test(test_time_for_work_matches_long_double),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
