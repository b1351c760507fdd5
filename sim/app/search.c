/* dtsim search: every feasible parallel configuration of a job on a cluster, ranked (see
 * search.h). */
#include "search.h"

#include "devices.h"
#include "plan.h"
#include "simulate.h"
#include "sweep.h"
#include "trainrun_keys.h"
#include "util.h"

#include <math.h>
#include <string.h>

#include "colltime.h"
#include "strategy.h"
#include "wl_transformer.h"

static const sim_key search_keys[] = {
    {"top", SIM_KEY_INT, SIM_KEY_OFF(top), "10", 1, 1 << 20, .commands = SIM_OPTS_SEARCH,
     .arg = "K", .help = "rows printed, best first; the best K are simulated again on the flow network"},
    {"jobs", SIM_KEY_INT, SIM_KEY_OFF(jobs), "0", 0, 1024, .commands = SIM_OPTS_SEARCH,
     .arg = "N", .help = "threads simulating candidates (default 0: one per processor)"},
    {"rank-by", SIM_KEY_CHOICE, SIM_KEY_OFF(rank_by), "throughput", .choices = "throughput|time|cost",
     .commands = SIM_OPTS_SEARCH,
     .help = "best first by throughput, by the whole run's train_time_s (needs --train-tokens or "
             "--train-samples) or its train_cost_usd (also --gpu-hour-cost)"},
    {"max-time", SIM_KEY_DOUBLE, SIM_KEY_OFF(max_time_s), "600", 0, 1e7, .commands = SIM_OPTS_SEARCH,
     .arg = "S", .help = "wall-clock seconds the search may take: its whole time is estimated from "
                         "the configurations done so far and the search stops as soon as the "
                         "estimate passes S (0: no limit)"},
};
const sim_key_group sim_keys_search = SIM_KEY_GROUP("search", 0, search_keys);

/* ---- The search ----------------------------------------------------------------------------- */

typedef struct {
  sim_scenario scenario;      /* on the analytic network */
  char *label;                /* "dp allreduce=ring bucket-mib=25 batch=64" */
  char *settings_json;        /* "strategy":"dp","allreduce":"ring",... */
  sim_time_ps bound_ps;       /* lower bound of its analytic iteration time (0: none) */
  uint64_t memory_bytes;      /* its plan's memory per device, known before simulating (0: not) */
} candidate;

/* Candidates that a lower bound of their time keeps out of the best --top (docs/search.md),
 * and those whose plan's memory (known before simulating) is above the device's. */
#define SIM_DROP_TIME_BOUND "cannot reach the best --top (lower bound of its time)"
#define SIM_DROP_PLAN_MEMORY "does not fit in device memory (its plan, before simulating)"

/* The analytic phase's waves when candidates have time bounds: the first simulates this many,
 * each next one twice as many as the last, up to the most; the sizes depend on nothing else,
 * so which candidates are simulated does not depend on threads or ranks. */
#define WAVE_FIRST 64
#define WAVE_MOST 1024

struct sim_search {
  sim_scenario base;
  sim_search_ctx ctx;
  char *title;                /* "resnet50, 2 x dgx1-v100 (16 devices), global batch 1024" */
  guint jobs;
  GPtrArray *candidates;      /* candidate * */
  uint64_t combinations;      /* enumerated, before the checks */
  GPtrArray *drop_reasons;    /* char *, in the order first met */
  GArray *drop_counts;        /* guint per reason */
  double flops_per_sample;    /* model FLOPs of one sample's forward and backward (0: unknown) */
  double peak_flops;          /* of one device at the precision, FLOP/s (0: unknown) */
  uint64_t seq;               /* tokens per sample of a transformer (0: not one) */
  sim_search_result *analytic;
  GArray *ranked;             /* guint candidate indices, feasible, best first (analytic) */
  char *flow_skipped;         /* why the flow phase does not run, or NULL */
  GArray *finalists;          /* guint: the best K of `ranked` */
  sim_search_result *flow;    /* one per finalist */
  GArray *final;              /* guint positions in `finalists`, best first (flow) */
  double tau;                 /* Kendall tau of the analytic and flow orders of the finalists */
  gint64 started_us;          /* monotonic time the search began (enumeration included) */
  double max_time_s;          /* --max-time: the whole search's limit, seconds (0: none) */
  comm_topology *topology;    /* the cluster (the families' time bounds) */
  dev_device *device;         /* its device, as the strategies load it (time bounds) */
  /* The analytic phase in waves (sim_search_next_wave): */
  gboolean prune;             /* skip candidates whose bound cannot reach the best K */
  gboolean bounded;           /* some candidate has a time bound */
  GArray *order;              /* guint candidate indices by bound (then index): the waves' order */
  guint next;                 /* position in `order` of the next candidate to simulate */
  guint wave_size;            /* candidates of the next wave */
  GArray *wave;               /* guint: the candidates of the wave under way */
  gboolean *simulated;        /* per candidate: its analytic result is in */
  guint n_simulated;          /* how many */
  double *best;               /* the best K throughputs so far, best first */
  guint n_best;
  guint pruned;               /* candidates left out by their bound */
  guint unfit;                /* candidates left out by their plan's memory */
  gboolean in_waves;          /* the analytic phase runs in waves */
  guint later;                /* candidates after the wave under way that can still enter the
                               * best K (--max-time counts them) */
};

static void candidate_free(gpointer p)
{
  candidate *c = p;
  if (!c)
    return;
  sim_scenario_clear(&c->scenario);
  g_free(c->label);
  g_free(c->settings_json);
  g_free(c);
}

void sim_search_free(sim_search *S)
{
  if (!S)
    return;
  sim_scenario_clear(&S->base);
  g_free(S->title);
  g_clear_pointer(&S->candidates, g_ptr_array_unref);
  g_clear_pointer(&S->drop_reasons, g_ptr_array_unref);
  g_clear_pointer(&S->drop_counts, g_array_unref);
  g_free(S->analytic);
  g_clear_pointer(&S->topology, comm_topology_free);
  g_clear_pointer(&S->device, dev_device_free);
  g_clear_pointer(&S->ctx.coll_timers, g_hash_table_unref);
  g_clear_pointer(&S->order, g_array_unref);
  g_clear_pointer(&S->wave, g_array_unref);
  g_free(S->simulated);
  g_free(S->best);
  g_clear_pointer(&S->ranked, g_array_unref);
  g_free(S->flow_skipped);
  g_clear_pointer(&S->finalists, g_array_unref);
  g_free(S->flow);
  g_clear_pointer(&S->final, g_array_unref);
  g_free(S);
}

