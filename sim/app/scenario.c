/* Scenario keys, files and options (see scenario.h). The key tables live beside their
 * consumers; this file collects them, gives every key its default, and parses text into typed
 * fields through one validator per kind, for INI files and options alike. */
#include "scenario.h"

#include "plan.h"
#include "strategy.h"
#include "faults.h"
#include "framework_keys.h"
#include "linkviews.h"
#include "trainrun_keys.h"
#include "util.h"

#include <string.h>

/* Every group, in --help order. */
/* The key groups in --help order: what is trained and where, the run, each registered
 * strategy's own group (sim/strategies/strategy.h: a strategy brings its keys), then the other
 * commands' and the outputs. Made once. */
static const sim_key_group *const *key_groups(gsize *n)
{
  static const sim_key_group *list[64];
  static gsize count;
  if (g_once_init_enter(&count)) {
    gsize k = 0;
    list[k++] = &sim_keys_model;
    list[k++] = &sim_keys_chakra;
    list[k++] = &sim_keys_cluster;
    list[k++] = &sim_keys_run;
    for (const sim_strategy *const *st = sim_strategies(); *st; st++)
      if ((*st)->keys)
        list[k++] = (*st)->keys;
    list[k++] = &sim_keys_framework;
    list[k++] = &sim_keys_sweep;
    list[k++] = &sim_keys_collective;
    list[k++] = &sim_keys_search;
    list[k++] = &sim_keys_trainrun;
    list[k++] = &sim_keys_faults;
    list[k++] = &sim_keys_links;
    list[k++] = &sim_keys_output;
    g_assert(k <= G_N_ELEMENTS(list));
    g_once_init_leave(&count, k);
  }
  *n = count;
  return list;
}
/* The strategy whose own group this is, or NULL. A group without flags of its own (needs 0)
 * applies to its owner alone. */
static const sim_strategy *group_owner(const sim_key_group *grp)
{
  for (const sim_strategy *const *st = sim_strategies(); *st; st++)
    if ((*st)->keys == grp)
      return *st;
  return NULL;
}

/* The keys that may be given more than once (SIM_KEY_ITEM_LIST), NULL-terminated. */
static const char *const *repeatable_keys(void)
{
  static const char *list[16];
  static gsize done;
  if (g_once_init_enter(&done)) {
    gsize n = 0;
    gsize groups;
    const sim_key_group *const *g = key_groups(&groups);
    for (gsize i = 0; i < groups; i++)
      for (gsize k = 0; k < g[i]->n_keys; k++)
        if (g[i]->keys[k].kind == SIM_KEY_ITEM_LIST && n + 1 < G_N_ELEMENTS(list))
          list[n++] = g[i]->keys[k].name;
    g_once_init_leave(&done, 1);
  }
  return list;
}

static gsize n_groups(void)
{
  gsize n;
  key_groups(&n);
  return n;
}
#define GROUP(g) (key_groups(&(gsize){0})[g])

/* Every key by its name (the first group that declares a name wins) and the index of the group
 * that declares each key, made once: a search sets and reads keys by name for each of its
 * thousands of candidates, and scanning some 150 names each time was 10% of its CPU. */
typedef struct {
  GHashTable *by_name;        /* const char * -> const sim_key * */
  GHashTable *group;          /* const sim_key * -> group index + 1 */
} key_index;

static const key_index *keys_indexed(void)
{
  static key_index idx;
  static gsize done;
  if (g_once_init_enter(&done)) {
    idx.by_name = g_hash_table_new(g_str_hash, g_str_equal);
    idx.group = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (gsize g = 0; g < n_groups(); g++)
      for (gsize i = 0; i < GROUP(g)->n_keys; i++) {
        const sim_key *k = &GROUP(g)->keys[i];
        if (!g_hash_table_contains(idx.by_name, k->name))
          g_hash_table_insert(idx.by_name, (gpointer)k->name, (gpointer)k);
        g_hash_table_insert(idx.group, (gpointer)k, GSIZE_TO_POINTER(g + 1));
      }
    g_once_init_leave(&done, 1);
  }
  return &idx;
}

static const sim_key *find_key(const char *name, const sim_key_group **group_out)
{
  const key_index *idx = keys_indexed();
  const sim_key *k = g_hash_table_lookup(idx->by_name, name);
  if (k && group_out)
    *group_out = GROUP(GPOINTER_TO_SIZE(g_hash_table_lookup(idx->group, k)) - 1);
  return k;
}

gboolean sim_scenario_has_key(const char *key)
{
  return find_key(key, NULL) != NULL;
}

