/* Chrome trace round trip: run a small graph with the writer attached, parse the file back
 * with json-glib, and check structure, metadata, nesting per thread, and that the slice
 * durations on each stream add up to the stream's simulated busy time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "chrome.h"
#include "util.h"
#include "taskgraph.h"

typedef struct {
  char *dir;
  char *path;
} fixture;

static int setup(void **state)
{
  fixture *f = g_new0(fixture, 1);
  f->dir = g_dir_make_tmp("dtsim-trace-XXXXXX", NULL);
  f->path = g_build_filename(f->dir, "t.json", NULL);
  *state = f;
  return 0;
}

static int teardown(void **state)
{
  fixture *f = *state;
  g_unlink(f->path);
  g_rmdir(f->dir);
  g_free(f->path);
  g_free(f->dir);
  g_free(f);
  return 0;
}

/* Microseconds with 3 decimals back to integer nanoseconds, exactly. */
static int64_t ns_of(JsonObject *o, const char *key)
{
  JsonNode *n = json_object_get_member(o, key);
  return (int64_t)llround(json_node_get_double(n) * 1000.0);
}

/* Two devices: three kernels on the compute streams and one transfer from gpu0's send stream
 * to gpu1's receive stream, which gpu1's last kernel waits for. */
static void build_and_trace(const char *path, sim_time_ps busy_out[4])
{
  g_autoptr(sim_graph) g = sim_graph_new();
  sim_unit_id u0 = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu0");
  sim_unit_id u1 = sim_graph_add_unit(g, SIM_PROC_DEVICE, "gpu1");
  sim_stream_id c0 = sim_graph_add_stream(g, u0, "compute");
  sim_stream_id c1 = sim_graph_add_stream(g, u1, "compute");
  sim_stream_id s0 = sim_graph_add_stream(g, u0, "send");
  sim_stream_id r1 = sim_graph_add_stream(g, u1, "recv");
  sim_task_id k1 = sim_graph_add_compute(g, c0, "conv1 \"fwd\"", "compute", SIM_NS(1500), 10, 20);
  sim_graph_add_compute(g, c0, "conv2", "compute", SIM_NS(2500), 0, 0);
  sim_task_id t = sim_graph_add_transfer(g, s0, r1, "act", 1000);
  sim_graph_depend(g, t, k1);
  sim_task_id k3 = sim_graph_add_compute(g, c1, "fc", "compute", SIM_NS(700), 0, 0);
  sim_graph_depend(g, k3, t);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(GError) err = NULL;
  g_autoptr(trace_chrome) tr = trace_chrome_new(path, &err);
  assert_non_null(tr);
  trace_chrome_attach(tr, e);
  trace_chrome_set_info(tr, "command", "test");
  g_autoptr(sim_exec) x = sim_exec_new(e, g);
  sim_simple_comm net = {SIM_NS(100), 1000000000ULL}; /* 1000 B at 1 GB/s = 1 us, +100 ns */
  sim_exec_set_comm(x, &sim_simple_comm_ops, &net);
  assert_true(sim_exec_run(x, &err));
  /* The file appears only on close. */
  assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
  assert_true(trace_chrome_close(tr, &err));
  for (sim_stream_id s = 0; s < 4; s++)
    busy_out[s] = sim_exec_stream_busy(x, s);
}