static void count_drops(sim_search *S, const char *reason, guint n)
{
  for (guint i = 0; i < S->drop_reasons->len; i++)
    if (strcmp(S->drop_reasons->pdata[i], reason) == 0) {
      g_array_index(S->drop_counts, guint, i) += n;
      return;
    }
  g_ptr_array_add(S->drop_reasons, g_strdup(reason));
  g_array_append_val(S->drop_counts, n);
}

static void count_drop(sim_search *S, const char *reason) { count_drops(S, reason, 1); }

/* TRUE when the user gave one of the '|'-separated keys. */
static gboolean any_given(const sim_scenario *s, const char *keys)
{
  g_auto(GStrv) names = g_strsplit(keys, "|", -1);
  for (char **k = names; *k; k++)
    if (sim_scenario_given(s, *k))
      return TRUE;
  return FALSE;
}

/* TRUE when the user gave a key of `settings` ("key=value ...") another value. */
static gboolean contradicts(const sim_scenario *s, const char *settings)
{
  g_auto(GStrv) pairs = g_strsplit(settings, " ", -1);
  for (char **p = pairs; *p; p++) {
    g_auto(GStrv) kv = g_strsplit(*p, "=", 2);
    if (kv[0] && kv[1] && sim_scenario_given(s, kv[0]) &&
        !sim_scenario_key_equals(s, kv[0], kv[1]))
      return TRUE;
  }
  return FALSE;
}

/* One value of an axis, split once: its key=value pairs, and its part of the label and of
 * the JSON settings. */
typedef struct {
  GPtrArray *keys, *values;   /* char *, pair by pair */
  char *label;                /* " key=value key=value" */
  char *json;                 /* ,"key":"value","key":"value" */
} axis_value;

static void axis_value_free(gpointer p)
{
  axis_value *v = p;
  g_ptr_array_unref(v->keys);
  g_ptr_array_unref(v->values);
  g_free(v->label);
  g_free(v->json);
  g_free(v);
}

static axis_value *axis_value_new(const char *setting)
{
  axis_value *v = g_new0(axis_value, 1);
  v->keys = g_ptr_array_new_with_free_func(g_free);
  v->values = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GString) label = g_string_new(NULL);
  g_autoptr(GString) json = g_string_new(NULL);
  g_auto(GStrv) pairs = g_strsplit(setting, " ", -1);
  for (char **p = pairs; *p; p++) {
    if (!**p)
      continue;
    g_auto(GStrv) kv = g_strsplit(*p, "=", 2);
    g_assert(kv[0] && kv[1]);
    g_ptr_array_add(v->keys, g_strdup(kv[0]));
    g_ptr_array_add(v->values, g_strdup(kv[1]));
    g_string_append_printf(label, " %s", *p);
    g_string_append_c(json, ',');
    dt_json_string(json, kv[0]);
    g_string_append_c(json, ':');
    dt_json_string(json, kv[1]);
  }
  v->label = g_string_free(g_steal_pointer(&label), FALSE);
  v->json = g_string_free(g_steal_pointer(&json), FALSE);
  return v;
}

static gboolean has_key(const GPtrArray *keys, const char *key)
{
  for (guint i = 0; i < keys->len; i++)
    if (strcmp(keys->pdata[i], key) == 0)
      return TRUE;
  return FALSE;
}

static void axis_free(gpointer p) { g_ptr_array_unref(p); }

/* Every combination of a family's axes, in table order (the last axis varies fastest).
 *
 * The combinations are set on one scratch scenario, a copy of the base with the family's
 * fixed settings (the template): from one combination to the next only the axes that change
 * are set again, and the keys derive() set go back to the template's (sim_scenario_copy_key),
 * so that each is derived and checked exactly as on a fresh copy; only candidates that pass
 * are copied. (A copy of the whole scenario per combination was most of the enumeration's
 * time: 663552 of them in the GPT-3 175B search of docs/search.md.) */