/* The index of the group that declares k. */
static gsize group_of(const sim_key *k)
{
  gsize g = GPOINTER_TO_SIZE(g_hash_table_lookup(keys_indexed()->group, k));
  g_assert(g > 0);
  return g - 1;
}

/* Where a key's value lives: in the group's own block (own_size > 0) or in sim_scenario. */
static void *field_of(const sim_scenario *s, const sim_key *k)
{
  gsize g = group_of(k);
  char *base = GROUP(g)->own_size ? s->own[g] : (char *)s;
  return base + k->offset;
}
#define FIELD(s, k) field_of((s), (k))

gconstpointer sim_scenario_own(const sim_scenario *s, const sim_key_group *group)
{
  for (gsize g = 0; g < n_groups(); g++)
    if (GROUP(g) == group)
      return s->own[g];
  return NULL;
}

static void clear_field(sim_scenario *s, const sim_key *k)
{
  void *f = FIELD(s, k);
  switch (k->kind) {
  case SIM_KEY_STRING:
    g_clear_pointer((char **)f, g_free);
    break;
  case SIM_KEY_INT_LIST:
  case SIM_KEY_SIZE_LIST:
  case SIM_KEY_ITEM_LIST:
    g_clear_pointer((GArray **)f, g_array_unref);
    break;
  case SIM_KEY_REF_LIST:
    g_clear_pointer((GPtrArray **)f, g_ptr_array_unref);
    break;
  default:
    break;
  }
}

void sim_scenario_clear(sim_scenario *s)
{
  for (gsize g = 0; g < n_groups(); g++)
    /* A zeroed scenario (never initialised) has no blocks for the groups that keep their own. */
    for (gsize i = 0; i < GROUP(g)->n_keys && (!GROUP(g)->own_size || s->own[g]); i++)
      clear_field(s, &GROUP(g)->keys[i]);
  for (gsize g = 0; g < G_N_ELEMENTS(s->own); g++)
    g_clear_pointer(&s->own[g], g_free);
  g_clear_pointer(&s->origin, g_hash_table_unref);
  g_clear_pointer(&s->given, g_hash_table_unref);
  g_clear_pointer(&s->jobs_file, g_free);
}

static gboolean set_value(sim_scenario *s, const sim_key *k, const char *value,
                          const char *where, GError **error);

/* The position of `name` in a list of names separated by '|' ("ring|tree|nccl"), or -1. */
static int choice_index(const char *list, const char *name)
{
  size_t len = strlen(name);
  int i = 0;
  for (const char *p = list;; i++) {
    const char *end = strchr(p, '|');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n == len && strncmp(p, name, n) == 0)
      return i;
    if (!end)
      return -1;
    p = end + 1;
  }
}

/* A CHOICE key's names, '|'-separated (made once per key and kept, like help_text). */
static const char *choice_list(const sim_key *k)
{
  if (k->choices)
    return k->choices;
  g_autoptr(GString) list = g_string_new(NULL);
  for (int i = 0; i < k->n_choices; i++)
    g_string_append_printf(list, "%s%s", i ? "|" : "", k->choice_name(i));
  return g_intern_string(list->str);
}

void sim_scenario_init(sim_scenario *s)
{
  memset(s, 0, sizeof *s);
  /* Only keys given a value get an origin; the others are named as options
   * (sim_scenario_where). */
  s->origin = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
  s->given = g_hash_table_new(g_str_hash, g_str_equal);
  g_assert(n_groups() <= G_N_ELEMENTS(s->own));
  for (gsize g = 0; g < n_groups(); g++)
    if (GROUP(g)->own_size)
      s->own[g] = g_malloc0(GROUP(g)->own_size);
  for (gsize g = 0; g < n_groups(); g++)
    for (gsize i = 0; i < GROUP(g)->n_keys; i++) {
      const sim_key *k = &GROUP(g)->keys[i];
      if (!k->def)
        continue;
      g_autoptr(GError) error = NULL;
      if (!set_value(s, k, k->def, k->name, &error))
        g_error("default of key %s: %s", k->name, error->message);
    }
}

/* Makes the field of k in s, a shallow copy of another's, its own. */
static void own_field(sim_scenario *s, const sim_key *k)
{
  void *f = FIELD(s, k);
  switch (k->kind) {
  case SIM_KEY_STRING:
    *(char **)f = g_strdup(*(char **)f);
    break;
  case SIM_KEY_INT_LIST:
  case SIM_KEY_SIZE_LIST:
  case SIM_KEY_ITEM_LIST:
    if (*(GArray **)f)
      *(GArray **)f = g_array_copy(*(GArray **)f);
    break;
  case SIM_KEY_REF_LIST:
    if (*(GPtrArray **)f)
      *(GPtrArray **)f = g_ptr_array_copy(*(GPtrArray **)f, NULL, NULL);
    break;
  default:
    break;
  }
}