static void test_round_trip(void **state)
{
  fixture *f = *state;
  sim_time_ps busy[4];
  build_and_trace(f->path, busy);
  g_autoptr(JsonParser) p = json_parser_new();
  g_autoptr(GError) err = NULL;
  assert_true(json_parser_load_from_file(p, f->path, &err));
  JsonObject *root = json_node_get_object(json_parser_get_root(p));
  JsonArray *ev = json_object_get_array_member(root, "traceEvents");
  guint n = json_array_get_length(ev);
  assert_true(n > 0);
  assert_string_equal(json_object_get_string_member(
                          json_object_get_object_member(root, "otherData"), "command"), "test");

  gboolean seen_non_meta = FALSE, saw_gpu1 = FALSE, saw_flow_s = FALSE, saw_flow_f = FALSE;
  int64_t busy_ns[8] = {0};  /* by tid (1..4 are the four streams' first lanes) */
  int x_count = 0;
  /* Per (pid, tid): intervals, to check nesting. */
  GHashTable *by_thread = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                                (GDestroyNotify)g_array_unref);
  for (guint i = 0; i < n; i++) {
    JsonObject *o = json_array_get_object_element(ev, i);
    const char *ph = json_object_get_string_member(o, "ph");
    if (strcmp(ph, "M") == 0) {
      assert_false(seen_non_meta); /* metadata first */
      const char *what = json_object_get_string_member(o, "name");
      if (strcmp(what, "process_name") == 0 &&
          strcmp(json_object_get_string_member(json_object_get_object_member(o, "args"), "name"),
                 "gpu1") == 0)
        saw_gpu1 = TRUE;
      continue;
    }
    seen_non_meta = TRUE;
    if (strcmp(ph, "X") == 0) {
      x_count++;
      int64_t ts = ns_of(o, "ts"), dur = ns_of(o, "dur");
      gint64 tid = json_object_get_int_member(o, "tid");
      g_autofree char *key = g_strdup_printf("%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT,
                                             json_object_get_int_member(o, "pid"), tid);
      GArray *iv = g_hash_table_lookup(by_thread, key);
      if (!iv) {
        iv = g_array_new(FALSE, FALSE, sizeof(int64_t));
        g_hash_table_insert(by_thread, g_strdup(key), iv);
      }
      int64_t pair[2] = {ts, ts + dur};
      g_array_append_vals(iv, pair, 2);
      if (tid >= 1 && tid <= 4)
        busy_ns[tid] += dur;
      if (strcmp(json_object_get_string_member(o, "name"), "conv1 \"fwd\"") == 0) {
        JsonObject *args = json_object_get_object_member(o, "args");
        assert_int_equal(json_object_get_int_member(args, "flops"), 10);
        assert_int_equal(dur, 1500);
      }
    } else if (strcmp(ph, "s") == 0) {
      saw_flow_s = TRUE;
    } else if (strcmp(ph, "f") == 0) {
      saw_flow_f = TRUE;
    }
  }
  assert_true(saw_gpu1);
  assert_true(saw_flow_s && saw_flow_f);
  /* 3 kernels + the transfer on both of its streams. */
  assert_int_equal(x_count, 5);
  /* Slice sums equal busy time: compute0 = 1500 + 2500 ns; send0 = recv1 = 1100 ns; fc 700. */
  assert_int_equal(busy_ns[1], busy[0] / 1000);
  assert_int_equal(busy_ns[1], 4000);
  assert_int_equal(busy_ns[2], 700);
  assert_int_equal(busy_ns[3], 1100);
  assert_int_equal(busy_ns[4], busy[3] / 1000);
  /* Nesting: on each thread any two slices are disjoint or one contains the other. */
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, by_thread);
  while (g_hash_table_iter_next(&it, &k, &v)) {
    GArray *iv = v;
    const int64_t *a = (const int64_t *)iv->data;
    for (guint i = 0; i < iv->len / 2; i++)
      for (guint j = 0; j < iv->len / 2; j++) {
        if (i == j)
          continue;
        gboolean disjoint = a[2 * i + 1] <= a[2 * j] || a[2 * j + 1] <= a[2 * i];
        gboolean nested = a[2 * i] <= a[2 * j] && a[2 * j + 1] <= a[2 * i + 1];
        gboolean nested2 = a[2 * j] <= a[2 * i] && a[2 * i + 1] <= a[2 * j + 1];
        assert_true(disjoint || nested || nested2);
      }
  }
  g_hash_table_destroy(by_thread);
}

/* Overlapping spans on one track go to separate lanes, each of which nests. */
static void open_two(sim_engine *e, void *data, uint64_t arg)
{
  sim_track_id track = (sim_track_id)arg;
  uint64_t *ids = data;
  if (sim_engine_now(e) == 0)
    ids[0] = sim_engine_span_begin(e, track, "flow a", "flow", 1, 0);
  else
    ids[1] = sim_engine_span_begin(e, track, "flow b", "flow", 1, 0);
}

static void close_one(sim_engine *e, void *data, uint64_t arg) { sim_engine_span_end(e, arg); }

