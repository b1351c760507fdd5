/* Chrome trace writer (see chrome.h). */
#include "chrome.h"

#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  sim_time_ps start_ps, end_ps;  /* the lane's latest span, for binding flow arrows */
  int open;                      /* spans open on this lane (0 or 1) */
  uint32_t tid;
} lane;

typedef struct {
  sim_track_info info;           /* name owned */
  GArray *lanes;                 /* lane */
  gboolean hidden;               /* its process is not sampled */
} track_rec;

typedef struct {
  sim_proc_info info;            /* name owned */
  gboolean hidden;
} proc_rec;

typedef struct {
  uint64_t span_id;
  uint32_t lane;
} open_span;

struct trace_chrome {
  char *path;
  FILE *body;                    /* anonymous temporary file */
  GString *line;                 /* scratch buffer for one event */
  GArray *procs;                 /* proc_rec */
  GArray *tracks;                /* track_rec */
  GHashTable *span_lane;         /* span id -> lane index + 1 */
  GPtrArray *info;               /* alternating keys and values */
  uint32_t next_extra_tid;
  uint64_t events;
  uint64_t limit;
  uint32_t max_procs;            /* per kind, 0: all */
  uint32_t per_kind[SIM_PROC_OTHER + 1];
  uint32_t hidden_procs;
  gboolean truncated;
  gboolean failed;
  sim_engine *engine;
};

void trace__us(GString *out, sim_time_ps ps)
{
  if (ps < 0) {
    g_string_append_c(out, '-');
    ps = -ps;
  }
  int64_t ns = ps / 1000;
  g_string_append_printf(out, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
}

trace_chrome *trace_chrome_new(const char *path, GError **error)
{
  /* Fail early, before simulating, if the destination cannot be written. Only checked: opening
   * a FIFO here would end its reader's input before the trace is written. */
  if (!dt_outfile_check(path, "--trace", error))
    return NULL;
  FILE *body = tmpfile();
  if (!body) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "%s: cannot create a temporary file: %s",
                path, g_strerror(errno));
    return NULL;
  }
  trace_chrome *t = g_new0(trace_chrome, 1);
  t->path = g_strdup(path);
  t->body = body;
  t->line = g_string_sized_new(256);
  t->procs = g_array_new(FALSE, FALSE, sizeof(proc_rec));
  t->tracks = g_array_new(FALSE, FALSE, sizeof(track_rec));
  t->span_lane = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  t->info = g_ptr_array_new_with_free_func(g_free);
  t->next_extra_tid = 1000000;
  return t;
}

void trace_chrome_free(trace_chrome *t)
{
  if (!t)
    return;
  if (t->body)
    fclose(t->body);
  for (guint i = 0; i < t->procs->len; i++)
    g_free((char *)g_array_index(t->procs, proc_rec, i).info.name);
  for (guint i = 0; i < t->tracks->len; i++) {
    track_rec *tr = &g_array_index(t->tracks, track_rec, i);
    g_free((char *)tr->info.name);
    g_array_free(tr->lanes, TRUE);
  }
  g_array_free(t->procs, TRUE);
  g_array_free(t->tracks, TRUE);
  g_hash_table_destroy(t->span_lane);
  g_ptr_array_free(t->info, TRUE);
  g_string_free(t->line, TRUE);
  g_free(t->path);
  g_free(t);
}

void trace_chrome_set_info(trace_chrome *t, const char *key, const char *value)
{
  g_ptr_array_add(t->info, g_strdup(key));
  g_ptr_array_add(t->info, g_strdup(value));
}

void trace_chrome_set_limit(trace_chrome *t, uint64_t max_events) { t->limit = max_events; }
void trace_chrome_set_max_procs(trace_chrome *t, uint32_t n) { t->max_procs = n; }
uint32_t trace_chrome_hidden_procs(const trace_chrome *t) { return t->hidden_procs; }
uint64_t trace_chrome_events(const trace_chrome *t) { return t->events; }
gboolean trace_chrome_truncated(const trace_chrome *t) { return t->truncated; }

/* Starts an event line; FALSE when the limit has been reached. */
static gboolean begin_event(trace_chrome *t)
{
  if (t->limit && t->events >= t->limit) {
    t->truncated = TRUE;
    return FALSE;
  }
  g_string_truncate(t->line, 0);
  return TRUE;
}

static void end_event(trace_chrome *t)
{
  g_string_append(t->line, ",\n");
  if (fwrite(t->line->str, 1, t->line->len, t->body) != t->line->len)
    t->failed = TRUE;
  t->events++;
}

static void on_proc(void *user, const sim_proc_info *p)
{
  trace_chrome *t = user;
  proc_rec r = {*p, FALSE};
  r.info.name = g_strdup(p->name);
  guint kind = MIN((guint)p->kind, (guint)SIM_PROC_OTHER);
  r.hidden = t->max_procs && t->per_kind[kind]++ >= t->max_procs;
  t->hidden_procs += r.hidden;
  g_array_append_val(t->procs, r);
}