/* The bytes of a key's field (the C type of its kind). */
static size_t field_size(const sim_key *k)
{
  switch (k->kind) {
  case SIM_KEY_INT:
    return sizeof(int64_t);
  case SIM_KEY_SIZE:
  case SIM_KEY_MIB:
    return sizeof(uint64_t);
  case SIM_KEY_DOUBLE:
    return sizeof(double);
  case SIM_KEY_ONOFF:
  case SIM_KEY_FLAG:
    return sizeof(gboolean);
  case SIM_KEY_CHOICE:
    return sizeof(int);
  default:
    return sizeof(void *);
  }
}

void sim_scenario_copy_key(sim_scenario *dst, const sim_scenario *src, const char *key)
{
  const sim_key *k = find_key(key, NULL);
  g_return_if_fail(k != NULL);
  clear_field(dst, k);
  memcpy(FIELD(dst, k), FIELD(src, k), field_size(k));
  own_field(dst, k);
  const char *where = g_hash_table_lookup(src->origin, k->name);
  if (where)
    g_hash_table_insert(dst->origin, (gpointer)k->name, g_strdup(where));
  else
    g_hash_table_remove(dst->origin, k->name);
  if (g_hash_table_contains(src->given, k->name))
    g_hash_table_add(dst->given, (gpointer)k->name);
  else
    g_hash_table_remove(dst->given, k->name);
}

void sim_scenario_copy(sim_scenario *dst, const sim_scenario *src)
{
  *dst = *src;
  dst->jobs_file = g_strdup(src->jobs_file);
  for (gsize g = 0; g < n_groups(); g++)
    if (GROUP(g)->own_size)
      dst->own[g] = g_memdup2(src->own[g], GROUP(g)->own_size);
  for (gsize g = 0; g < n_groups(); g++)
    for (gsize i = 0; i < GROUP(g)->n_keys; i++)
      own_field(dst, &GROUP(g)->keys[i]);
  dst->given = g_hash_table_new(g_str_hash, g_str_equal);
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, src->given);
  while (g_hash_table_iter_next(&it, &key, NULL))
    g_hash_table_add(dst->given, key);
  dst->origin = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
  g_hash_table_iter_init(&it, src->origin);
  while (g_hash_table_iter_next(&it, &key, &value))
    g_hash_table_insert(dst->origin, key, g_strdup(value));
}

const char *sim_scenario_where(const sim_scenario *s, const char *key)
{
  const char *w = g_hash_table_lookup(s->origin, key);
  if (w)
    return w;
  g_return_val_if_fail(find_key(key, NULL) != NULL, key);
  /* A key nobody gave is named as its option; interned, so it lives as long as the process
   * (error paths only). */
  g_autofree char *option = g_strconcat("--", key, NULL);
  return g_intern_string(option);
}

gboolean sim_scenario_given(const sim_scenario *s, const char *key)
{
  return g_hash_table_contains(s->given, key);
}

/* A list of registry names resolved one by one. */
static GPtrArray *parse_ref_list(const sim_key *k, const char *value, const char *where,
                                 GError **error)
{
  g_auto(GStrv) names = dt_parse_name_list(value, where, error);
  if (!names)
    return NULL;
  g_autoptr(GPtrArray) refs = g_ptr_array_new();
  for (char **n = names; *n; n++) {
    const void *r = k->resolve(*n, where, error);
    if (!r)
      return NULL;
    g_ptr_array_add(refs, (gpointer)r);
  }
  return g_steal_pointer(&refs);
}

/* Validates one textual value and stores it. `where` prefixes messages ("--batch" or
 * "FILE:LINE: [scenario] batch"). */