static void test_lanes(void **state)
{
  fixture *f = *state;
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(trace_chrome) tr = trace_chrome_new(f->path, NULL);
  trace_chrome_attach(tr, e);
  sim_proc_id p = sim_engine_add_proc(e, SIM_PROC_LINK, "link0", 0);
  sim_track_id t = sim_engine_add_track(e, p, "up", 0);
  uint64_t ids[2] = {0};
  sim_engine_schedule_at(e, 0, open_two, ids, t);        /* a: 0..10 ns */
  sim_engine_schedule_at(e, SIM_NS(5), open_two, ids, t); /* b: 5..15 ns: overlaps a */
  sim_engine_run_until(e, SIM_NS(5));
  sim_engine_schedule_at(e, SIM_NS(10), close_one, NULL, ids[0]);
  sim_engine_schedule_at(e, SIM_NS(15), close_one, NULL, ids[1]);
  sim_engine_run(e);
  assert_true(trace_chrome_close(tr, NULL));
  g_autofree char *text = NULL;
  assert_true(g_file_get_contents(f->path, &text, NULL, NULL));
  assert_non_null(strstr(text, "\"name\":\"up #2\""));
  g_autoptr(JsonParser) jp = json_parser_new();
  assert_true(json_parser_load_from_data(jp, text, -1, NULL));
}

/* Two identical runs give byte-identical files. */
static void test_deterministic(void **state)
{
  fixture *f = *state;
  sim_time_ps busy[4];
  build_and_trace(f->path, busy);
  g_autofree char *a = NULL, *b = NULL;
  assert_true(g_file_get_contents(f->path, &a, NULL, NULL));
  g_unlink(f->path);
  build_and_trace(f->path, busy);
  assert_true(g_file_get_contents(f->path, &b, NULL, NULL));
  assert_string_equal(a, b);
}

/* Sampling: with one process of each kind, the second device and everything on it is left out,
 * and a counter of the first device stays. */
static void test_sampling(void **state)
{
  fixture *f = *state;
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(trace_chrome) tr = trace_chrome_new(f->path, NULL);
  trace_chrome_set_max_procs(tr, 1);
  trace_chrome_attach(tr, e);
  sim_proc_id p0 = sim_engine_add_proc(e, SIM_PROC_DEVICE, "dev-a", 0);
  sim_proc_id p1 = sim_engine_add_proc(e, SIM_PROC_DEVICE, "dev-b", 1);
  sim_proc_id l0 = sim_engine_add_proc(e, SIM_PROC_LINK, "link-a", 0);
  sim_track_id t0 = sim_engine_add_track(e, p0, "compute", 0);
  sim_track_id t1 = sim_engine_add_track(e, p1, "compute", 0);
  sim_engine_add_track(e, l0, "up", 0);
  sim_engine_span_end(e, sim_engine_span_begin(e, t0, "kept", "compute", 0, 0));
  sim_engine_span_end(e, sim_engine_span_begin(e, t1, "dropped", "compute", 0, 0));
  sim_engine_counter(e, p0, "mem", 1);
  sim_engine_counter(e, p1, "mem", 2);
  assert_int_equal(trace_chrome_hidden_procs(tr), 1);
  assert_true(trace_chrome_close(tr, NULL));
  g_autofree char *text = NULL;
  assert_true(g_file_get_contents(f->path, &text, NULL, NULL));
  assert_non_null(strstr(text, "\"kept\""));
  assert_non_null(strstr(text, "link-a"));
  assert_null(strstr(text, "dropped"));
  assert_null(strstr(text, "dev-b"));
  assert_int_equal(trace_chrome_events(tr), 2); /* one slice, one counter */
}

static void test_format_us(void **state)
{
  g_autoptr(GString) s = g_string_new(NULL);
  trace__us(s, 1234567891); /* 1234567891 ps = 1234.567 us (sub-ns dropped) */
  assert_string_equal(s->str, "1234.567");
  g_string_truncate(s, 0);
  trace__us(s, 999);
  assert_string_equal(s->str, "0.000");
  g_string_truncate(s, 0);
  dt_json_string(s, "a\"b\\c\n");
  assert_string_equal(s->str, "\"a\\\"b\\\\c\\n\"");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lanes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_deterministic, setup, teardown),
      cmocka_unit_test_setup_teardown(test_sampling, setup, teardown),
      cmocka_unit_test(test_format_us),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
