/* Executor tests on hand-built graphs whose finish times are worked out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "taskgraph.h"
#include "util.h"

#include <string.h>

/* One stream, three tasks in a chain: 10 + 20 + 30 ns. */
static void test_chain(void **state)
{
  g_autoptr(sim_graph) g = sim_graph_new();
  sim_unit_id u = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu0");
  sim_stream_id s = sim_graph_add_stream(g, u, "compute");
  sim_task_id a = sim_graph_add_compute(g, s, "a", "compute", SIM_NS(10), 0, 0);
  sim_task_id b = sim_graph_add_compute(g, s, "b", "compute", SIM_NS(20), 0, 0);
  sim_task_id c = sim_graph_add_compute(g, s, "c", "compute", SIM_NS(30), 0, 0);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(sim_exec) x = sim_exec_new(e, g);
  assert_true(sim_exec_run(x, NULL));
  assert_int_equal(sim_exec_task_start(x, a), 0);
  assert_int_equal(sim_exec_task_start(x, b), SIM_NS(10));
  assert_int_equal(sim_exec_task_end(x, c), SIM_NS(60));
  assert_int_equal(sim_exec_makespan(x), SIM_NS(60));
  assert_int_equal(sim_exec_stream_busy(x, s), SIM_NS(60));
}

/* sim_graph_reserve is a hint: a graph reserved too small grows past it, one reserved after
 * tasks were added keeps them (the arrays move from the heap into the graph's block of 512 KiB
 * or more), one reserved far too large holds a few tasks, and one whose block is outgrown
 * moves its arrays out of it; stream task lists and name tables take the block's spare room
 * until it runs out. A block lends its room to one executor at a time: a second
 * executor alive at once has arrays of its own, and a third, made once the first is freed,
 * finds the room used and clears it. Task i (i < n) runs (i + 1) ns on stream i % 2 after task
 * i - 1, so the chain ends at n (n + 1) / 2 ns and task i starts at i (i + 1) / 2 ns. */
static void check_chain(const sim_exec *x, const sim_task_id *t, int n)
{
  for (int i = 0; i < n; i++)
    assert_int_equal(sim_exec_task_start(x, t[i]), SIM_NS((int64_t)i * (i + 1) / 2));
}

static sim_time_ps run_reserved_chain(uint64_t reserve_before, uint64_t reserve_after, int n)
{
  g_autoptr(sim_graph) g = sim_graph_new();
  sim_unit_id u = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu0");
  sim_stream_id s[2] = {sim_graph_add_stream(g, u, "compute"), sim_graph_add_stream(g, u, "comm")};
  sim_graph_reserve(g, reserve_before, reserve_before);
  g_autofree sim_task_id *t = g_new(sim_task_id, n);
  for (int i = 0; i < n; i++) {
    if (i == n / 2)
      sim_graph_reserve(g, reserve_after, reserve_after);
    /* Every task has a name of its own, every other one handed out by the graph first, so
     * that the name tables grow (into the block's spare room, and past it). */
    char name[16];
    g_snprintf(name, sizeof name, "t%d", i);
    t[i] = sim_graph_add_compute(g, s[i % 2], i % 2 ? sim_graph_intern(g, name) : name,
                                 "compute", SIM_NS(i + 1), 0, 0);
    if (i > 0)
      sim_graph_depend(g, t[i], t[i - 1]);
  }
  for (int i = 0; i < n; i++) {
    char name[16];
    g_snprintf(name, sizeof name, "t%d", i);
    assert_string_equal(sim_graph_task_name(g, t[i]), name);
  }
  sim_engine *e[3];
  sim_exec *x[3];
  for (int k = 0; k < 3; k++) {
    if (k == 2)
      g_clear_pointer(&x[0], sim_exec_free);
    e[k] = sim_engine_new();
    x[k] = sim_exec_new(e[k], g);
    if (k == 1)
      check_chain(x[0], t, n);   /* the second executor left the first one's states alone */
    assert_true(sim_exec_run(x[k], NULL));
    check_chain(x[k], t, n);
    assert_int_equal(sim_exec_makespan(x[k]), SIM_NS((int64_t)n * (n + 1) / 2));
  }
  sim_time_ps makespan = sim_exec_makespan(x[2]);
  for (int k = 0; k < 3; k++) {
    g_clear_pointer(&x[k], sim_exec_free);
    sim_engine_free(e[k]);
  }
  return makespan;
}

static void test_reserve(void **state)
{
  assert_int_equal(run_reserved_chain(3, 0, 300), SIM_NS(300 * 301 / 2));
  assert_int_equal(run_reserved_chain(0, 100000, 300), SIM_NS(300 * 301 / 2));
  assert_int_equal(run_reserved_chain(1 << 20, 0, 3), SIM_NS(6));
  assert_int_equal(run_reserved_chain(20000, 0, 30000), SIM_NS((int64_t)30000 * 30001 / 2));
}

/* Members reserved midway (into the block's spare room, and past it, in a graph reserved
 * first): every collective of three streams keeps its members, three per collective in the
 * member array (a task of up to two holds them inline). */