static gboolean set_value(sim_scenario *s, const sim_key *k, const char *value,
                          const char *where, GError **error)
{
  void *f = FIELD(s, k);
  switch (k->kind) {
  case SIM_KEY_STRING:
    if (*value == '\0') {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: empty value", where);
      return FALSE;
    }
    g_free(*(char **)f);
    *(char **)f = g_strdup(value);
    return TRUE;
  case SIM_KEY_INT:
    return dt_parse_int64(value, where, k->min, k->max, f, error);
  case SIM_KEY_SIZE: {
    uint64_t v;
    if (!dt_parse_size(value, where, &v, error))
      return FALSE;
    if (v < (uint64_t)k->min || v > (uint64_t)k->max) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s is not in [%" G_GINT64_FORMAT ", %"
                  G_GINT64_FORMAT "] bytes", where, value, k->min, k->max);
      return FALSE;
    }
    *(uint64_t *)f = v;
    return TRUE;
  }
  case SIM_KEY_MIB: {
    double mib;
    if (!dt_parse_double(value, where, (double)k->min, (double)k->max, &mib, error))
      return FALSE;
    *(uint64_t *)f = (uint64_t)(mib * 1048576.0 + 0.5);
    return TRUE;
  }
  case SIM_KEY_DOUBLE:
    return dt_parse_double(value, where, (double)k->min, (double)k->max, f, error);
  case SIM_KEY_ONOFF:
  case SIM_KEY_FLAG:
    return dt_parse_bool(value, where, f, error);
  case SIM_KEY_CHOICE: {
    int i = choice_index(choice_list(k), value);
    if (i >= 0) {
      *(int *)f = i;
      return TRUE;
    }
    g_auto(GStrv) choices = g_strsplit(choice_list(k), "|", -1);
    g_autofree char *list = g_strjoinv(", ", choices);
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: unknown value '%s' (one of: %s)", where,
                value, list);
    return FALSE;
  }
  case SIM_KEY_REF: {
    const void *r = k->resolve(value, where, error);
    if (!r)
      return FALSE;
    *(const void **)f = r;
    return TRUE;
  }
  case SIM_KEY_INT_LIST: {
    GArray *list = dt_parse_int_list(value, where, k->min, k->max, error);
    if (!list)
      return FALSE;
    clear_field(s, k);
    *(GArray **)f = list;
    return TRUE;
  }
  case SIM_KEY_SIZE_LIST: {
    GArray *list = dt_parse_size_list(value, where, error);
    if (!list)
      return FALSE;
    clear_field(s, k);
    *(GArray **)f = list;
    return TRUE;
  }
  case SIM_KEY_REF_LIST: {
    GPtrArray *list = parse_ref_list(k, value, where, error);
    if (!list)
      return FALSE;
    clear_field(s, k);
    *(GPtrArray **)f = list;
    return TRUE;
  }
  case SIM_KEY_ITEM_LIST: {
    /* Appends: a repeated option adds its items to those before it. */
    g_auto(GStrv) items = dt_parse_name_list(value, where, error);
    if (!items)
      return FALSE;
    g_autofree void *item = g_malloc0(k->item_size);
    GArray **list = f;
    for (char **it = items; *it; it++) {
      if (!k->parse(*it, where, item, error))
        return FALSE;
      if (!*list)
        *list = g_array_new(FALSE, TRUE, (guint)k->item_size);
      g_array_append_vals(*list, item, 1);
    }
    return TRUE;
  }
  }
  return FALSE;
}

static gboolean set_given(sim_scenario *s, const sim_key *k, const char *value, const char *where,
                          GError **error)
{
  if (!set_value(s, k, value, where, error))
    return FALSE;
  g_hash_table_insert(s->origin, (gpointer)k->name, g_strdup(where));
  g_hash_table_add(s->given, (gpointer)k->name);
  return TRUE;
}

gboolean sim_scenario_key_equals(const sim_scenario *s, const char *key, const char *value)
{
  const sim_key *k = find_key(key, NULL);
  g_return_val_if_fail(k != NULL, FALSE);
  /* Scalars only (the fixed settings of search families): the value parsed into a scratch
   * scenario, compared with the field. */
  g_return_val_if_fail(k->kind == SIM_KEY_INT || k->kind == SIM_KEY_CHOICE ||
                           k->kind == SIM_KEY_ONOFF || k->kind == SIM_KEY_REF, FALSE);
  g_auto(sim_scenario) scratch;
  sim_scenario_init(&scratch);
  if (!set_value(&scratch, k, value, key, NULL))
    return FALSE;
  size_t size = k->kind == SIM_KEY_INT ? sizeof(int64_t)
                : k->kind == SIM_KEY_REF ? sizeof(void *)
                : k->kind == SIM_KEY_ONOFF ? sizeof(gboolean) : sizeof(int);
  return memcmp(FIELD(s, k), FIELD(&scratch, k), size) == 0;
}

gboolean sim_scenario_set(sim_scenario *s, const char *key, const char *value, const char *where,
                          GError **error)
{
  const sim_key *k = find_key(key, NULL);
  g_return_val_if_fail(k != NULL, FALSE);
  g_autofree char *opt = where ? NULL : g_strconcat("--", key, NULL);
  return set_given(s, k, value, where ? where : opt, error);
}