static gboolean enumerate_family(sim_search *S, const sim_strategy *st,
                                 const sim_search_family *f, GError **error)
{
  const sim_scenario *base = &S->base;
  guint n = (guint)f->n_axes;
  g_autoptr(GPtrArray) values = g_ptr_array_new_with_free_func(axis_free);
  g_autoptr(GPtrArray) axis_keys = g_ptr_array_new_with_free_func(axis_free);
  for (guint a = 0; a < n; a++) {
    g_autoptr(GPtrArray) text = g_ptr_array_new_with_free_func(g_free);
    if (any_given(base, f->axes[a].keys))
      g_ptr_array_add(text, g_strdup(""));   /* fixed by the user: the base's value */
    else
      f->axes[a].values(&S->ctx, text);
    GPtrArray *v = g_ptr_array_new_with_free_func(axis_value_free);
    GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
    for (guint j = 0; j < text->len; j++) {
      axis_value *x = axis_value_new(text->pdata[j]);
      for (guint k = 0; k < x->keys->len; k++)
        if (!has_key(keys, x->keys->pdata[k]))
          g_ptr_array_add(keys, g_strdup(x->keys->pdata[k]));
      g_ptr_array_add(v, x);
    }
    g_ptr_array_add(values, v);
    g_ptr_array_add(axis_keys, keys);
    if (v->len == 0)
      return TRUE;
  }
  /* The template: the base on the analytic network, the strategy, the fixed settings. */
  g_auto(sim_scenario) template;
  sim_scenario_copy(&template, base);
  template.net_model = COMM_NET_ANALYTIC;
  g_autoptr(GString) label0 = g_string_new(st->name);
  g_autoptr(GString) json0 = g_string_new("\"strategy\":");
  dt_json_string(json0, st->name);
  if (!sim_scenario_set(&template, "strategy", st->name, NULL, error))
    return FALSE;
  if (f->fixed) {
    axis_value *fixed = axis_value_new(f->fixed);
    gboolean ok = TRUE;
    for (guint k = 0; ok && k < fixed->keys->len; k++)
      ok = sim_scenario_set(&template, fixed->keys->pdata[k], fixed->values->pdata[k], NULL,
                            error);
    g_string_append(label0, fixed->label);
    g_string_append(json0, fixed->json);
    axis_value_free(fixed);
    if (!ok)
      return FALSE;
  }
  g_auto(sim_scenario) s;
  sim_scenario_copy(&s, &template);
  g_autofree guint *at = g_new0(guint, MAX(n, 1));
  g_autoptr(GString) derived = g_string_new(NULL);
  guint from = 0;             /* the first axis to set again */
  for (;;) {
    S->combinations++;
    for (guint a = from; a < n; a++) {
      const axis_value *x = ((GPtrArray *)values->pdata[a])->pdata[at[a]];
      const GPtrArray *keys = axis_keys->pdata[a];
      /* A key another value of the axis sets and this one does not: the template's. */
      for (guint k = 0; keys->len > x->keys->len && k < keys->len; k++)
        if (!has_key(x->keys, keys->pdata[k]))
          sim_scenario_copy_key(&s, &template, keys->pdata[k]);
      for (guint k = 0; k < x->keys->len; k++)
        if (!sim_scenario_set(&s, x->keys->pdata[k], x->values->pdata[k], NULL, error))
          return FALSE;
    }
    g_string_truncate(derived, 0);
    const char *drop = f->derive(&s, &S->ctx, derived, error);
    if (!drop && st->check) {
      /* The strategy's own rules, as `run` applies them. */
      sim_shape shape = {S->ctx.devices, S->ctx.nodes, S->ctx.devices_per_node};
      g_autoptr(GError) why = NULL;
      drop = st->check(&s, &shape, &why);
    }
    if (!drop && f->bound)
      drop = f->bound(&s, &S->ctx);
    if (drop && !*drop)
      return FALSE;
    if (drop) {
      count_drop(S, drop);
    } else {
      candidate *c = g_new0(candidate, 1);
      if (f->time_bound)
        c->bound_ps = f->time_bound(&s, &S->ctx, &c->memory_bytes);
      sim_scenario_copy(&c->scenario, &s);
      g_autoptr(GString) label = g_string_new(label0->str);
      g_autoptr(GString) json = g_string_new(json0->str);
      for (guint a = 0; a < n; a++) {
        const axis_value *x = ((GPtrArray *)values->pdata[a])->pdata[at[a]];
        g_string_append(label, x->label);
        g_string_append(json, x->json);
      }
      /* Derived keys go in the label; the JSON has them in the run object's keys already. */
      g_string_append(label, derived->str);
      c->label = g_string_free(g_steal_pointer(&label), FALSE);
      c->settings_json = g_string_free(g_steal_pointer(&json), FALSE);
      g_ptr_array_add(S->candidates, c);
    }
    /* The derived keys (" key=value ...") go back to the template's; an axis that sets one of
     * them is set again. */
    from = n;
    for (const char *p = derived->str; *p;) {
      const char *key = p + strspn(p, " "), *eq = strchr(key, '=');
      if (!*key || !eq)
        break;
      char name[64];
      g_strlcpy(name, key, MIN(sizeof name, (gsize)(eq - key) + 1));
      sim_scenario_copy_key(&s, &template, name);
      for (guint a = 0; a < n; a++)
        if (has_key(axis_keys->pdata[a], name))
          from = MIN(from, a);
      p = eq + strcspn(eq, " ");
    }
    /* Next combination. */
    guint a = n;
    while (a > 0) {
      a--;
      if (++at[a] < ((GPtrArray *)values->pdata[a])->len)
        break;
      at[a] = 0;
      if (a == 0)
        return TRUE;
    }
    if (n == 0)
      return TRUE;
    from = MIN(from, a);
  }
}

/* Transformer shape, sequence length and model FLOPs per sequence (forward and backward, no
 * recomputation: Megatron's convention), when the workloads know transformers. */
static gboolean transformer_shape(const sim_scenario *s, sim_search_ctx *c, uint64_t *seq,
                                  double *flops_per_sample)
{
  if (!wl_tf_is_transformer(s->model))
    return FALSE;
  wl_tf tf;
  if (!wl_tf_parse(s->model, &tf, NULL))
    return FALSE;
  if (s->seq_len)
    wl_tf_set_seq(&tf, (uint32_t)s->seq_len);
  c->layers = tf.layers;
  c->heads = tf.heads;
  c->tf = tf;
  *seq = tf.seq;
  *flops_per_sample = wl_tf_iteration_flops(&tf, 1, tf.seq, WL_RECOMPUTE_NONE);
  return TRUE;
}

/* FLOPs per sample of a CNN (forward and backward) as the device runs them at `batch` samples:
 * a 3x3 convolution that the device runs as Winograd does a quarter of the direct form's
 * multiplies, and counting the direct form against the peak would put utilization above 100%.
 * Building the cost table once also checks the model, the device and the precision, which
 * every candidate shares: a bad one is the search's error, not a refusal of each candidate. */
static gboolean cnn_flops_per_sample(const sim_scenario *s, const char *device, uint64_t batch,
                                     double *out, GError **error)
{
  g_autoptr(sim_costs) costs = sim_costs_build(s, device, batch, error);
  if (!costs)
    return FALSE;
  double flops = 0;
  if (strcmp(s->model, "demo") == 0) {
    /* The synthetic demo workload has no layers for a device to run: its table's FLOPs. */
    for (guint i = 0; i < sim_costs_n_layers(costs); i++) {
      const sim_layer_cost *l = sim_costs_layer(costs, i);
      flops += (double)l->forward_flops + (double)l->backward_data_flops +
               (double)l->backward_weights_flops;
    }
    *out = flops / (double)batch;
    return TRUE;
  }
  g_autoptr(wl_model) model = wl_model_load(s->model, error);
  g_autoptr(wl_net) net = model ? wl_net_new(model, (uint32_t)batch, s->precision, error) : NULL;
  g_autoptr(dev_device) dev = net ? sim_scenario_device(s, device, s->calibration, error) : NULL;
  if (!dev)
    return FALSE;
  for (size_t i = 0; i < wl_net_n_layers(net); i++) {
    const wl_layer *l = wl_net_layer(net, i);
    for (int p = WL_PASS_FORWARD; p <= WL_PASS_BACKWARD_WEIGHTS; p++)
      if (l->has_pass[p])
        flops += dev_op_flops(dev, &l->cost[p]);
  }
  *out = flops / (double)batch;
  return TRUE;
}

/* The device's dense peak at the precision, FLOP/s, and its memory, bytes; a device that does
 * not load or lacks the precision is the search's error. */
