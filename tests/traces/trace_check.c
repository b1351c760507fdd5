/* A strict checker of Chrome trace files (Trace Event Format, JSON object form), as Perfetto
 * and chrome://tracing read them. Usage: trace_check FILE.json. Prints one line: "ok FILE: N
 * events" and exits 0, or the first problem and exits 1.
 *
 * Checks: the file is one JSON object with a "traceEvents" array; every event has a known phase
 * ("X", "M", "C", "s", "f"), integer pid and tid where the phase needs them, and ts (and dur)
 * as non-negative numbers in microseconds with at most nanosecond resolution (three decimals);
 * every pid used has a process_name metadata event, and metadata comes before other events;
 * complete slices ("X") of one thread nest (a slice that starts inside another ends inside it);
 * every flow start and end lies inside a slice of its own thread (start <= ts <= start + dur,
 * as the viewers bind them) and every flow id has one start and one end. */
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  int64_t start_ns, end_ns;
} slice;

static int fail(const char *path, const char *what, gint64 index)
{
  printf("FAIL %s: event %" G_GINT64_FORMAT ": %s\n", path, index, what);
  return 1;
}

/* Microseconds as written (e.g. 1234.567) to whole nanoseconds; FALSE when not a multiple of
 * a nanosecond or negative. */
static gboolean to_ns(JsonNode *n, int64_t *out)
{
  if (!n || json_node_get_node_type(n) != JSON_NODE_VALUE)
    return FALSE;
  GType t = json_node_get_value_type(n);
  if (t != G_TYPE_DOUBLE && t != G_TYPE_INT64)
    return FALSE;
  double us = json_node_get_double(n);
  double ns = us * 1000.0;
  double r = round(ns);
  if (!(us >= 0) || fabs(ns - r) > 1e-3 * MAX(1.0, fabs(ns)) * 1e-6 + 1e-6)
    return FALSE;
  *out = (int64_t)r;
  return TRUE;
}

static guint64 key_of(gint64 pid, gint64 tid)
{
  return ((guint64)pid << 32) ^ (guint64)tid;
}

static int by_start(gconstpointer a, gconstpointer b)
{
  const slice *x = a, *y = b;
  if (x->start_ns != y->start_ns)
    return x->start_ns < y->start_ns ? -1 : 1;
  return x->end_ns > y->end_ns ? -1 : x->end_ns < y->end_ns; /* longer (outer) first */
}

static gboolean inside(GArray *slices, int64_t ts)
{
  for (guint i = 0; slices && i < slices->len; i++) {
    const slice *s = &g_array_index(slices, slice, i);
    if (s->start_ns <= ts && ts <= s->end_ns)
      return TRUE;
  }
  return FALSE;
}

