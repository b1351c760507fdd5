/* Reading the jobs of a shared cluster into typed per-job scenarios (see jobs.h). */
#include "jobs.h"

#include "placement.h"
#include "strategy.h"
#include "util.h"

#include <string.h>

/* Keys of the run as a whole that are not in the cluster's groups. */
static const char *const run_keys[] = {"iterations", "max-memory", "link-down", NULL};
/* Keys a job may not take: its workload is the model, not a trace. */
static const char *const refused_keys[] = {"chakra", "chakra-out", NULL};

static gboolean in_group(const sim_key_group *g, const char *key)
{
  for (gsize i = 0; i < g->n_keys; i++)
    if (strcmp(g->keys[i].name, key) == 0)
      return TRUE;
  return FALSE;
}

gboolean sim_jobs_cluster_key(const char *key)
{
  return in_group(&sim_keys_cluster, key) || in_group(&sim_keys_output, key) ||
         in_group(&sim_keys_links, key) || g_strv_contains(run_keys, key);
}

static void job_free(gpointer p)
{
  sim_job *j = p;
  g_free(j->name);
  sim_scenario_clear(&j->s);
  if (j->nodes)
    g_array_unref(j->nodes);
  g_free(j);
}

void sim_jobs_free(sim_jobs *j)
{
  if (!j)
    return;
  g_free(j->path);
  g_ptr_array_unref(j->jobs);
  g_free(j);
}

/* The cluster's scenario holds no key of a job (from [scenario] or an option). */
static gboolean check_cluster(const sim_scenario *cluster, GError **error)
{
  gsize n;
  const sim_key_group *const *groups = sim_scenario_key_groups(&n);
  for (gsize g = 0; g < n; g++)
    for (gsize i = 0; i < groups[g]->n_keys; i++) {
      const char *key = groups[g]->keys[i].name;
      if (!sim_scenario_given(cluster, key) || sim_jobs_cluster_key(key))
        continue;
      if (strcmp(key, "symmetry") == 0)
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "%s: the jobs of %s share a cluster, so every device of each is simulated "
                    "(--symmetry off); it cannot be set for them", sim_scenario_where(cluster, key),
                    cluster->jobs_file);
      else
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "%s: describes a job: with [job NAME] groups in %s, set it in each job's "
                    "group", sim_scenario_where(cluster, key), cluster->jobs_file);
      return FALSE;
    }
  return TRUE;
}

/* The keys of a job's group: none of the cluster's (but nodes), no trace workload, and
 * --symmetry on refused: jobs that share a cluster run every device. */
static gboolean check_job_keys(const dt_ini *ini, const char *group, GError **error)
{
  g_auto(GStrv) keys = g_key_file_get_keys(dt_ini_keyfile(ini), group, NULL, NULL);
  for (char **kp = keys; kp && *kp; kp++) {
    if (strcmp(*kp, "nodes") == 0 || strcmp(*kp, "node-list") == 0)
      continue;
    if (sim_jobs_cluster_key(*kp))
      return dt_ini_error(ini, group, *kp, error,
                          "belongs to [scenario] (the cluster and the run of all the jobs), "
                          "not to a job");
    if (g_strv_contains(refused_keys, *kp))
      return dt_ini_error(ini, group, *kp, error,
                          "a job on a shared cluster trains a model; traces are read and "
                          "written by single-job runs");
  }
  return TRUE;
}