static void test_reserve_members(void **state)
{
  for (int k = 0; k < 2; k++) {
    g_autoptr(sim_graph) g = sim_graph_new();
    sim_unit_id u = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu0");
    sim_stream_id s[3];
    for (int i = 0; i < 3; i++)
      s[i] = sim_graph_add_stream(g, u, i == 0 ? "a" : i == 1 ? "b" : "c");
    if (k == 1)
      sim_graph_reserve(g, 20000, 20000);
    enum { N = 1000 };
    sim_task_id t[N];
    for (int i = 0; i < N; i++) {
      if (i == N / 2)
        sim_graph_reserve_members(g, k == 1 ? 3 * N : 1 << 20);
      /* A different order of the three streams each time. */
      sim_stream_id m[3] = {s[i % 3], s[(i + 1 + i % 2) % 3], s[(i + 2 - i % 2) % 3]};
      t[i] = sim_graph_add_collective(g, m, 3, "ar", 0, NULL, 64);
    }
    assert_int_equal(sim_graph_n_members(g), 3 * N);
    for (int i = 0; i < N; i++) {
      const sim_stream_id *m;
      assert_int_equal(sim_graph_task_members(g, t[i], &m), 3);
      assert_int_equal(m[0], s[i % 3]);
      assert_int_equal(m[1], s[(i + 1 + i % 2) % 3]);
      assert_int_equal(m[2], s[(i + 2 - i % 2) % 3]);
    }
  }
}

/* Categories are kept by address: 40 of them (more than the graph caches) each come back as
 * given, asked in turn twice so that cached and uncached ones are both found again. */
static void test_categories(void **state)
{
  static const char cats[40][4] = {"c0",  "c1",  "c2",  "c3",  "c4",  "c5",  "c6",  "c7",
                                   "c8",  "c9",  "c10", "c11", "c12", "c13", "c14", "c15",
                                   "c16", "c17", "c18", "c19", "c20", "c21", "c22", "c23",
                                   "c24", "c25", "c26", "c27", "c28", "c29", "c30", "c31",
                                   "c32", "c33", "c34", "c35", "c36", "c37", "c38", "c39"};
  g_autoptr(sim_graph) g = sim_graph_new();
  sim_unit_id u = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu0");
  sim_stream_id s = sim_graph_add_stream(g, u, "compute");
  sim_task_id t[80];
  for (int i = 0; i < 80; i++)
    t[i] = sim_graph_add_compute(g, s, "x", cats[i % 40], SIM_NS(1), 0, 0);
  for (int i = 0; i < 80; i++)
    assert_ptr_equal(sim_graph_task_category(g, t[i]), cats[i % 40]);
}

/* Two streams of one device: "late" is added to stream 2 before "early", so even though
 * "early" has no dependencies it waits for "late", which waits for "a" (50 ns) on stream 1.
 * late: 50..60, early: 60..65. */
static void test_stream_order(void **state)
{
  g_autoptr(sim_graph) g = sim_graph_new();
  sim_unit_id u = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu0");
  sim_stream_id s1 = sim_graph_add_stream(g, u, "compute");
  sim_stream_id s2 = sim_graph_add_stream(g, u, "comm");
  sim_task_id a = sim_graph_add_compute(g, s1, "a", "compute", SIM_NS(50), 0, 0);
  sim_task_id late = sim_graph_add_compute(g, s2, "late", "compute", SIM_NS(10), 0, 0);
  sim_task_id early = sim_graph_add_compute(g, s2, "early", "compute", SIM_NS(5), 0, 0);
  sim_graph_depend(g, late, a);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(sim_exec) x = sim_exec_new(e, g);
  assert_true(sim_exec_run(x, NULL));
  assert_int_equal(sim_exec_task_start(x, late), SIM_NS(50));
  assert_int_equal(sim_exec_task_start(x, early), SIM_NS(60));
  assert_int_equal(sim_exec_makespan(x), SIM_NS(65));
}

/* Data parallel on two devices with the simple model (latency 1 us, 10 GB/s).
 * Each device: forward 100 us, backward of layer 2 (40 us) then layer 1 (60 us) on "compute".
 * Gradients of layer 2 (8 MB) are all-reduced on "comm" as soon as they exist and overlap the
 * backward of layer 1; gradients of layer 1 (2 MB) after it. A 2-member ring takes
 * 2(n-1) = 2 steps of latency + (bytes/2)/bw:
 *   ar2 = 2 * (1 us + 4 MB / 10 GB/s) = 2 * (1 + 400) us = 802 us, from 140 to 942 us;
 *   ar1 = 2 * (1 us + 1 MB / 10 GB/s) = 2 * (1 + 100) us = 202 us, but the comm stream is busy
 *   with ar2 until 942 us, so it runs 942..1144 us;
 *   update (5 us) after both: 1144..1149 us. */