static void on_track(void *user, const sim_track_info *tr)
{
  trace_chrome *t = user;
  track_rec r = {*tr, g_array_new(FALSE, FALSE, sizeof(lane)), FALSE};
  r.info.name = g_strdup(tr->name);
  r.hidden = g_array_index(t->procs, proc_rec, tr->proc).hidden;
  lane first = {0, 0, 0, tr->id + 1};
  g_array_append_val(r.lanes, first);
  g_array_append_val(t->tracks, r);
}

static void on_span_begin(void *user, const sim_span *s)
{
  trace_chrome *t = user;
  track_rec *tr = &g_array_index(t->tracks, track_rec, s->track);
  if (tr->hidden)
    return;
  guint k;
  for (k = 0; k < tr->lanes->len; k++)
    if (!g_array_index(tr->lanes, lane, k).open)
      break;
  if (k == tr->lanes->len) {
    lane extra = {0, 0, 0, t->next_extra_tid++};
    g_array_append_val(tr->lanes, extra);
  }
  lane *l = &g_array_index(tr->lanes, lane, k);
  l->open = 1;
  l->start_ps = s->start_ps;
  l->end_ps = s->start_ps;
  uint64_t *key = g_new(uint64_t, 1);
  *key = s->id;
  g_hash_table_insert(t->span_lane, key, GUINT_TO_POINTER(k + 1));
}

static void on_span_end(void *user, const sim_span *s)
{
  trace_chrome *t = user;
  track_rec *tr = &g_array_index(t->tracks, track_rec, s->track);
  if (tr->hidden)
    return;
  guint k = GPOINTER_TO_UINT(g_hash_table_lookup(t->span_lane, &s->id));
  g_return_if_fail(k > 0);
  g_hash_table_remove(t->span_lane, &s->id);
  lane *l = &g_array_index(tr->lanes, lane, k - 1);
  l->open = 0;
  l->end_ps = s->end_ps;
  if (!begin_event(t))
    return;
  GString *o = t->line;
  g_string_append(o, "{\"ph\":\"X\",\"name\":");
  dt_json_string(o, s->name);
  g_string_append(o, ",\"cat\":");
  dt_json_string(o, s->category);
  g_string_append(o, ",\"ts\":");
  trace__us(o, s->start_ps);
  g_string_append(o, ",\"dur\":");
  trace__us(o, s->end_ps - s->start_ps);
  g_string_append_printf(o, ",\"pid\":%u,\"tid\":%u", tr->info.proc + 1, l->tid);
  if (s->bytes || s->flops) {
    g_string_append(o, ",\"args\":{");
    if (s->bytes)
      g_string_append_printf(o, "\"bytes\":%" PRIu64 "%s", s->bytes, s->flops ? "," : "");
    if (s->flops)
      g_string_append_printf(o, "\"flops\":%" PRIu64, s->flops);
    g_string_append_c(o, '}');
  }
  g_string_append_c(o, '}');
  end_event(t);
}

/* The lane of `track` whose latest span covers `at`, so an arrow binds to that slice. */
static const lane *lane_at(trace_chrome *t, sim_track_id track, sim_time_ps at)
{
  track_rec *tr = &g_array_index(t->tracks, track_rec, track);
  for (guint k = 0; k < tr->lanes->len; k++) {
    const lane *l = &g_array_index(tr->lanes, lane, k);
    if (l->start_ps <= at && at <= l->end_ps)
      return l;
  }
  return &g_array_index(tr->lanes, lane, 0);
}

/* Where `at` falls on a slice as written: a slice's start and duration are each cut to whole
 * nanoseconds (trace__us), so its written end can be up to 2 ns before its true end. A flow
 * event is placed at the same written time, clamped into the written slice, so viewers bind
 * it to that slice. */
static sim_time_ps on_written_slice(const lane *l, sim_time_ps at)
{
  sim_time_ps a = l->start_ps / 1000 * 1000;
  sim_time_ps b = a + (l->end_ps - l->start_ps) / 1000 * 1000;
  sim_time_ps w = at / 1000 * 1000;
  return w < a ? a : w > b ? b : w;
}

static void on_link(void *user, uint64_t id, sim_track_id from, sim_time_ps from_ps,
                    sim_track_id to, sim_time_ps to_ps, const char *name)
{
  trace_chrome *t = user;
  const track_rec *a = &g_array_index(t->tracks, track_rec, from);
  const track_rec *b = &g_array_index(t->tracks, track_rec, to);
  if (a->hidden || b->hidden)
    return;
  for (int end = 0; end < 2; end++) {
    if (!begin_event(t))
      return;
    GString *o = t->line;
    g_string_append_printf(o, "{\"ph\":\"%s\",\"id\":%" PRIu64 ",\"name\":", end ? "f" : "s", id);
    dt_json_string(o, name);
    g_string_append(o, ",\"cat\":\"link\",\"ts\":");
    sim_time_ps at = end ? to_ps : from_ps;
    const lane *l = lane_at(t, end ? to : from, at);
    trace__us(o, on_written_slice(l, at));
    g_string_append_printf(o, ",\"pid\":%u,\"tid\":%u%s}", (end ? b : a)->info.proc + 1,
                           l->tid, end ? ",\"bp\":\"e\"" : "");
    end_event(t);
  }
}