static gboolean device_limits(const sim_scenario *s, const char *device, double *peak_flops,
                              uint64_t *capacity_bytes, GError **error)
{
  g_autoptr(dev_device) dev = sim_scenario_device(s, device, s->calibration, error);
  if (!dev)
    return FALSE;
  if (!dev_check_precision(dev, s->precision, sim_scenario_where(s, "precision"), error))
    return FALSE;
  *peak_flops = dev_peak_flops(dev, s->precision);
  *capacity_bytes = dev_memory_bytes(dev);
  return TRUE;
}

/* The strategies a search covers: the one given, or every family's. */
static GPtrArray *covered_strategies(const sim_scenario *s)
{
  GPtrArray *out = g_ptr_array_new();
  if (sim_scenario_given(s, "strategy")) {
    g_ptr_array_add(out, (gpointer)s->strategy);
    return out;
  }
  /* The families of the model's kind only: a 3d key given for a CNN is refused, not ignored. */
  gboolean transformer = s->model && wl_tf_is_transformer(s->model);
  for (const sim_strategy *const *st = sim_strategies(); *st; st++)
    if ((*st)->n_search && (((*st)->flags & SIM_STRATEGY_TRANSFORMER) != 0) == transformer)
      g_ptr_array_add(out, (gpointer)*st);
  return out;
}

gboolean sim_search_check(sim_scenario *s, GError **error)
{
  /* Strategy keys are accepted when the search covers a strategy they apply to; the global
   * batch is the job's, for every family. */
  g_autoptr(GPtrArray) covered = covered_strategies(s);
  GPtrArray *saved = s->strategy_list;
  s->strategy_list = covered;
  gboolean had_global = g_hash_table_remove(s->given, "global-batch");
  gboolean ok = sim_scenario_check(s, error);
  if (had_global)
    g_hash_table_add(s->given, (gpointer) "global-batch");
  s->strategy_list = saved;
  if (ok && s->trace) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: a search writes no trace; run the configuration you want with 'dtsim run'",
                sim_scenario_where(s, "trace"));
    return FALSE;
  }
  if (ok && (s->chakra || s->chakra_out)) {
    const char *key = s->chakra ? "chakra" : "chakra-out";
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: a search ranks the parallel configurations of a model, which a Chakra trace "
                "fixes; run the trace, or the configuration you want, with 'dtsim run'",
                sim_scenario_where(s, key));
    return FALSE;
  }
  if (ok && s->link_heatmap) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: a search draws no heat map; run the "
                "configuration you want with 'dtsim run'", sim_scenario_where(s, "link-heatmap"));
    return FALSE;
  }
  if (ok && s->rank_by != SIM_SEARCH_RANK_THROUGHPUT && !sim_trainrun_asked(s)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: ranking by the whole run's %s needs "
                "--train-tokens or --train-samples", sim_scenario_where(s, "rank-by"),
                s->rank_by == SIM_SEARCH_RANK_TIME ? "time" : "cost");
    return FALSE;
  }
  if (ok && s->rank_by == SIM_SEARCH_RANK_COST && !sim_scenario_given(s, "gpu-hour-cost")) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: ranking by cost needs --gpu-hour-cost",
                sim_scenario_where(s, "rank-by"));
    return FALSE;
  }
  return ok;
}

gboolean sim_search_parse_args(sim_scenario *s, int argc, char **argv, GError **error)
{
  sim_command_line cl = {
      .set = SIM_CMD_SEARCH,
      .summary = "Rank every parallel configuration of a job on a cluster: each simulated on the "
                 "analytic network, the best --top K again on the flow network.",
      .check = sim_search_check,
  };
  return sim_scenario_parse_args(s, &cl, argc, argv, error);
}

/* By bound, shortest first (0, no bound, first of all), then by index. */
static gint by_bound(gconstpointer a, gconstpointer b, gpointer data)
{
  const sim_search *S = data;
  guint i = *(const guint *)a, j = *(const guint *)b;
  sim_time_ps x = ((const candidate *)S->candidates->pdata[i])->bound_ps;
  sim_time_ps y = ((const candidate *)S->candidates->pdata[j])->bound_ps;
  if (x != y)
    return x < y ? -1 : 1;
  return i < j ? -1 : i > j;
}

/* The order of the analytic phase: by bound when candidates have one (the fastest possible
 * first, so that the best K are found early and bound the rest), in one wave of all otherwise. */
static void waves_init(sim_search *S)
{
  guint n = S->candidates->len;
  S->order = g_array_sized_new(FALSE, FALSE, sizeof(guint), n);
  S->simulated = g_new0(gboolean, MAX(n, 1));
  S->wave = g_array_new(FALSE, FALSE, sizeof(guint));
  S->best = g_new(double, MAX((guint)S->base.top, 1));
  S->prune = TRUE;
  for (guint i = 0; i < n; i++) {
    g_array_append_val(S->order, i);
    S->bounded |= ((const candidate *)S->candidates->pdata[i])->bound_ps > 0;
  }
  if (S->bounded)
    g_array_sort_with_data(S->order, by_bound, S);
  S->wave_size = S->bounded ? WAVE_FIRST : MAX(n, 1);
}

static void coll_timer_free(gpointer p) { sim_coll_timer_free(p); }