static void test_data_parallel_overlap(void **state)
{
  g_autoptr(sim_graph) g = sim_graph_new();
  sim_stream_id comp[2], comm[2];
  sim_task_id bwd1[2], bwd2[2];
  for (int d = 0; d < 2; d++) {
    g_autofree char *name = g_strdup_printf("gpu%d", d);
    sim_unit_id u = sim_graph_add_unit(g, SIM_PROC_DEVICE, name);
    comp[d] = sim_graph_add_stream(g, u, "compute");
    comm[d] = sim_graph_add_stream(g, u, "comm");
    sim_graph_add_compute(g, comp[d], "forward", "compute", SIM_US(100), 0, 0);
    bwd2[d] = sim_graph_add_compute(g, comp[d], "bwd2", "compute", SIM_US(40), 0, 0);
    bwd1[d] = sim_graph_add_compute(g, comp[d], "bwd1", "compute", SIM_US(60), 0, 0);
  }
  sim_task_id ar2 = sim_graph_add_collective(g, comm, 2, "ar2", 0, NULL, 8000000);
  sim_task_id ar1 = sim_graph_add_collective(g, comm, 2, "ar1", 0, NULL, 2000000);
  for (int d = 0; d < 2; d++) {
    sim_graph_depend(g, ar2, bwd2[d]);
    sim_graph_depend(g, ar1, bwd1[d]);
  }
  sim_task_id upd[2];
  for (int d = 0; d < 2; d++) {
    upd[d] = sim_graph_add_compute(g, comp[d], "update", "compute", SIM_US(5), 0, 0);
    sim_graph_depend(g, upd[d], ar1);
    sim_graph_depend(g, upd[d], ar2);
  }
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(sim_exec) x = sim_exec_new(e, g);
  sim_simple_comm net = {SIM_US(1), 10000000000ULL};
  sim_exec_set_comm(x, &sim_simple_comm_ops, &net);
  assert_true(sim_exec_run(x, NULL));
  assert_int_equal(sim_exec_task_start(x, ar2), SIM_US(140));
  assert_int_equal(sim_exec_task_end(x, ar2), SIM_US(942));
  assert_int_equal(sim_exec_task_start(x, ar1), SIM_US(942));
  assert_int_equal(sim_exec_task_end(x, ar1), SIM_US(1144));
  assert_int_equal(sim_exec_task_end(x, upd[1]), SIM_US(1149));
  assert_int_equal(sim_exec_stream_busy(x, comm[0]), SIM_US(802 + 202));
}

/* A point-to-point transfer between two devices: 1 us + 1 MB / 1 GB/s = 1001 us. */
static void test_transfer(void **state)
{
  g_autoptr(sim_graph) g = sim_graph_new();
  sim_unit_id a = sim_graph_add_unit(g, SIM_PROC_DEVICE, "a");
  sim_unit_id b = sim_graph_add_unit(g, SIM_PROC_DEVICE, "b");
  sim_stream_id sa = sim_graph_add_stream(g, a, "send");
  sim_stream_id sb = sim_graph_add_stream(g, b, "recv");
  sim_task_id t = sim_graph_add_transfer(g, sa, sb, "act", 1000000);
  sim_task_id d = sim_graph_add_delay(g, "wait", SIM_US(9));
  sim_graph_depend(g, d, t);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(sim_exec) x = sim_exec_new(e, g);
  sim_simple_comm net = {SIM_US(1), 1000000000ULL};
  sim_exec_set_comm(x, &sim_simple_comm_ops, &net);
  assert_true(sim_exec_run(x, NULL));
  assert_int_equal(sim_exec_task_end(x, t), SIM_US(1001));
  assert_int_equal(sim_exec_makespan(x), SIM_US(1010));
}

/* A communication model whose transfer asks for an event 1 ns before the transfer starts (a
 * bug), and one that keeps an error and stops the engine, as sim/net_adapter.c does. */
typedef struct {
  int line;          /* of the call into the past */
  GError *error;     /* what the failing model keeps */
} faulty_comm;

static void faulty_done(sim_engine *e, void *data, uint64_t arg)
{
  sim_exec_task_done(data, (sim_task_id)arg);
}

static void past_start(void *user, sim_exec *x, sim_task_id t)
{
  faulty_comm *c = user;
  sim_engine *e = sim_exec_engine(x);
  c->line = __LINE__ + 1;
  sim_engine_schedule_at(e, sim_engine_now(e) - SIM_NS(1), faulty_done, x, t);
}

static void failing_start(void *user, sim_exec *x, sim_task_id t)
{
  faulty_comm *c = user;
  if (!c->error)
    c->error = g_error_new(DT_ERROR, DT_ERROR_INPUT, "task '%s': no route",
                           sim_graph_task_name(sim_exec_graph(x), t));
  sim_engine_stop(sim_exec_engine(x));
}

static const GError *failing_error(void *user) { return ((faulty_comm *)user)->error; }