/* Reads the [job NAME] group `group` into j (its name set) and its placement request. */
static gboolean fill_job(sim_job *j, const sim_scenario *cluster, const dt_ini *ini,
                         const char *group, sim_place_request *req, GError **error)
{
  const char *path = dt_ini_path(ini);
  sim_scenario_copy(&j->s, cluster);
  g_clear_pointer(&j->s.jobs_file, g_free);
  static const char *const skip[] = {"node-list", NULL};
  if (!sim_scenario_load_group(&j->s, ini, group, SIM_CMD_RUN, skip, error))
    return FALSE;
  if (dt_ini_has(ini, group, "symmetry") && j->s.symmetry)
    return dt_ini_error(ini, group, "symmetry", error,
                        "on folds a job onto one device per stage; jobs that share a cluster "
                        "simulate every device (off)");
  /* Every device of every job is simulated: their collectives meet on the links. */
  j->s.symmetry = FALSE;
  const sim_strategy *st = sim_strategy_for_scenario(&j->s, error);
  if (!st)
    return FALSE;
  if (sim_strategy_flags_for(st, &j->s) & (SIM_STRATEGY_SERVERS | SIM_STRATEGY_THREADS)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: %s does not share a cluster (its parameter servers or threads are not "
                "nodes of a job); jobs take dp, mp, pp, hybrid or 3d",
                sim_scenario_where(&j->s, "strategy"), st->name);
    return FALSE;
  }
  if (!sim_scenario_check(&j->s, error))
    return FALSE;
  /* Checked with the cluster's keys; built without the run's outputs (the jobs write one trace
   * together) and on a cluster of its own nodes only (whose links the failed ones may not be). */
  g_clear_pointer(&j->s.trace, g_free);
  g_clear_pointer(&j->s.csv, g_free);
  g_clear_pointer(&j->s.link_heatmap, g_free);
  g_clear_pointer(&j->s.links_down, g_array_unref);
  j->s.json = FALSE;
  /* Its nodes: a list, or a count. */
  gboolean has_nodes = dt_ini_has(ini, group, "nodes");
  g_autoptr(GArray) list = NULL;
  if (dt_ini_has(ini, group, "node-list")) {
    g_autofree char *text = dt_ini_string(ini, group, "node-list", TRUE, error);
    if (!text)
      return FALSE;
    g_autofree char *where = g_strdup_printf("%s:%d: [%s] node-list", path,
                                             dt_ini_line(ini, group, "node-list"), group);
    if (!sim_place_parse_list(text, where, (uint32_t)MAX(cluster->nodes - 1, 0), &list, error))
      return FALSE;
    if (has_nodes && (int64_t)list->len != j->s.nodes) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s: %" G_GINT64_FORMAT " nodes, but node-list names %u",
                  sim_scenario_where(&j->s, "nodes"), j->s.nodes, list->len);
      return FALSE;
    }
    g_autofree char *count = g_strdup_printf("%u", list->len);
    if (!sim_scenario_set(&j->s, "nodes", count, where, error))
      return FALSE;
  } else if (!has_nodes) {
    return dt_ini_error(ini, group, NULL, error,
                        "give the job's nodes: nodes = N or node-list = A-B,C");
  }
  req->job = j->name;
  req->nodes = (uint32_t)j->s.nodes;
  req->list = g_steal_pointer(&list);
  /* The node-list's place when it gave the count. */
  req->where = sim_scenario_where(&j->s, "nodes");
  return TRUE;
}

/* A new job from one [job NAME] group, or NULL. */
static sim_job *load_job(const sim_scenario *cluster, const dt_ini *ini, const char *group,
                         sim_place_request *req, GError **error)
{
  g_autofree char *name = g_strstrip(g_strdup(group + strlen("job ")));
  if (!*name) {
    dt_ini_error(ini, group, NULL, error, "a job needs a name: [job NAME]");
    return NULL;
  }
  if (!check_job_keys(ini, group, error))
    return NULL;
  sim_job *j = g_new0(sim_job, 1);
  j->name = g_steal_pointer(&name);
  if (!fill_job(j, cluster, ini, group, req, error)) {
    job_free(j);
    return NULL;
  }
  return j;
}

sim_jobs *sim_jobs_load(const sim_scenario *cluster, GError **error)
{
  g_return_val_if_fail(cluster->jobs_file != NULL, NULL);
  if (!check_cluster(cluster, error))
    return NULL;
  g_autoptr(dt_ini) ini = dt_ini_load(cluster->jobs_file, error);
  if (!ini)
    return NULL;
  g_autoptr(sim_jobs) j = g_new0(sim_jobs, 1);
  j->path = g_strdup(cluster->jobs_file);
  j->jobs = g_ptr_array_new_with_free_func(job_free);
  g_autoptr(GArray) reqs = g_array_new(FALSE, TRUE, sizeof(sim_place_request));
  g_auto(GStrv) groups = g_key_file_get_groups(dt_ini_keyfile(ini), NULL);
  gboolean ok = TRUE;
  for (char **gp = groups; *gp && ok; gp++) {
    if (!g_str_has_prefix(*gp, "job "))
      continue;
    sim_place_request req = {0};
    sim_job *job = load_job(cluster, ini, *gp, &req, error);
    if (!job) {
      ok = FALSE;
      break;
    }
    for (guint i = 0; i < j->jobs->len && ok; i++)
      if (strcmp(((sim_job *)j->jobs->pdata[i])->name, job->name) == 0) {
        ok = dt_ini_error(ini, *gp, NULL, error, "a second job named %s", job->name);
        if (req.list)
          g_array_unref((GArray *)req.list);
        job_free(job);
        job = NULL;
      }
    if (!job)
      break;
    g_ptr_array_add(j->jobs, job);
    g_array_append_val(reqs, req);
  }
  if (ok)
    ok = sim_place_jobs((sim_place_request *)reqs->data, reqs->len, (uint32_t)cluster->nodes,
                        sim_scenario_where(cluster, "nodes"), error);
  for (guint i = 0; i < reqs->len; i++) {
    sim_place_request *r = &g_array_index(reqs, sim_place_request, i);
    if (ok)
      ((sim_job *)j->jobs->pdata[i])->nodes = g_steal_pointer(&r->placed);
    if (r->list)
      g_array_unref((GArray *)r->list);
  }
  sim_place_clear((sim_place_request *)reqs->data, reqs->len);
  if (!ok)
    return NULL;
  return g_steal_pointer(&j);
}