sim_search *sim_search_new(const sim_scenario *base, GError **error)
{
  g_autoptr(sim_search) S = g_new0(sim_search, 1);
  sim_scenario_copy(&S->base, base);
  g_clear_pointer(&S->base.csv, g_free);
  g_clear_pointer(&S->base.plot, g_free);
  S->candidates = g_ptr_array_new_with_free_func(candidate_free);
  S->drop_reasons = g_ptr_array_new_with_free_func(g_free);
  S->drop_counts = g_array_new(FALSE, FALSE, sizeof(guint));
  S->started_us = g_get_monotonic_time();
  S->max_time_s = base->max_time_s;
  S->jobs = base->jobs > 0 ? (guint)base->jobs : MAX(1, (guint)g_get_num_processors());
  S->topology = sim_scenario_topology(base, error);
  if (!S->topology)
    return NULL;
  const comm_topology *topo = S->topology;
  sim_search_ctx *c = &S->ctx;
  c->topology = topo;
  c->nodes = comm_topology_nodes(topo);
  c->devices_per_node = comm_topology_devices_per_node(topo);
  c->devices = comm_topology_devices(topo);
  c->global_batch = sim_scenario_given(base, "global-batch") ? (uint64_t)base->global_batch
                                                              : (uint64_t)base->batch * c->devices;
  gboolean transformer = transformer_shape(base, c, &S->seq, &S->flops_per_sample);
  const char *device = base->device ? base->device : comm_topology_device_kind(topo);
  /* Loaded as the strategies load it; a bound without it loads its own. */
  S->device = dev_device_load(device, base->calibration, NULL);
  c->device = S->device;
  if (!device_limits(base, device, &S->peak_flops, &c->capacity_bytes, error) ||
      (!transformer &&
       !cnn_flops_per_sample(base, device, CLAMP(c->global_batch / c->devices, 1, 1 << 16),
                             &S->flops_per_sample, error)))
    return NULL;
  S->title = g_strdup_printf("%s, %" G_GUINT64_FORMAT " x %s (%" G_GUINT64_FORMAT
                             " devices), global batch %" G_GUINT64_FORMAT,
                             base->model, c->nodes, base->system, c->devices, c->global_batch);
  /* The time bounds' collective timers, for the enumeration. */
  c->coll_timers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, coll_timer_free);
  gboolean any = FALSE;
  for (const sim_strategy *const *it = sim_strategies(); *it; it++) {
    const sim_strategy *st = *it;
    if (((st->flags & SIM_STRATEGY_TRANSFORMER) != 0) != transformer ||
        (sim_scenario_given(base, "strategy") && base->strategy != st))
      continue;
    for (size_t i = 0; i < st->n_search; i++) {
      const sim_search_family *f = &st->search[i];
      /* A family whose fixed settings the user contradicts (--hybrid owt) is not searched. */
      if (f->fixed && contradicts(base, f->fixed))
        continue;
      any = TRUE;
      if (!enumerate_family(S, st, f, error))
        return NULL;
    }
  }
  g_clear_pointer(&c->coll_timers, g_hash_table_unref);
  if (!any) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: no strategy the search knows applies to %s model '%s'",
                sim_scenario_where(base, "strategy"), transformer ? "the transformer" : "the",
                base->model);
    return NULL;
  }
  S->analytic = g_new0(sim_search_result, MAX(S->candidates->len, 1));
  waves_init(S);
  return g_steal_pointer(&S);
}

guint sim_search_n_candidates(const sim_search *S) { return S->candidates->len; }

const char *sim_search_label(const sim_search *S, guint i)
{
  return ((const candidate *)S->candidates->pdata[i])->label;
}

guint sim_search_jobs(const sim_search *S) { return S->jobs; }

int64_t sim_search_bound_ps(const sim_search *S, guint i, uint64_t *memory_bytes)
{
  const candidate *c = S->candidates->pdata[i];
  *memory_bytes = c->memory_bytes;
  return c->bound_ps;
}

/* ---- Evaluation ------------------------------------------------------------------------------ */

/* One candidate on one network. Refusals (bad combinations the checks above did not foresee)
 * are results; other errors are returned. */
static gboolean evaluate_one(const sim_scenario *cand, gboolean flow, sim_search_result *r,
                             GError **error)
{
  g_auto(sim_scenario) s;
  sim_scenario_copy(&s, cand);
  s.net_model = flow ? COMM_NET_FLOW : COMM_NET_ANALYTIC;
  memset(r, 0, sizeof *r);
  g_autoptr(GError) err = NULL;
  sim_run_opts o = {.with_speedup = FALSE, .quiet = TRUE};
  if (!sim_simulate(&s, &o, &r->report, &err)) {
    if (!g_error_matches(err, DT_ERROR, DT_ERROR_INPUT)) {
      g_propagate_error(error, g_steal_pointer(&err));
      return FALSE;
    }
    r->status = SIM_SEARCH_REFUSED;
    g_strlcpy(r->reason, err->message, sizeof r->reason);
    return TRUE;
  }
  r->report.sim_wall_s = 0;
  r->status = r->report.memory_capacity_bytes &&
                      r->report.memory_per_device_bytes > r->report.memory_capacity_bytes
                  ? SIM_SEARCH_NO_FIT : SIM_SEARCH_OK;
  return TRUE;
}

typedef struct {
  const sim_search *S;
  gboolean flow;
  const guint *which;
  sim_search_result *out;
  GError **errors;            /* per listed candidate */
  GMutex lock;                /* guards done; its release publishes the finished results */
  GCond finished;
  guint done;
  gint64 started_us;          /* monotonic time this phase began */
  gint stop;                  /* set (atomically) once the time limit is passed: skip the rest */
} eval_job;

/* Formats a duration the way a person reads it: "45 s", "0.01 s", "12.5 min", "3.2 h". */
static char *duration_text(double s)
{
  if (s < 120)
    return g_strdup_printf("%.3g s", s);
  if (s < 2 * 3600)
    return g_strdup_printf("%.1f min", s / 60);
  return g_strdup_printf("%.1f h", s / 3600);
}

/* The time limit (--max-time). After `done` of this phase's `total` evaluations, the search's
 * end is estimated at the mean rate of those done (on all threads together): time spent since
 * the search began plus the rest at that rate. Refuses (DT_ERROR_INPUT) once the estimate or
 * the time already spent passes the limit, so a search that cannot end in time stops after its
 * first evaluations, not at the limit. The estimate depends on this machine's speed and load:
 * only a search near the limit can end one way on one run and the other way on the next. */
static gboolean within_time(const eval_job *job, guint done, guint total, GError **error)
{
  const sim_search *S = job->S;
  if (S->max_time_s <= 0)
    return TRUE;
  gint64 now = g_get_monotonic_time();
  double spent_s = (double)(now - S->started_us) * 1e-6;
  double phase_s = (double)(now - job->started_us) * 1e-6;
  /* The rate is judged once every thread has finished one evaluation. In waves, the
   * candidates of the waves to come that can still enter the best K count too. */
  gboolean waves = !job->flow && S->in_waves;
  guint later = waves ? S->later : 0, before = waves ? S->n_simulated : 0;
  double left_s = done && done >= MIN(S->jobs, total) ? phase_s / done * (total - done + later)
                                                      : 0;
  if (spent_s + left_s <= S->max_time_s)
    return TRUE;
  g_autofree char *whole = duration_text(spent_s + left_s);
  g_autofree char *limit = duration_text(S->max_time_s);
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
              "the search would take about %s (%u of its %u %s simulations done in %.1f s on %u "
              "threads), more than the limit of %s (--max-time); fix more of its choices "
              "(--strategy, degrees, --micro-batch) or raise --max-time (0: no limit)",
              whole, before + done, before + total + later, job->flow ? "flow" : "analytic",
              phase_s, S->jobs, limit);
  return FALSE;
}