gboolean sim_scenario_load_group(sim_scenario *s, const dt_ini *ini, const char *group,
                                 unsigned set, const char *const *skip, GError **error)
{
  g_auto(GStrv) keys = g_key_file_get_keys(dt_ini_keyfile(ini), group, NULL, NULL);
  for (char **kp = keys; kp && *kp; kp++) {
    if (skip && g_strv_contains(skip, *kp))
      continue;
    const sim_key *k = find_key(*kp, NULL);
    if (!k || !(k->commands & set))
      return dt_ini_error(ini, group, *kp, error,
                          k ? "not used by this command" : "unknown key");
    g_autofree char *value = dt_ini_string(ini, group, *kp, TRUE, error);
    if (!value)
      return FALSE;
    int line = dt_ini_line(ini, group, *kp);
    g_autofree char *where = g_strdup_printf("%s:%d: [%s] %s", dt_ini_path(ini), line, group,
                                             *kp);
    if (!set_given(s, k, value, where, error))
      return FALSE;
  }
  return TRUE;
}

gboolean sim_scenario_load(sim_scenario *s, const char *path, unsigned set, GError **error)
{
  g_autoptr(dt_ini) ini = dt_ini_load(path, error);
  if (!ini)
    return FALSE;
  GKeyFile *kf = dt_ini_keyfile(ini);
  if (!g_key_file_has_group(kf, "scenario")) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: no [scenario] group", path);
    return FALSE;
  }
  /* [job NAME] groups (sim/jobs.h) are read by `run` once the cluster is known; the commands
   * that vary one job (sweep, search) or time one collective do not take them. */
  gboolean takes_jobs = (set & SIM_OPTS_RUN) && !(set & (SIM_OPTS_SWEEP | SIM_OPTS_SEARCH));
  g_auto(GStrv) names = g_key_file_get_groups(kf, NULL);
  for (char **gp = names; *gp; gp++) {
    if (strcmp(*gp, "scenario") == 0)
      continue;
    if (!g_str_has_prefix(*gp, "job "))
      return dt_ini_error(ini, *gp, NULL, error,
                          "unknown group (only [scenario] and [job NAME] are read)");
    if (!takes_jobs)
      return dt_ini_error(ini, *gp, NULL, error,
                          "several jobs on one cluster are simulated by `dtsim run` only "
                          "(sweep, search and collective take the one job of [scenario])");
    g_free(s->jobs_file);
    s->jobs_file = g_strdup(path);
  }
  return sim_scenario_load_group(s, ini, "scenario", set, NULL, error);
}

const sim_key_group *const *sim_scenario_key_groups(gsize *n) { return key_groups(n); }

/* ---- Options ------------------------------------------------------------------------------- */

typedef struct {
  const sim_key *key;
  char *value;            /* set by GOptionContext (flags: by flag_option) */
  char **values;          /* SIM_KEY_ITEM_LIST: every occurrence */
} opt_slot;

struct sim_scenario_opts {
  GArray *slots;          /* opt_slot */
  GPtrArray *entries;     /* owned GOptionEntry arrays */
};

/* A key's --help text: its help, and its default when it has one worth printing (not for
 * flags), or the command's own help and default (sim_key_use). The keys are static, so each
 * text is made once per process and kept. */
static const char *help_text(const sim_key *k, const sim_key_use *use)
{
  static GHashTable *texts;   /* sim_key * -> interned text */
  G_LOCK_DEFINE_STATIC(texts);
  if (use && (use->def || use->help)) {
    const char *help = use->help ? use->help : k->help, *def = use->def ? use->def : k->def;
    g_autofree char *made = def && k->kind != SIM_KEY_FLAG
                                ? g_strdup_printf("%s (default %s)", help, def)
                                : g_strdup(help);
    return g_intern_string(made);
  }
  G_LOCK(texts);
  if (!texts)
    texts = g_hash_table_new(g_direct_hash, g_direct_equal);
  const char *text = g_hash_table_lookup(texts, k);
  if (!text) {
    g_autofree char *made = k->def && k->kind != SIM_KEY_FLAG
                                ? g_strdup_printf("%s (default %s)", k->help, k->def)
                                : g_strdup(k->help);
    text = g_intern_string(made);
    g_hash_table_insert(texts, (gpointer)k, (gpointer)text);
  }
  G_UNLOCK(texts);
  return text;
}

/* How the command uses key k where it differs from the table (sim_key_use), or NULL. */
static const sim_key_use *use_of(const sim_key_use *uses, const sim_key *k)
{
  for (const sim_key_use *u = uses; u && u->key; u++)
    if (strcmp(u->key, k->name) == 0)
      return u;
  return NULL;
}

/* A flag's option: bare it means on; with a value (--json=no) the value decides, parsed as any
 * boolean key. The slot is found by the option's name. */