static void on_counter(void *user, sim_proc_id proc, const char *name, sim_time_ps at,
                       double value)
{
  trace_chrome *t = user;
  if (g_array_index(t->procs, proc_rec, proc).hidden || !begin_event(t))
    return;
  GString *o = t->line;
  g_string_append(o, "{\"ph\":\"C\",\"name\":");
  dt_json_string(o, name);
  g_string_append(o, ",\"ts\":");
  trace__us(o, at);
  char num[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(num, sizeof num, "%.6g", value);
  g_string_append_printf(o, ",\"pid\":%u,\"args\":{\"value\":%s}}", proc + 1, num);
  end_event(t);
}

void trace_chrome_counter_at(trace_chrome *t, sim_proc_id proc, const char *name,
                             sim_time_ps at_ps, double value)
{
  on_counter(t, proc, name, at_ps, value);
}

static const sim_observer_ops chrome_ops = {
    .proc_added = on_proc,
    .track_added = on_track,
    .span_begin = on_span_begin,
    .span_end = on_span_end,
    .link = on_link,
    .counter = on_counter,
};

void trace_chrome_attach(trace_chrome *t, sim_engine *engine)
{
  g_return_if_fail(t->engine == NULL);
  t->engine = engine;
  sim_engine_add_observer(engine, &chrome_ops, t);
}

static void write_metadata(trace_chrome *t, GString *o)
{
  for (guint i = 0; i < t->procs->len; i++) {
    if (g_array_index(t->procs, proc_rec, i).hidden)
      continue;
    const sim_proc_info *p = &g_array_index(t->procs, proc_rec, i).info;
    g_string_append_printf(o, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"args\":{\"name\":",
                           p->id + 1);
    dt_json_string(o, p->name);
    g_string_append(o, "}},\n");
    /* Devices first, then hosts, servers and links; within a kind, in creation order. */
    g_string_append_printf(o, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%u,"
                           "\"args\":{\"sort_index\":%d}},\n",
                           p->id + 1, (int)p->kind * 1000000 + p->sort_index);
  }
  for (guint i = 0; i < t->tracks->len; i++) {
    const track_rec *tr = &g_array_index(t->tracks, track_rec, i);
    if (tr->hidden)
      continue;
    for (guint k = 0; k < tr->lanes->len; k++) {
      const lane *l = &g_array_index(tr->lanes, lane, k);
      g_string_append_printf(o, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,"
                             "\"args\":{\"name\":", tr->info.proc + 1, l->tid);
      if (k == 0) {
        dt_json_string(o, tr->info.name);
      } else {
        g_autofree char *name = g_strdup_printf("%s #%u", tr->info.name, k + 1);
        dt_json_string(o, name);
      }
      g_string_append(o, "}},\n");
      g_string_append_printf(o, "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%u,"
                             "\"tid\":%u,\"args\":{\"sort_index\":%d}},\n",
                             tr->info.proc + 1, l->tid, tr->info.sort_index * 64 + (int)k);
    }
  }
}

gboolean trace_chrome_close(trace_chrome *t, GError **error)
{
  g_return_val_if_fail(t->body != NULL, FALSE);
  if (t->failed || fflush(t->body) != 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "%s: writing the trace failed", t->path);
    return FALSE;
  }
  g_autoptr(dt_outfile) out = dt_outfile_open(t->path, error);
  if (!out)
    return FALSE;
  FILE *f = dt_outfile_stream(out);
  g_autoptr(GString) head = g_string_new("{\"traceEvents\":[\n");
  write_metadata(t, head);
  fwrite(head->str, 1, head->len, f);
  /* Copy the body; drop its final ",\n" so the array closes cleanly. */
  long body_len = ftell(t->body);
  rewind(t->body);
  char buf[1 << 16];
  long left = body_len > 2 ? body_len - 2 : 0;
  while (left > 0) {
    size_t want = left < (long)sizeof buf ? (size_t)left : sizeof buf;
    size_t got = fread(buf, 1, want, t->body);
    if (got == 0)
      break;
    fwrite(buf, 1, got, f);
    left -= (long)got;
  }
  g_autoptr(GString) tail = g_string_new(NULL);
  if (body_len <= 2) {
    /* No events: the metadata's last ",\n" must go. */
    if (head->len > 18)
      fseek(f, -2, SEEK_CUR);
  }
  g_string_append(tail, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{");
  for (guint i = 0; i + 1 < t->info->len; i += 2) {
    dt_json_string(tail, g_ptr_array_index(t->info, i));
    g_string_append_c(tail, ':');
    dt_json_string(tail, g_ptr_array_index(t->info, i + 1));
    g_string_append_c(tail, ',');
  }
  g_string_append_printf(tail, "\"events\":\"%" PRIu64 "\",\"truncated\":\"%s\","
                         "\"processes_not_sampled\":\"%u\"}}\n", t->events,
                         t->truncated ? "yes" : "no", t->hidden_procs);
  fwrite(tail->str, 1, tail->len, f);
  fclose(t->body);
  t->body = NULL;
  return dt_outfile_commit(out, error);
}