static void eval_worker(gpointer item, gpointer data)
{
  eval_job *job = data;
  guint j = GPOINTER_TO_UINT(item) - 1;
  guint i = job->which ? job->which[j] : j;
  const candidate *c = job->S->candidates->pdata[i];
  if (!g_atomic_int_get(&job->stop))
    evaluate_one(&c->scenario, job->flow, &job->out[j], &job->errors[j]);
  g_mutex_lock(&job->lock);
  job->done++;
  g_cond_signal(&job->finished);
  g_mutex_unlock(&job->lock);
}

gboolean sim_search_evaluate(const sim_search *S, gboolean flow, const guint *which, guint n,
                             guint first, guint stride, guint jobs, sim_search_progress_fn progress,
                             gpointer data, sim_search_result *out, GError **error)
{
  g_return_val_if_fail(stride > 0, FALSE);
  guint mine = n > first ? (n - first + stride - 1) / stride : 0;
  g_autofree GError **errors = g_new0(GError *, MAX(n, 1));
  eval_job job = {.S = S, .flow = flow, .which = which, .out = out, .errors = errors,
                  .started_us = g_get_monotonic_time()};
  g_autoptr(GError) late = NULL;
  g_mutex_init(&job.lock);
  g_cond_init(&job.finished);
  if (jobs <= 1 || mine <= 1) {
    guint k = 0;
    for (guint j = first; j < n && !job.stop; j += stride) {
      eval_worker(GUINT_TO_POINTER(j + 1), &job);
      if (progress)
        progress(++k, mine, data);
      if (k < mine && !within_time(&job, k, mine, &late))
        job.stop = TRUE;
    }
  } else {
    g_autoptr(GError) perr = NULL;
    /* Candidates run side by side: each is sized against its share of --max-memory, so that
     * they are refused one by one instead of passing the limit together. */
    dt_memory_set_sharers(MIN(jobs, mine));
    GThreadPool *pool = g_thread_pool_new(eval_worker, &job, (gint)MIN(jobs, mine), FALSE, &perr);
    if (!pool) {
      dt_memory_set_sharers(1);
      g_mutex_clear(&job.lock);
      g_cond_clear(&job.finished);
      g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "thread pool: %s", perr->message);
      return FALSE;
    }
    for (guint j = first; j < n; j += stride)
      g_thread_pool_push(pool, GUINT_TO_POINTER(j + 1), NULL);
    /* Wait for every evaluation, reporting progress at most every 50 ms. */
    g_mutex_lock(&job.lock);
    while (job.done < mine) {
      guint d = job.done;
      g_mutex_unlock(&job.lock);
      if (progress)
        progress(d, mine, data);
      if (!late && !within_time(&job, d, mine, &late))
        g_atomic_int_set(&job.stop, TRUE);
      g_mutex_lock(&job.lock);
      gint64 until = g_get_monotonic_time() + 50 * G_TIME_SPAN_MILLISECOND;
      while (job.done == d && g_cond_wait_until(&job.finished, &job.lock, until))
        ;
    }
    g_mutex_unlock(&job.lock);
    g_thread_pool_free(pool, FALSE, TRUE);
    dt_memory_set_sharers(1);
    if (progress && !late)
      progress(mine, mine, data);
  }
  g_mutex_clear(&job.lock);
  g_cond_clear(&job.finished);
  gboolean ok = TRUE;
  if (late) {
    g_propagate_error(error, g_steal_pointer(&late));
    ok = FALSE;
  }
  for (guint j = 0; j < n; j++) {
    if (errors[j] && ok) {
      guint i = which ? which[j] : j;
      g_propagate_prefixed_error(error, errors[j], "%s: ", sim_search_label(S, i));
      errors[j] = NULL;
      ok = FALSE;
    }
    g_clear_error(&errors[j]);
  }
  return ok;
}

/* ---- The analytic phase in waves ------------------------------------------------------------- */

void sim_search_set_pruning(sim_search *S, gboolean on) { S->prune = on; }

/* The most samples per second a candidate can reach: its samples over its bound (infinite
 * without one). The plan's samples per iteration are the job's global batch, and measured
 * throughput is that over the iteration time (sim_report_measure), so it is never above. */
static double throughput_bound(const sim_search *S, guint i)
{
  sim_time_ps b = ((const candidate *)S->candidates->pdata[i])->bound_ps;
  return b > 0 ? (double)S->ctx.global_batch / sim_time_to_s(b) : INFINITY;
}

/* The K-th best throughput simulated so far, 0 before there are K. */
static double threshold(const sim_search *S)
{
  guint K = (guint)S->base.top;
  return S->n_best >= K ? S->best[K - 1] : 0;
}

guint sim_search_next_wave(sim_search *S, const guint **which)
{
  g_array_set_size(S->wave, 0);
  S->in_waves = TRUE;
  /* Only a ranking by throughput is bounded: the whole run's time and cost add checkpoints
   * and failures that the bound does not see. */
  gboolean prune = S->prune && S->bounded && S->base.rank_by == SIM_SEARCH_RANK_THROUGHPUT;
  double T = threshold(S);
  guint n = S->order->len;
  while (S->next < n && S->wave->len < S->wave_size) {
    guint i = g_array_index(S->order, guint, S->next);
    /* By bound from here on: every candidate left reaches at most this one's throughput,
     * strictly below the K-th best already simulated. */
    if (prune && T > 0 && throughput_bound(S, i) < T) {
      S->pruned = n - S->next;
      S->next = n;
      break;
    }
    S->next++;
    /* A plan whose memory is known to be above the device's cannot be ranked. */
    const candidate *c = S->candidates->pdata[i];
    if (S->prune && S->device && c->memory_bytes > dev_memory_bytes(S->device)) {
      S->unfit++;
      continue;
    }
    g_array_append_val(S->wave, i);
  }
  S->wave_size = MIN(S->wave_size * 2, WAVE_MOST);
  /* What may come after this wave, for the time limit: the candidates whose bound reaches the
   * K-th best so far (by bound, a run of them from here); none is known before there are K. */
  S->later = 0;
  for (guint k = S->next; prune && T > 0 && k < n; k++) {
    if (throughput_bound(S, g_array_index(S->order, guint, k)) < T)
      break;
    S->later++;
  }
  *which = S->wave->len ? (const guint *)(gpointer)S->wave->data : NULL;
  return S->wave->len;
}