int main(int argc, char **argv)
{
  if (argc != 2) {
    fprintf(stderr, "usage: trace_check FILE.json\n");
    return 2;
  }
  const char *path = argv[1];
  g_autoptr(JsonParser) parser = json_parser_new();
  g_autoptr(GError) error = NULL;
  if (!json_parser_load_from_file(parser, path, &error)) {
    printf("FAIL %s: not JSON: %s\n", path, error->message);
    return 1;
  }
  JsonNode *root = json_parser_get_root(parser);
  if (!JSON_NODE_HOLDS_OBJECT(root))
    return fail(path, "the root is not an object", -1);
  JsonObject *top = json_node_get_object(root);
  JsonNode *evn = json_object_get_member(top, "traceEvents");
  if (!evn || !JSON_NODE_HOLDS_ARRAY(evn))
    return fail(path, "no traceEvents array", -1);
  JsonArray *events = json_node_get_array(evn);
  guint n = json_array_get_length(events);
  g_autoptr(GHashTable) named = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  g_autoptr(GHashTable) slices = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
                                                       (GDestroyNotify)g_array_unref);
  g_autoptr(GHashTable) flows = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  g_autoptr(GArray) flow_events = g_array_new(FALSE, FALSE, sizeof(guint));
  gboolean seen_other = FALSE;
  g_autoptr(GArray) pids = g_array_new(FALSE, FALSE, sizeof(gint64));
  for (guint i = 0; i < n; i++) {
    JsonNode *en = json_array_get_element(events, i);
    if (!JSON_NODE_HOLDS_OBJECT(en))
      return fail(path, "not an object", i);
    JsonObject *e = json_node_get_object(en);
    const char *ph = json_object_get_string_member_with_default(e, "ph", NULL);
    if (!ph)
      return fail(path, "no phase", i);
    if (!json_object_has_member(e, "pid"))
      return fail(path, "no pid", i);
    gint64 pid = json_object_get_int_member(e, "pid");
    if (g_str_equal(ph, "M")) {
      if (seen_other)
        return fail(path, "metadata after other events", i);
      const char *name = json_object_get_string_member_with_default(e, "name", "");
      if (g_str_equal(name, "process_name")) {
        gint64 *k = g_new(gint64, 1);
        *k = pid;
        g_hash_table_add(named, k);
      }
      continue;
    }
    seen_other = TRUE;
    g_array_append_val(pids, pid);
    int64_t ts;
    if (!to_ns(json_object_get_member(e, "ts"), &ts))
      return fail(path, "ts is not a non-negative number of microseconds in whole ns", i);
    if (g_str_equal(ph, "C"))
      continue;
    if (!json_object_has_member(e, "tid"))
      return fail(path, "no tid", i);
    gint64 tid = json_object_get_int_member(e, "tid");
    if (g_str_equal(ph, "X")) {
      int64_t dur;
      if (!to_ns(json_object_get_member(e, "dur"), &dur))
        return fail(path, "dur is not a non-negative number of microseconds in whole ns", i);
      guint64 k = key_of(pid, tid);
      GArray *a = g_hash_table_lookup(slices, &k);
      if (!a) {
        a = g_array_new(FALSE, FALSE, sizeof(slice));
        gint64 *kk = g_new(gint64, 1);
        *kk = (gint64)k;
        g_hash_table_insert(slices, kk, a);
      }
      slice s = {ts, ts + dur};
      g_array_append_val(a, s);
    } else if (g_str_equal(ph, "s") || g_str_equal(ph, "f")) {
      g_array_append_val(flow_events, i);
    } else {
      return fail(path, "unknown phase", i);
    }
  }
  for (guint i = 0; i < pids->len; i++) {
    gint64 pid = g_array_index(pids, gint64, i);
    if (!g_hash_table_contains(named, &pid))
      return fail(path, "a pid without process_name metadata", -1);
  }
  /* Nesting per thread: sorted by start (outer first), a stack of open slices. */
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, slices);
  while (g_hash_table_iter_next(&it, &key, &value)) {
    GArray *a = value;
    g_array_sort(a, by_start);
    g_autoptr(GArray) stack = g_array_new(FALSE, FALSE, sizeof(slice));
    for (guint i = 0; i < a->len; i++) {
      slice s = g_array_index(a, slice, i);
      while (stack->len && g_array_index(stack, slice, stack->len - 1).end_ns <= s.start_ns)
        g_array_set_size(stack, stack->len - 1);
      if (stack->len && g_array_index(stack, slice, stack->len - 1).end_ns < s.end_ns) {
        printf("FAIL %s: thread %" G_GINT64_FORMAT ": slice [%" G_GINT64_FORMAT ", %"
               G_GINT64_FORMAT "] ns overlaps its parent without nesting\n", path,
               *(gint64 *)key, s.start_ns, s.end_ns);
        return 1;
      }
      g_array_append_val(stack, s);
    }
  }
  /* Flows: inside a slice of their thread; one start and one end per id. */
  for (guint j = 0; j < flow_events->len; j++) {
    guint i = g_array_index(flow_events, guint, j);
    JsonObject *e = json_node_get_object(json_array_get_element(events, i));
    const char *ph = json_object_get_string_member(e, "ph");
    gint64 pid = json_object_get_int_member(e, "pid"), tid = json_object_get_int_member(e, "tid");
    int64_t ts;
    to_ns(json_object_get_member(e, "ts"), &ts);
    guint64 k = key_of(pid, tid);
    if (!inside(g_hash_table_lookup(slices, &k), ts))
      return fail(path, g_str_equal(ph, "s") ? "flow start outside every slice of its thread"
                                             : "flow end outside every slice of its thread", i);
    if (!json_object_has_member(e, "id"))
      return fail(path, "flow without id", i);
    gint64 *id = g_new(gint64, 1);
    *id = json_object_get_int_member(e, "id");
    guint bits = GPOINTER_TO_UINT(g_hash_table_lookup(flows, id));
    guint bit = g_str_equal(ph, "s") ? 1 : 2;
    if (bits & bit) {
      g_free(id);
      return fail(path, "a flow id with two starts or two ends", i);
    }
    g_hash_table_replace(flows, id, GUINT_TO_POINTER(bits | bit));
  }
  g_hash_table_iter_init(&it, flows);
  while (g_hash_table_iter_next(&it, &key, &value))
    if (GPOINTER_TO_UINT(value) != 3)
      return fail(path, "a flow id without both a start and an end", -1);
  printf("ok %s: %u events, %u flow events\n", path, n, flow_events->len);
  return 0;
}