static gboolean flag_option(const char *option_name, const char *value, gpointer data,
                            GError **error)
{
  sim_scenario_opts *o = data;
  const char *name = option_name + (g_str_has_prefix(option_name, "--") ? 2 : 0);
  for (guint i = 0; i < o->slots->len; i++) {
    opt_slot *slot = &g_array_index(o->slots, opt_slot, i);
    if (slot->key && strcmp(slot->key->name, name) == 0) {
      g_free(slot->value);
      slot->value = g_strdup(value ? value : "on");
      return TRUE;
    }
  }
  g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_UNKNOWN_OPTION, "unknown option %s",
              option_name);
  return FALSE;
}

/* The groups whose options `--help` shows with the command's own (the others with
 * --help-GROUP or --help-all): what every run names. */
static gboolean main_group(const sim_key_group *grp)
{
  return grp == &sim_keys_model || grp == &sim_keys_cluster || grp == &sim_keys_run ||
         grp == &sim_keys_output;
}

static sim_scenario_opts *opts_new(GOptionContext *ctx, unsigned set, const sim_key_use *uses)
{
  sim_scenario_opts *o = g_new0(sim_scenario_opts, 1);
  o->slots = g_array_new(FALSE, TRUE, sizeof(opt_slot));
  o->entries = g_ptr_array_new_with_free_func(g_free);
  /* The flags' callbacks find their slots through the main group's data: the context must not
   * have a main group of someone else's yet. */
  g_return_val_if_fail(g_option_context_get_main_group(ctx) == NULL, o);
  g_option_context_set_main_group(ctx, g_option_group_new(NULL, NULL, NULL, o, NULL));
  /* Slots first, so their addresses stay put while entries point into them. */
  gsize total = 0;
  for (gsize g = 0; g < n_groups(); g++)
    total += GROUP(g)->n_keys;
  g_array_set_size(o->slots, total);
  gsize n = 0;
  for (gsize g = 0; g < n_groups(); g++) {
    const sim_key_group *grp = GROUP(g);
    GOptionEntry *entries = g_new0(GOptionEntry, grp->n_keys + 1);
    g_ptr_array_add(o->entries, entries);
    gsize e = 0;
    for (gsize i = 0; i < grp->n_keys; i++) {
      const sim_key *k = &grp->keys[i];
      if (!(k->commands & set))
        continue;
      opt_slot *slot = &g_array_index(o->slots, opt_slot, n++);
      slot->key = k;
      GOptionEntry *en = &entries[e++];
      const sim_key_use *use = use_of(uses, k);
      en->long_name = k->name;
      en->short_name = use ? use->short_name : 0;
      en->description = help_text(k, use);
      en->arg_description = k->kind == SIM_KEY_CHOICE ? choice_list(k) : k->arg;
      if (k->kind == SIM_KEY_FLAG) {
        en->arg = G_OPTION_ARG_CALLBACK;
        en->flags = G_OPTION_FLAG_OPTIONAL_ARG;
        en->arg_data = (gpointer)flag_option;
      } else if (k->kind == SIM_KEY_ITEM_LIST) {
        en->arg = G_OPTION_ARG_STRING_ARRAY;
        en->arg_data = &slot->values;
      } else {
        en->arg = G_OPTION_ARG_STRING;
        en->arg_data = &slot->value;
      }
    }
    if (e == 0)
      continue;
    dt_option_entries_as_bytes(entries);   /* file names need not be text in the locale */
    if (main_group(grp)) {
      g_option_context_add_main_entries(ctx, entries, NULL);
    } else {
      const sim_strategy *owner = group_owner(grp);
      g_autofree char *takers = grp->needs  ? sim_strategy_names_with(grp->needs, "|")
                                : owner ? g_strdup(owner->name)
                                        : NULL;
      g_autofree char *desc = takers ? g_strdup_printf("Options of --strategy %s:", takers)
                                     : g_strdup_printf("Options (%s):", grp->name);
      g_autofree char *hdesc = g_strdup_printf("Show the %s options", grp->name);
      GOptionGroup *og = g_option_group_new(grp->name, desc, hdesc, o, NULL);
      g_option_group_add_entries(og, entries);
      g_option_context_add_group(ctx, og);
    }
  }
  g_array_set_size(o->slots, n);
  return o;
}

sim_scenario_opts *sim_scenario_opts_new(GOptionContext *ctx, unsigned set)
{
  return opts_new(ctx, set, NULL);
}

void sim_scenario_opts_free(sim_scenario_opts *o)
{
  if (!o)
    return;
  for (guint i = 0; i < o->slots->len; i++) {
    g_free(g_array_index(o->slots, opt_slot, i).value);
    g_strfreev(g_array_index(o->slots, opt_slot, i).values);
  }
  g_array_free(o->slots, TRUE);
  g_ptr_array_free(o->entries, TRUE);
  g_free(o);
}