void sim_search_wave_done(sim_search *S, const sim_search_result *results)
{
  guint K = (guint)S->base.top;
  for (guint j = 0; j < S->wave->len; j++) {
    guint i = g_array_index(S->wave, guint, j);
    S->analytic[i] = results[j];
    S->simulated[i] = TRUE;
    S->n_simulated++;
    if (results[j].status != SIM_SEARCH_OK)
      continue;
    /* Keep the best K throughputs, best first. */
    double x = results[j].report.throughput_samples_per_s;
    guint at = S->n_best;
    while (at > 0 && S->best[at - 1] < x)
      at--;
    if (at >= K)
      continue;
    guint keep = MIN(S->n_best, K - 1);
    memmove(&S->best[at + 1], &S->best[at], (keep - at) * sizeof(double));
    S->best[at] = x;
    S->n_best = keep + 1;
  }
  g_array_set_size(S->wave, 0);
}

/* Leaves out the candidates the bound left out: they were never simulated; they count as
 * dropped before simulating, the rest keep their order. */
static void drop_pruned(sim_search *S)
{
  if (!S->pruned && !S->unfit)
    return;
  GPtrArray *kept = g_ptr_array_new_with_free_func(candidate_free);
  guint n = S->candidates->len - S->pruned - S->unfit;
  sim_search_result *results = g_new0(sim_search_result, MAX(n, 1));
  for (guint i = 0; i < S->candidates->len; i++) {
    if (!S->simulated[i])
      continue;
    results[kept->len] = S->analytic[i];
    g_ptr_array_add(kept, g_steal_pointer(&S->candidates->pdata[i]));
  }
  /* The kept ones were taken out: the rest are freed. */
  g_ptr_array_unref(S->candidates);
  S->candidates = kept;
  g_free(S->analytic);
  S->analytic = results;
  if (S->unfit)
    count_drops(S, SIM_DROP_PLAN_MEMORY, S->unfit);
  if (S->pruned)
    count_drops(S, SIM_DROP_TIME_BOUND, S->pruned);
  S->pruned = S->unfit = 0;
}

/* ---- Ranking --------------------------------------------------------------------------------- */

/* What the ranking orders by, higher first: throughput, or the whole run's time or cost
 * negated. */
static double merit(sim_search_rank_by by, const sim_report *r)
{
  switch (by) {
  case SIM_SEARCH_RANK_TIME:
    return -r->train.train_time_s;
  case SIM_SEARCH_RANK_COST:
    return -r->train.train_cost_usd;
  case SIM_SEARCH_RANK_THROUGHPUT:
  default:
    return r->throughput_samples_per_s;
  }
}

typedef struct {
  const sim_search_result *results;
  sim_search_rank_by by;
} rank_order;

static gint by_merit(gconstpointer a, gconstpointer b, gpointer data)
{
  const rank_order *o = data;
  guint i = *(const guint *)a, j = *(const guint *)b;
  double x = merit(o->by, &o->results[i].report), y = merit(o->by, &o->results[j].report);
  if (x != y)
    return x > y ? -1 : 1;
  return i < j ? -1 : i > j;
}

sim_search_result *sim_search_analytic(sim_search *S) { return S->analytic; }

void sim_search_rank(sim_search *S)
{
  drop_pruned(S);
  g_clear_pointer(&S->ranked, g_array_unref);
  S->ranked = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < S->candidates->len; i++)
    if (S->analytic[i].status == SIM_SEARCH_OK)
      g_array_append_val(S->ranked, i);
  rank_order order = {S->analytic, (sim_search_rank_by)S->base.rank_by};
  g_array_sort_with_data(S->ranked, by_merit, &order);
  g_clear_pointer(&S->finalists, g_array_unref);
  S->finalists = g_array_new(FALSE, FALSE, sizeof(guint));
  guint K = MIN((guint)S->base.top, S->ranked->len);
  g_clear_pointer(&S->flow_skipped, g_free);
  if (sim_scenario_given(&S->base, "net-model") && S->base.net_model == COMM_NET_ANALYTIC)
    S->flow_skipped = g_strdup_printf("%s: ranked on the analytic network only",
                                      sim_scenario_where(&S->base, "net-model"));
  else if (S->ctx.devices > SIM_FLOW_MAX_DEVICES)
    S->flow_skipped = g_strdup_printf("%" G_GUINT64_FORMAT " devices: more than the flow network "
                                      "simulates (%d); ranked on the analytic network only",
                                      S->ctx.devices, SIM_FLOW_MAX_DEVICES);
  else
    g_array_append_vals(S->finalists, S->ranked->data, K);
  g_free(S->flow);
  S->flow = g_new0(sim_search_result, MAX(S->finalists->len, 1));
}

const guint *sim_search_finalists(const sim_search *S, guint *n)
{
  *n = S->finalists->len;
  return *n ? (const guint *)(gpointer)S->finalists->data : NULL;
}

sim_search_result *sim_search_flow(sim_search *S) { return S->flow; }

double sim_search_kendall_tau(const double *a, const double *b, guint n)
{
  /* Concordant minus discordant pairs over the pairs not tied in a and not tied in b
   * (tau-b), so configurations the two networks both find equal do not count as disagreement. */
  double cd = 0, untied_a = 0, untied_b = 0;
  for (guint i = 0; i < n; i++)
    for (guint j = i + 1; j < n; j++) {
      double x = a[i] - a[j], y = b[i] - b[j];
      untied_a += x != 0;
      untied_b += y != 0;
      cd += (x * y > 0) - (x * y < 0);
    }
  return untied_a > 0 && untied_b > 0 ? cd / sqrt(untied_a * untied_b) : 1;
}

static gint by_flow(gconstpointer a, gconstpointer b, gpointer data)
{
  const rank_order *o = data;
  const sim_search_result *r = o->results;
  guint i = *(const guint *)a, j = *(const guint *)b;
  /* Simulated finalists first, by their flow merit; then in analytic order. */
  gboolean oi = r[i].status != SIM_SEARCH_REFUSED, oj = r[j].status != SIM_SEARCH_REFUSED;
  if (oi != oj)
    return oi ? -1 : 1;
  double x = merit(o->by, &r[i].report), y = merit(o->by, &r[j].report);
  if (oi && x != y)
    return x > y ? -1 : 1;
  return i < j ? -1 : i > j;
}