/* A compute task of 10 ns, then a transfer from the same device to another. */
static sim_graph *compute_then_transfer(void)
{
  sim_graph *g = sim_graph_new();
  sim_stream_id s0 = sim_graph_add_stream(g, sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu0"), "c");
  sim_stream_id s1 = sim_graph_add_stream(g, sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu1"), "c");
  sim_graph_add_compute(g, s0, "a", "compute", SIM_NS(10), 0, 0);
  sim_graph_add_transfer(g, s0, s1, "send", 1000);
  return g;
}

/* sim_exec_run() fails with the engine's error when the model asks for the past at 10 ns (the
 * transfer starts when a ends), naming the call; and with the model's own error, which it
 * hands over through sim_comm_ops.error. */
static void test_exec_reports_errors(void **state)
{
  static const sim_comm_ops past = {"past", past_start, NULL};
  static const sim_comm_ops failing = {"failing", failing_start, failing_error};
  g_autoptr(sim_graph) g = compute_then_transfer();
  faulty_comm c = {0, NULL};
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(sim_exec) x = sim_exec_new(e, g);
  sim_exec_set_comm(x, &past, &c);
  g_autoptr(GError) err = NULL;
  assert_false(sim_exec_run(x, &err));
  assert_non_null(err);
  assert_true(g_error_matches(err, DT_ERROR, DT_ERROR_INTERNAL));
  g_autofree char *want = g_strdup_printf("an event was scheduled at 9000 ps, in the past (the "
                                          "current time is 10000 ps), by "
                                          "tests/sim/test_taskgraph.c:%d", c.line);
  assert_string_equal(err->message, want);

  g_autoptr(sim_engine) f = sim_engine_new();
  g_autoptr(sim_exec) y = sim_exec_new(f, g);
  sim_exec_set_comm(y, &failing, &c);
  g_autoptr(GError) err2 = NULL;
  assert_false(sim_exec_run(y, &err2));
  assert_true(g_error_matches(err2, DT_ERROR, DT_ERROR_INPUT));
  assert_string_equal(err2->message, "task 'send': no route");
  /* The compute task ended at 10 ns; the transfer never did. */
  assert_int_equal(sim_exec_task_end(y, 0), SIM_NS(10));
  g_clear_error(&c.error);
}

static void test_cycle_reported(void **state)
{
  g_autoptr(sim_graph) g = sim_graph_new();
  sim_unit_id u = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu0");
  sim_stream_id s = sim_graph_add_stream(g, u, "compute");
  sim_task_id a = sim_graph_add_compute(g, s, "a", "compute", 1, 0, 0);
  sim_task_id b = sim_graph_add_compute(g, s, "b", "compute", 1, 0, 0);
  sim_task_id c = sim_graph_add_delay(g, "c", 1);
  sim_task_id d = sim_graph_add_delay(g, "d", 1);
  sim_graph_depend(g, a, b);   /* against stream order: a is first on the stream */
  sim_graph_depend(g, c, d);
  sim_graph_depend(g, d, c);   /* a cycle */
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(sim_exec) x = sim_exec_new(e, g);
  g_autoptr(GError) err = NULL;
  assert_false(sim_exec_run(x, &err));
  assert_non_null(err);
  assert_non_null(strstr(err->message, "4 of 4 tasks"));
  assert_non_null(strstr(err->message, "'c'"));
  /* a heads its stream and waits for b; b waits for the stream only; c and d for each other. */
  assert_non_null(strstr(err->message, "'a' (waits for 1 dependencies, 1 of 1 streams)"));
  assert_non_null(strstr(err->message, "'b' (waits for 0 dependencies, 0 of 1 streams)"));
  assert_non_null(strstr(err->message, "'c' (waits for 1 dependencies, 0 of 0 streams)"));
}

/* sim_graph_check: a graph that can run checks out; one whose dependencies contradict stream
 * order, one with a cycle of dependencies, and one with a task that depends on itself do not.
 * In the first bad graph a heads stream s and waits for b, which waits for a on s: 2 of 2
 * tasks stuck. In the second, c and d wait for each other and e, after d, waits for them: 3
 * of 3. */
static void test_graph_check(void **state)
{
  g_autoptr(GError) err = NULL;
  {
    g_autoptr(sim_graph) g = sim_graph_new();
    sim_unit_id u0 = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu0");
    sim_unit_id u1 = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu1");
    sim_stream_id c0 = sim_graph_add_stream(g, u0, "compute");
    sim_stream_id c1 = sim_graph_add_stream(g, u1, "compute");
    sim_stream_id m0 = sim_graph_add_stream(g, u0, "comm");
    sim_stream_id m1 = sim_graph_add_stream(g, u1, "comm");
    sim_task_id f0 = sim_graph_add_compute(g, c0, "f0", "compute", 5, 0, 0);
    sim_task_id f1 = sim_graph_add_compute(g, c1, "f1", "compute", 7, 0, 0);
    sim_task_id x = sim_graph_add_transfer(g, m0, m1, "x", 1000);
    sim_stream_id both[] = {m0, m1, m0};   /* a repeated member holds the stream once */
    sim_task_id r = sim_graph_add_collective(g, both, 3, "r", 0, NULL, 1000);
    sim_task_id b1 = sim_graph_add_compute(g, c1, "b1", "compute", 3, 0, 0);
    sim_task_id w = sim_graph_add_delay(g, "w", 2);
    sim_graph_depend(g, x, f0);
    sim_graph_depend(g, r, f1);
    sim_graph_depend(g, b1, x);
    sim_graph_depend(g, w, r);
    if (!sim_graph_check(g, &err))
      fail_msg("%s", err->message);
  }
  {
    g_autoptr(sim_graph) g = sim_graph_new();
    sim_stream_id s = sim_graph_add_stream(g, sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu0"), "c");
    sim_task_id a = sim_graph_add_compute(g, s, "a", "compute", 1, 0, 0);
    sim_task_id b = sim_graph_add_compute(g, s, "b", "compute", 1, 0, 0);
    sim_graph_depend(g, a, b);
    assert_false(sim_graph_check(g, &err));
    assert_int_equal(err->code, DT_ERROR_INTERNAL);
    assert_non_null(strstr(err->message, "2 of 2 tasks are on a cycle"));
    assert_non_null(strstr(err->message, "task 0 'a'"));
    g_clear_error(&err);
  }
  {
    g_autoptr(sim_graph) g = sim_graph_new();
    sim_task_id c = sim_graph_add_delay(g, "c", 1);
    sim_task_id d = sim_graph_add_delay(g, "d", 1);
    sim_task_id e = sim_graph_add_delay(g, "e", 1);
    sim_graph_depend(g, c, d);
    sim_graph_depend(g, d, c);
    sim_graph_depend(g, e, d);
    assert_false(sim_graph_check(g, &err));
    assert_non_null(strstr(err->message, "3 of 3 tasks are on a cycle"));
    g_clear_error(&err);
  }
  {
    g_autoptr(sim_graph) g = sim_graph_new();
    sim_task_id c = sim_graph_add_delay(g, "c", 1);
    sim_graph_depend(g, c, c);
    assert_false(sim_graph_check(g, &err));
    assert_non_null(strstr(err->message, "task 0 'c' depends on itself"));
  }
}

static uint64_t run_random_graph(void)
{
  g_autoptr(sim_graph) g = sim_graph_new();
  GRand *rng = g_rand_new_with_seed(3);
  sim_stream_id s[8];
  for (int i = 0; i < 8; i++)
    s[i] = sim_graph_add_stream(g, sim_graph_add_unit(g, SIM_PROC_DEVICE, "d"), "c");
  for (sim_task_id t = 0; t < 2000; t++) {
    sim_graph_add_compute(g, s[g_rand_int_range(rng, 0, 8)], "t", "compute",
                          g_rand_int_range(rng, 1, 100), 0, 0);
    if (t > 0)
      sim_graph_depend(g, t, g_rand_int_range(rng, 0, (gint32)t));
  }
  g_rand_free(rng);
  assert_true(sim_graph_check(g, NULL));   /* every dependency points back: no cycle */
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(sim_exec) x = sim_exec_new(e, g);
  assert_true(sim_exec_run(x, NULL));
  return sim_engine_trace_hash(e) ^ (uint64_t)sim_exec_makespan(x);
}

static void test_determinism(void **state)
{
  assert_int_equal(run_random_graph(), run_random_graph());
}

/* A graph large enough that its arrays take the huge-page path (2 MiB and more, grown by
 * moving pages): stream A runs N tasks of 3 ps, stream B N tasks of 5 ps, b_i after a_i. B is
 * the slower, so b_i starts at 3 + 5 i and the run ends at 3 + 5 N; a_i ends at 3 (i + 1). */
static void test_large_graph(void **state)
{
  enum { N = 100000 };
  g_autoptr(sim_graph) g = sim_graph_new();
  sim_unit_id u = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu0");
  sim_stream_id sa = sim_graph_add_stream(g, u, "a"), sb = sim_graph_add_stream(g, u, "b");
  const char *na = sim_graph_intern(g, "a"), *nb = sim_graph_intern(g, "b");
  for (uint32_t i = 0; i < N; i++) {
    sim_task_id a = sim_graph_add_compute(g, sa, na, "compute", 3, 0, 0);
    sim_task_id b = sim_graph_add_compute(g, sb, nb, "compute", 5, 0, 0);
    sim_graph_depend(g, b, a);
  }
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(sim_exec) x = sim_exec_new(e, g);
  assert_true(sim_exec_run(x, NULL));
  assert_int_equal(sim_graph_n_tasks(g), 2 * N);
  for (uint32_t i = 0; i < N; i += 9973) {
    assert_int_equal(sim_exec_task_end(x, 2 * i), 3 * (i + 1));
    assert_int_equal(sim_exec_task_start(x, 2 * i + 1), 3 + 5 * (sim_time_ps)i);
  }
  assert_int_equal(sim_exec_task_end(x, 2 * N - 1), 3 + 5 * (sim_time_ps)N);
  assert_int_equal(sim_exec_makespan(x), 3 + 5 * (sim_time_ps)N);
  assert_int_equal(sim_exec_stream_busy(x, sa), 3 * (sim_time_ps)N);
  assert_int_equal(sim_exec_stream_busy(x, sb), 5 * (sim_time_ps)N);
  assert_string_equal(sim_graph_task_name(g, 2 * N - 1), "b");
}

static double counter_values[8];
static int n_counter_values;

static void on_counter(void *user, sim_proc_id proc, const char *name, sim_time_ps at, double v)
{
  if (n_counter_values < 8)
    counter_values[n_counter_values++] = v;
}

static const sim_observer_ops memory_ops = {.counter = on_counter};

/* A device holding 1 GiB resident: a forward pass saves 2 GiB, the backward pass frees it:
 * the memory counter reads 3 GiB then 1 GiB. */
static void test_memory_counter(void **state)
{
  g_autoptr(sim_graph) g = sim_graph_new();
  sim_unit_id u = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu0");
  sim_stream_id s = sim_graph_add_stream(g, u, "compute");
  sim_graph_set_unit_memory(g, u, 1ULL << 30);
  sim_task_id f = sim_graph_add_compute(g, s, "f", "forward", 10, 0, 0);
  sim_task_id b = sim_graph_add_compute(g, s, "b", "backward", 10, 0, 0);
  sim_graph_add_memory_delta(g, f, 2LL << 30);
  sim_graph_add_memory_delta(g, b, -(1LL << 30));
  sim_graph_add_memory_delta(g, b, -(1LL << 30));   /* deltas add up */
  g_autoptr(sim_engine) e = sim_engine_new();
  sim_engine_add_observer(e, &memory_ops, NULL);
  g_autoptr(sim_exec) x = sim_exec_new(e, g);
  n_counter_values = 0;
  assert_true(sim_exec_run(x, NULL));
  assert_int_equal(n_counter_values, 2);
  assert_float_equal(counter_values[0], 3.0, 1e-12);
  assert_float_equal(counter_values[1], 1.0, 1e-12);
}

/* Deltas of every size and kind of task add up exactly: a compute task's 1 GiB and 1.5 GiB
 * (2.5 GiB, past 32 bits), a transfer's 0.25 GiB, then a compute task's 1 byte and -2 bytes:
 * the sender's counter reads 2.5, 2.75 and 2.75 GiB - 1 byte. */
static void test_memory_deltas_add_up(void **state)
{
  g_autoptr(sim_graph) g = sim_graph_new();
  sim_unit_id u = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu0");
  sim_unit_id v = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu1");
  sim_stream_id s = sim_graph_add_stream(g, u, "compute");
  sim_stream_id r = sim_graph_add_stream(g, v, "recv");
  sim_task_id f = sim_graph_add_compute(g, s, "f", "forward", 10, 0, 0);
  sim_task_id t = sim_graph_add_transfer(g, s, r, "act", 1000);
  sim_task_id c = sim_graph_add_compute(g, s, "c", "forward", 10, 0, 0);
  sim_graph_add_memory_delta(g, f, 1LL << 30);
  sim_graph_add_memory_delta(g, f, 3LL << 29);
  sim_graph_add_memory_delta(g, t, 1LL << 28);
  sim_graph_add_memory_delta(g, c, 1);
  sim_graph_add_memory_delta(g, c, -2);
  g_autoptr(sim_engine) e = sim_engine_new();
  sim_engine_add_observer(e, &memory_ops, NULL);
  g_autoptr(sim_exec) x = sim_exec_new(e, g);
  sim_simple_comm net = {SIM_US(1), 1000000000ULL};
  sim_exec_set_comm(x, &sim_simple_comm_ops, &net);
  n_counter_values = 0;
  assert_true(sim_exec_run(x, NULL));
  assert_int_equal(n_counter_values, 3);
  assert_float_equal(counter_values[0], 2.5, 1e-15);
  assert_float_equal(counter_values[1], 2.75, 1e-15);
  assert_float_equal(counter_values[2], 2.75 - 1.0 / (1 << 30), 1e-15);
}

/* Spans ended on the "shown" stream's track: name, start and end. */
typedef struct {
  sim_track_id track;
  int n;
  char names[4][8];
  sim_time_ps start_ps[4], end_ps[4];
} shown_spans;

static void on_span_end(void *user, const sim_span *span)
{
  shown_spans *s = user;
  if (span->track != s->track || s->n >= 4)
    return;
  g_strlcpy(s->names[s->n], span->name, sizeof s->names[0]);
  s->start_ps[s->n] = span->start_ps;
  s->end_ps[s->n] = span->end_ps;
  s->n++;
}

static const sim_observer_ops shown_ops = {.span_end = on_span_end};

/* Two tasks on no stream, shown on stream "shown" of gpu0: p (30 ns) from 0, q (15 ns) after
 * "a" on "compute" (0..10 ns), so 10..25 ns. They overlap, and neither holds the stream: "b",
 * queued on "shown" itself, runs at once, 0..5 ns. The trace gets the spans b 0..5, q 10..25
 * and p 0..30 on the stream's track, in the order they end. */
static void test_show_on(void **state)
{
  g_autoptr(sim_graph) g = sim_graph_new();
  sim_unit_id u = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu0");
  sim_stream_id compute = sim_graph_add_stream(g, u, "compute");
  sim_stream_id shown = sim_graph_add_stream(g, u, "shown");
  sim_task_id a = sim_graph_add_compute(g, compute, "a", "compute", SIM_NS(10), 0, 0);
  sim_task_id p = sim_graph_add_delay(g, "p", SIM_NS(30));
  sim_task_id q = sim_graph_add_delay(g, "q", SIM_NS(15));
  sim_graph_depend(g, q, a);
  sim_task_id b = sim_graph_add_compute(g, shown, "b", "compute", SIM_NS(5), 0, 0);
  sim_graph_show_on(g, p, shown);
  sim_graph_show_on(g, q, shown);
  g_autoptr(sim_engine) e = sim_engine_new();
  shown_spans spans = {0};
  sim_engine_add_observer(e, &shown_ops, &spans);
  g_autoptr(sim_exec) x = sim_exec_new(e, g);
  spans.track = sim_exec_stream_track(x, shown);
  assert_true(sim_exec_run(x, NULL));
  assert_int_equal(sim_exec_task_start(x, b), 0);
  assert_int_equal(sim_exec_task_end(x, q), SIM_NS(25));
  assert_int_equal(sim_exec_makespan(x), SIM_NS(30));
  /* The stream was busy with b only. */
  assert_int_equal(sim_exec_stream_busy(x, shown), SIM_NS(5));
  assert_int_equal(spans.n, 3);
  assert_string_equal(spans.names[0], "b");
  assert_string_equal(spans.names[1], "q");
  assert_int_equal(spans.start_ps[1], SIM_NS(10));
  assert_int_equal(spans.end_ps[1], SIM_NS(25));
  assert_string_equal(spans.names[2], "p");
  assert_int_equal(spans.start_ps[2], 0);
  assert_int_equal(spans.end_ps[2], SIM_NS(30));
}

/* Names: the graph's copy of a name is one pointer per text, whether a task is given the copy
 * sim_graph_intern() handed out or a buffer with the same text; a buffer with other text, even
 * one that held the same text before, gets its own name. 5000 names (more than the name
 * tables' first 1024 slots) so that both tables grow and probe past taken slots. */
static void test_interned_names(void **state)
{
  g_autoptr(sim_graph) g = sim_graph_new();
  sim_unit_id u = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu0");
  sim_stream_id s = sim_graph_add_stream(g, u, "compute");
  enum { N = 5000 };
  g_autofree const char **copy = g_new(const char *, N);
  char text[32];
  for (int i = 0; i < N; i++) {
    g_snprintf(text, sizeof text, "forward mb%d", i);
    copy[i] = sim_graph_intern(g, text);
    assert_string_equal(copy[i], text);
    assert_ptr_not_equal(copy[i], text);
  }
  for (int i = 0; i < N; i++) {
    sim_task_id a = sim_graph_add_compute(g, s, copy[i], "forward", 1, 0, 0);
    g_snprintf(text, sizeof text, "forward mb%d", i);
    sim_task_id b = sim_graph_add_compute(g, s, text, "forward", 1, 0, 0);
    assert_ptr_equal(sim_graph_task_name(g, a), copy[i]);
    assert_ptr_equal(sim_graph_task_name(g, b), copy[i]);
    /* The same buffer, now with another text. */
    g_snprintf(text, sizeof text, "backward mb%d", i);
    sim_task_id c = sim_graph_add_compute(g, s, text, "backward", 1, 0, 0);
    assert_string_equal(sim_graph_task_name(g, c), text);
  }
  assert_ptr_equal(sim_graph_intern(g, "forward mb7"), copy[7]);
}

/* Appended graphs: a graph of one compute task (7 ns), then twice a graph of two devices where
 * gpu0 computes a (10 ns), sends 1000 bytes to gpu1 (simple model: 1 ns + 1000 B at 1e12 B/s
 * = 2 ns), gpu1 computes b (20 ns) and a delay d (5 ns, shown on gpu1's stream) follows.
 * Each copy keeps its timing (a ends at 10 ns, the transfer at 12, b at 32, d at 37), its
 * names after the prefix, its category and size, its dependencies (3 a copy) and its shown
 * task, which does not hold the stream (busy 22 ns: the transfer and b). */
/* Tasks that take the same (duration, FLOPs, bytes) share what the graph keeps of it: slowing
 * one device (x1.5, 10 ns -> 15 ns) must not slow the same layer on the other, and tasks equal
 * in everything but their name or algorithm keep their own. Two devices, one task each, no
 * dependencies: the ends are the durations. */
static void test_shared_loads(void **state)
{
  static const int algo_a = 0, algo_b = 0;   /* two distinct addresses stand for algorithms */
  g_autoptr(sim_graph) g = sim_graph_new();
  sim_unit_id u0 = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu0");
  sim_unit_id u1 = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu1");
  sim_stream_id s0 = sim_graph_add_stream(g, u0, "compute");
  sim_stream_id s1 = sim_graph_add_stream(g, u1, "compute");
  sim_task_id a0 = sim_graph_add_compute(g, s0, "layer", "forward", SIM_NS(10), 7, 9);
  sim_task_id a1 = sim_graph_add_compute(g, s1, "layer", "forward", SIM_NS(10), 7, 9);
  sim_task_id b1 = sim_graph_add_compute(g, s1, "other", "forward", SIM_NS(10), 7, 9);
  sim_stream_id both[] = {s0, s1};
  sim_task_id c0 = sim_graph_add_collective(g, both, 2, "ar", 1,
                                            (const comm_coll_algorithm *)&algo_a, 9);
  sim_task_id c1 = sim_graph_add_collective(g, both, 2, "ar", 1,
                                            (const comm_coll_algorithm *)&algo_b, 9);
  assert_int_equal(sim_graph_scale_unit_compute(g, u0, 1.5), 1);
  assert_int_equal(sim_graph_task_duration(g, a0), SIM_NS(15));
  assert_int_equal(sim_graph_task_duration(g, a1), SIM_NS(10));
  assert_int_equal(sim_graph_task_flops(g, a0), 7);
  assert_int_equal(sim_graph_task_bytes(g, a0), 9);
  assert_string_equal(sim_graph_task_name(g, a0), "layer");
  assert_string_equal(sim_graph_task_name(g, b1), "other");
  assert_ptr_equal(sim_graph_task_algorithm(g, c0), &algo_a);
  assert_ptr_equal(sim_graph_task_algorithm(g, c1), &algo_b);
  assert_null(sim_graph_task_algorithm(g, a0));
  assert_int_equal(sim_graph_task_duration(g, c0), 0);
  assert_int_equal(sim_graph_task_flops(g, c0), 0);
  /* gpu0: 15 ns; gpu1: 10 + 10 ns; then the two collectives, each 2(n-1) = 2 steps of 1 ns +
   * 9 B / (2 x 1 B/ns) = 5.5 ns: 11 ns apiece, from 20 ns. */
  sim_simple_comm comm = {SIM_NS(1), 1000000000ull};
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(sim_exec) x = sim_exec_new(e, g);
  sim_exec_set_comm(x, &sim_simple_comm_ops, &comm);
  assert_true(sim_exec_run(x, NULL));
  assert_int_equal(sim_exec_task_end(x, a0), SIM_NS(15));
  assert_int_equal(sim_exec_task_end(x, a1), SIM_NS(10));
  assert_int_equal(sim_exec_task_end(x, b1), SIM_NS(20));
  assert_int_equal(sim_exec_task_end(x, c0), SIM_NS(31));
  assert_int_equal(sim_exec_task_end(x, c1), SIM_NS(42));
}

static void test_append(void **state)
{
  g_autoptr(sim_graph) src = sim_graph_new();
  sim_unit_id u0 = sim_graph_add_unit(src, SIM_PROC_DEVICE, "gpu0");
  sim_unit_id u1 = sim_graph_add_unit(src, SIM_PROC_DEVICE, "gpu1");
  sim_stream_id c0 = sim_graph_add_stream(src, u0, "compute");
  sim_stream_id c1 = sim_graph_add_stream(src, u1, "compute");
  sim_task_id a = sim_graph_add_compute(src, c0, "a", "forward", SIM_NS(10), 7, 0);
  sim_task_id t = sim_graph_add_transfer(src, c0, c1, "t", 1000);
  sim_task_id b = sim_graph_add_compute(src, c1, "b", "backward", SIM_NS(20), 0, 0);
  sim_task_id d = sim_graph_add_delay(src, "d", SIM_NS(5));
  sim_graph_show_on(src, d, c1);
  sim_graph_depend(src, t, a);
  sim_graph_depend(src, b, t);
  sim_graph_depend(src, d, b);
  sim_graph_add_memory_delta(src, a, 64);

  g_autoptr(sim_graph) g = sim_graph_new();
  sim_unit_id h = sim_graph_add_unit(g, SIM_PROC_HOST, "host");
  sim_stream_id hs = sim_graph_add_stream(g, h, "compute");
  sim_task_id x0 = sim_graph_add_compute(g, hs, "x", "compute", SIM_NS(7), 0, 0);
  sim_graph_offsets o1, o2;
  sim_graph_append(g, src, "job a: ", &o1);
  sim_graph_append(g, src, "job b: ", &o2);
  assert_int_equal(o1.unit_base, 1);
  assert_int_equal(o1.stream_base, 1);
  assert_int_equal(o1.task_base, 1);
  assert_int_equal(o2.unit_base, 3);
  assert_int_equal(o2.stream_base, 3);
  assert_int_equal(o2.task_base, 5);
  assert_int_equal(sim_graph_n_units(g), 5);
  assert_int_equal(sim_graph_n_tasks(g), 9);
  assert_int_equal(sim_graph_n_edges(g), 6);
  assert_string_equal(sim_graph_unit_name(g, 4), "job b: gpu1");
  assert_int_equal(sim_graph_stream_unit(g, o2.stream_base + c1), o2.unit_base + u1);
  assert_string_equal(sim_graph_task_name(g, o2.task_base + b), "b");
  assert_string_equal(sim_graph_task_category(g, o2.task_base + t), "p2p");
  assert_int_equal(sim_graph_task_bytes(g, o2.task_base + t), 1000);
  assert_int_equal(sim_graph_task_flops(g, o1.task_base + a), 7);
  const sim_stream_id *m;
  assert_int_equal(sim_graph_task_members(g, o2.task_base + t, &m), 2);
  assert_int_equal(m[0], o2.stream_base + c0);
  assert_int_equal(m[1], o2.stream_base + c1);
  assert_true(sim_graph_check(g, NULL));

  sim_simple_comm comm = {SIM_NS(1), 1000000000000ull};
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(sim_exec) x = sim_exec_new(e, g);
  sim_exec_set_comm(x, &sim_simple_comm_ops, &comm);
  assert_true(sim_exec_run(x, NULL));
  assert_int_equal(sim_exec_task_end(x, x0), SIM_NS(7));
  const sim_graph_offsets *at[] = {&o1, &o2};
  for (int i = 0; i < 2; i++) {
    assert_int_equal(sim_exec_task_end(x, at[i]->task_base + a), SIM_NS(10));
    assert_int_equal(sim_exec_task_end(x, at[i]->task_base + t), SIM_NS(12));
    assert_int_equal(sim_exec_task_end(x, at[i]->task_base + b), SIM_NS(32));
    assert_int_equal(sim_exec_task_end(x, at[i]->task_base + d), SIM_NS(37));
    assert_int_equal(sim_exec_stream_busy(x, at[i]->stream_base + c1), SIM_NS(22));
  }
}

/* A plan longer than the clock: a first task whose duration saturates (SIM_TIME_MAX), then a
 * chain of 50 zero-length tasks on the same stream. Nothing may run at SIM_TIME_MAX: the run
 * ends there with the user's error (the inputs ask too much), not with the watchdog's internal
 * one after the chain has run at one instant (its limit set to 10 events here). */
static void test_clock_overflow(void **state)
{
  (void)state;
  g_autoptr(sim_graph) g = sim_graph_new();
  sim_unit_id u = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu0");
  sim_stream_id s = sim_graph_add_stream(g, u, "compute");
  sim_graph_add_compute(g, s, "long", "compute", SIM_TIME_MAX, 0, 0);
  for (int i = 0; i < 50; i++)
    sim_graph_add_compute(g, s, "after", "compute", 0, 0, 0);
  g_autoptr(sim_engine) e = sim_engine_new();
  sim_engine_set_stall_limit(e, 10);
  g_autoptr(sim_exec) x = sim_exec_new(e, g);
  g_autoptr(GError) err = NULL;
  assert_false(sim_exec_run(x, &err));
  assert_non_null(err);
  assert_int_equal(err->code, DT_ERROR_INPUT);
  assert_non_null(strstr(err->message, "overflows the clock"));
  assert_false(sim_engine_stalled(e));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chain),          cmocka_unit_test(test_stream_order),
      cmocka_unit_test(test_data_parallel_overlap), cmocka_unit_test(test_transfer),
      cmocka_unit_test(test_cycle_reported), cmocka_unit_test(test_graph_check), cmocka_unit_test(test_determinism),
      cmocka_unit_test(test_memory_counter),
      cmocka_unit_test(test_memory_deltas_add_up), cmocka_unit_test(test_show_on),
      cmocka_unit_test(test_interned_names), cmocka_unit_test(test_large_graph),
      cmocka_unit_test(test_reserve),
      cmocka_unit_test(test_reserve_members),
      cmocka_unit_test(test_categories), cmocka_unit_test(test_exec_reports_errors),
      cmocka_unit_test(test_append), cmocka_unit_test(test_clock_overflow),
      cmocka_unit_test(test_shared_loads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