gboolean sim_scenario_apply_options(sim_scenario *s, const sim_scenario_opts *o, GError **error)
{
  for (guint i = 0; i < o->slots->len; i++) {
    const opt_slot *slot = &g_array_index(o->slots, opt_slot, i);
    g_autofree char *where = g_strconcat("--", slot->key->name, NULL);
    if (slot->key->kind == SIM_KEY_ITEM_LIST) {
      /* The options replace what a file gave; each occurrence adds. */
      if (slot->values)
        clear_field(s, slot->key);
      for (char **v = slot->values; v && *v; v++)
        if (!set_given(s, slot->key, *v, where, error))
          return FALSE;
    } else if (slot->value && !set_given(s, slot->key, slot->value, where, error)) {
      return FALSE;
    }
  }
  return TRUE;
}

/* ---- Applicability ----------------------------------------------------------------------- */

const char *sim_scenario_strategy_name(const sim_scenario *s)
{
  return s->strategy ? s->strategy->name : "";
}

gboolean sim_scenario_check(const sim_scenario *s, GError **error)
{
  /* The strategies the scenario covers: the one chosen, or every swept one. */
  g_autoptr(GPtrArray) covered = g_ptr_array_new();
  if (s->strategy_list)
    for (guint i = 0; i < s->strategy_list->len; i++)
      g_ptr_array_add(covered, s->strategy_list->pdata[i]);
  else if (s->strategy)
    g_ptr_array_add(covered, (gpointer)s->strategy);
  for (gsize g = 0; g < n_groups(); g++) {
    const sim_key_group *grp = GROUP(g);
    for (gsize i = 0; i < grp->n_keys; i++) {
      const sim_key *k = &grp->keys[i];
      unsigned needs = k->needs ? k->needs : grp->needs;
      const sim_strategy *owner = needs ? NULL : group_owner(grp);
      if ((!needs && !owner) || !sim_scenario_given(s, k->name))
        continue;
      gboolean applies = FALSE;
      for (guint c = 0; c < covered->len && !applies; c++)
        applies = owner ? covered->pdata[c] == owner
                        : (sim_strategy_flags_for(covered->pdata[c], s) & needs) == needs;
      if (!applies) {
        g_autofree char *list = owner ? g_strdup(owner->name) : sim_strategy_names_with(needs, ",");
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "%s: applies to --strategy %s, not %s", sim_scenario_where(s, k->name), list,
                    s->strategy_list ? "the swept strategies" : sim_scenario_strategy_name(s));
        return FALSE;
      }
    }
  }
  return sim_trainrun_check(s, error) && sim_faults_check(s, error) &&
         sim_linkviews_check(s, error);
}

/* ---- Command lines --------------------------------------------------------------------------- */

/* `--nodes` is one number for `run`; a sweep also takes a list there ("1,2,4", "1..64"), which
 * is the --nodes-list axis. Returns the arguments with such a --nodes rewritten. */
GPtrArray *sim_scenario_sweep_args(int argc, char **argv)
{
  GPtrArray *args = g_ptr_array_new_with_free_func(g_free);
  for (int i = 0; i < argc; i++) {
    const char *v = NULL;
    gboolean separate = FALSE;
    if (g_str_has_prefix(argv[i], "--nodes="))
      v = argv[i] + strlen("--nodes=");
    else if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc)
      v = argv[i + 1], separate = TRUE;
    if (v && (strchr(v, ',') || strstr(v, ".."))) {
      g_ptr_array_add(args, g_strconcat("--nodes-list=", v, NULL));
      i += separate;
    } else {
      g_ptr_array_add(args, g_strdup(argv[i]));
    }
  }
  g_ptr_array_add(args, NULL);
  return args;
}

/* Every output can be written, and none overwrites an input or another output
 * (dt_files_distinct). */