void sim_search_finish(sim_search *S)
{
  g_clear_pointer(&S->final, g_array_unref);
  S->final = g_array_new(FALSE, FALSE, sizeof(guint));
  guint K = S->finalists->len;
  for (guint j = 0; j < K; j++)
    g_array_append_val(S->final, j);
  rank_order order = {S->flow, (sim_search_rank_by)S->base.rank_by};
  g_array_sort_with_data(S->final, by_flow, &order);
  /* Agreement: the analytic rank against the flow throughput of each finalist. */
  g_autofree double *a = g_new(double, MAX(K, 1));
  g_autofree double *b = g_new(double, MAX(K, 1));
  for (guint j = 0; j < K; j++) {
    a[j] = S->analytic[g_array_index(S->finalists, guint, j)].report.throughput_samples_per_s;
    b[j] = S->flow[j].report.throughput_samples_per_s;
  }
  S->tau = sim_search_kendall_tau(a, b, K);
}

gboolean sim_search_run(sim_search *S, sim_search_progress_fn progress, gpointer data,
                        GError **error)
{
  const guint *wave;
  guint n;
  while ((n = sim_search_next_wave(S, &wave)) > 0) {
    g_autofree sim_search_result *out = g_new0(sim_search_result, n);
    if (!sim_search_evaluate(S, FALSE, wave, n, 0, 1, S->jobs, progress, data, out, error))
      return FALSE;
    sim_search_wave_done(S, out);
  }
  sim_search_rank(S);
  guint K;
  const guint *which = sim_search_finalists(S, &K);
  if (K && !sim_search_evaluate(S, TRUE, which, K, 0, 1, S->jobs, progress, data, S->flow, error))
    return FALSE;
  sim_search_finish(S);
  return TRUE;
}

/* ---- Outputs --------------------------------------------------------------------------------- */

/* A row of the final table: the candidate, its result on the ranking network and where it
 * stood on the analytic one. */
typedef struct {
  guint candidate;
  const sim_search_result *result;
  guint analytic_rank;        /* 1-based */
  const sim_search_result *analytic;
} row;

/* The rows printed: the finalists in flow order, or the analytic best K. */
static GArray *rows(const sim_search *S)
{
  GArray *out = g_array_new(FALSE, FALSE, sizeof(row));
  if (S->finalists->len) {
    for (guint k = 0; k < S->final->len; k++) {
      guint j = g_array_index(S->final, guint, k);
      guint i = g_array_index(S->finalists, guint, j);
      row r = {i, &S->flow[j], j + 1, &S->analytic[i]};
      g_array_append_val(out, r);
    }
  } else {
    guint K = MIN((guint)S->base.top, S->ranked->len);
    for (guint k = 0; k < K; k++) {
      guint i = g_array_index(S->ranked, guint, k);
      row r = {i, &S->analytic[i], k + 1, &S->analytic[i]};
      g_array_append_val(out, r);
    }
  }
  return out;
}

guint sim_search_n_rows(const sim_search *S)
{
  g_autoptr(GArray) rs = rows(S);
  return rs->len;
}

guint sim_search_row(const sim_search *S, guint k, const sim_search_result **result)
{
  g_autoptr(GArray) rs = rows(S);
  g_return_val_if_fail(k < rs->len, 0);
  *result = g_array_index(rs, row, k).result;
  return g_array_index(rs, row, k).candidate;
}

uint64_t sim_search_n_combinations(const sim_search *S) { return S->combinations; }

const char *sim_search_drop(const sim_search *S, guint k, guint *count)
{
  if (k >= S->drop_reasons->len)
    return NULL;
  *count = g_array_index(S->drop_counts, guint, k);
  return S->drop_reasons->pdata[k];
}

trace_search_table *sim_search_table(const sim_search *S)
{
  trace_search_table *t = g_new0(trace_search_table, 1);
  t->title = S->title;
  t->flow = S->finalists->len > 0;
  t->seq = S->seq;
  t->global_batch = S->ctx.global_batch;
  t->flops_per_sample = S->flops_per_sample;
  t->peak_flops = S->peak_flops;
  t->train = sim_trainrun_asked(&S->base);
  t->cost = sim_scenario_given(&S->base, "gpu-hour-cost");
  t->n_candidates = S->candidates->len;
  t->candidates = g_new0(trace_search_candidate, MAX(t->n_candidates, 1));
  for (guint i = 0; i < t->n_candidates; i++) {
    const candidate *c = S->candidates->pdata[i];
    t->candidates[i] = (trace_search_candidate){.label = c->label,
                                                .strategy = c->scenario.strategy->name,
                                                .settings_json = c->settings_json,
                                                .model = c->scenario.model,
                                                .batch = c->scenario.batch,
                                                .analytic = &S->analytic[i]};
  }
  for (guint k = 0; k < S->ranked->len; k++)
    t->candidates[g_array_index(S->ranked, guint, k)].analytic_rank = k + 1;
  for (guint k = 0; S->final && k < S->final->len; k++) {
    guint j = g_array_index(S->final, guint, k);
    trace_search_candidate *c = &t->candidates[g_array_index(S->finalists, guint, j)];
    c->flow = &S->flow[j];
    c->flow_rank = k + 1;
  }
  t->ranked = (const guint *)(gpointer)S->ranked->data;
  t->n_ranked = S->ranked->len;
  g_autoptr(GArray) rs = rows(S);
  t->n_rows = rs->len;
  t->rows = g_new(guint, MAX(t->n_rows, 1));
  for (guint k = 0; k < rs->len; k++)
    t->rows[k] = g_array_index(rs, row, k).candidate;
  t->combinations = S->combinations;
  t->drops = (const char *const *)S->drop_reasons->pdata;
  t->drop_counts = (const guint *)(gpointer)S->drop_counts->data;
  t->n_drops = S->drop_reasons->len;
  t->flow_skipped = S->flow_skipped;
  t->n_finalists = S->finalists->len;
  t->tau = S->tau;
  t->top1_same = S->final && S->final->len && g_array_index(S->final, guint, 0) == 0;
  return t;
}