gboolean sim_scenario_check_files(const sim_scenario *s, const char *scenario_file, GError **error)
{
  const dt_file_role files[] = {
      {scenario_file, "the scenario file", FALSE},
      {s->model, sim_scenario_where(s, "model"), FALSE},
      {s->calibration, sim_scenario_where(s, "calibration"), FALSE},
      {s->system, sim_scenario_where(s, "system"), FALSE},
      {s->device, sim_scenario_where(s, "device"), FALSE},
      {s->intra, sim_scenario_where(s, "intra"), FALSE},
      {s->inter, sim_scenario_where(s, "inter"), FALSE},
      {s->trace, sim_scenario_where(s, "trace"), TRUE},
      {s->csv, sim_scenario_where(s, "csv"), TRUE},
      {s->plot, sim_scenario_where(s, "plot"), TRUE},
      {s->link_heatmap, sim_scenario_where(s, "link-heatmap"), TRUE},
  };
  /* The overlay is a file, never a catalog name: a missing one is said at once, by its key
   * (not by the device or system it would have been laid over). */
  if (s->calibration && !g_file_test(s->calibration, G_FILE_TEST_EXISTS)) {
    g_autofree char *shown = dt_escape(s->calibration);
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s: no such file",
                sim_scenario_where(s, "calibration"), shown);
    return FALSE;
  }
  /* Every output can be written, checked before the work (a search or a sweep takes long). */
  for (gsize i = 0; i < G_N_ELEMENTS(files); i++)
    if (files[i].output && files[i].path && !dt_outfile_check(files[i].path, files[i].what, error))
      return FALSE;
  return dt_files_distinct(files, G_N_ELEMENTS(files), error);
}

gboolean sim_scenario_parse_args(sim_scenario *s, const sim_command_line *cl, int argc,
                                 char **argv, GError **error)
{
  unsigned set = cl->set;
  g_autoptr(GPtrArray) args = (set & SIM_OPTS_SWEEP) ? sim_scenario_sweep_args(argc, argv) : NULL;
  /* Option parsing rearranges the vector it is given: give it a view, keep ownership here. */
  g_autofree char **view = g_memdup2(args ? (gconstpointer)args->pdata : (gconstpointer)argv,
                                     (gsize)(args ? args->len : (guint)argc + 1) * sizeof(char *));
  if (args)
    argc = (int)args->len - 1;
  g_autoptr(GOptionContext) ctx =
      g_option_context_new(cl->parameter ? cl->parameter : "[SCENARIO.ini]");
  if (cl->summary)
    g_option_context_set_summary(ctx, cl->summary);
  /* The command's own defaults of shared keys replace the keys' before anything is read. */
  for (const sim_key_use *u = cl->uses; u && u->key; u++) {
    const sim_key *k = find_key(u->key, NULL);
    g_return_val_if_fail(k != NULL && (k->commands & set), FALSE);
    g_return_val_if_fail(!u->short_name || k->kind != SIM_KEY_FLAG, FALSE);
    if (u->def && !set_value(s, k, u->def, k->name, error))
      return FALSE;
  }
  /* The scenario's options make the main group; the command's own join it. */
  g_autoptr(sim_scenario_opts) o = opts_new(ctx, set, cl->uses);
  if (cl->entries) {
    dt_option_entries_as_bytes(cl->entries);
    g_option_context_add_main_entries(ctx, cl->entries, NULL);
  }
  char **v = view;
  if (cl->help) {
    g_option_context_set_help_enabled(ctx, FALSE);
    for (int i = 1; i < argc; i++)
      if (g_str_has_prefix(v[i], "--help") || strcmp(v[i], "-h") == 0) {
        g_autofree char *help = g_option_context_get_help(ctx, FALSE, NULL);
        cl->help(help, cl->help_data);
        return FALSE;
      }
  }
  if (!dt_args_check_repeats(argc, v, repeatable_keys(), error) ||
      !g_option_context_parse(ctx, &argc, &v, error))
    return FALSE;
  /* An option given without its value takes the next option as its value ("--sequence-parallel
   * --allreduce ring" leaves "ring" as a scenario file): say so before anything else. */
  for (guint i = 0; i < o->slots->len; i++) {
    const opt_slot *slot = &g_array_index(o->slots, opt_slot, i);
    if (!slot->value || !g_str_has_prefix(slot->value, "--"))
      continue;
    g_autofree char *name = g_strndup(slot->value + 2, strcspn(slot->value + 2, "="));
    if (find_key(name, NULL)) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "--%s: no value given ('%s' is the next option)", slot->key->name, slot->value);
      return FALSE;
    }
  }
  int positional = argc - 1;
  if (cl->args) {
    /* The command's own positional arguments; no scenario file, and its files are its own. */
    char **words = g_new0(char *, (gsize)argc);
    for (int i = 1; i < argc; i++)
      words[i - 1] = g_strdup(v[i]);
    *cl->args = words;
    return sim_scenario_apply_options(s, o, error) &&
           (cl->check ? cl->check(s, error) : sim_scenario_check(s, error));
  }
  if (positional > 1) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "unexpected argument '%s'", v[2]);
    return FALSE;
  }
  if (positional == 1 && !sim_scenario_load(s, v[1], set, error))
    return FALSE;
  return sim_scenario_apply_options(s, o, error) &&
         (cl->check ? cl->check(s, error) : sim_scenario_check(s, error)) &&
         sim_scenario_check_files(s, positional == 1 ? v[1] : NULL, error);
}
