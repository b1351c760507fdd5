/* INI files through GKeyFile, plus a map from (group, key) to line number so every message
 * can say FILE:LINE. */
#include "util.h"

#include <math.h>
#include <string.h>

struct dt_ini {
  char *path;
  GKeyFile *kf;
  GHashTable *lines;  /* "group\x1fkey" or "group" -> line number (GINT_TO_POINTER) */
};

static char *line_key(const char *group, const char *key)
{
  return key ? g_strconcat(group, "\x1f", key, NULL) : g_strdup(group);
}

/* Records where each group and key is, and refuses what GKeyFile would take silently or name
 * without its line: a line that is neither blank, a comment, a [group] nor a key = value pair,
 * and a key given twice in one group (GKeyFile keeps the last). */
static gboolean index_lines(dt_ini *ini, const char *data, gsize len, GError **error)
{
  g_autofree char *copy = g_strndup(data, len);
  g_auto(GStrv) lines = g_strsplit(copy, "\n", -1);
  g_autofree char *group = NULL;
  for (int i = 0; lines[i]; i++) {
    char *line = g_strstrip(lines[i]);
    if (*line == '\0' || *line == '#' || *line == ';')
      continue;
    if (*line == '[') {
      char *close = strchr(line, ']');
      if (close) {
        g_free(group);
        group = g_strndup(line + 1, (gsize)(close - line - 1));
        if (!g_hash_table_contains(ini->lines, group))
          g_hash_table_insert(ini->lines, g_strdup(group), GINT_TO_POINTER(i + 1));
        continue;
      }
    }
    char *eq = strchr(line, '=');
    if (!eq || eq == line) {
      g_autofree char *shown = dt_escape(ini->path);
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s:%d: not a key = value pair, a [group] or a comment", shown, i + 1);
      return FALSE;
    }
    if (group) {
      g_autofree char *key = g_strndup(line, (gsize)(eq - line));
      g_strstrip(key);
      char *lk = line_key(group, key);
      int first = GPOINTER_TO_INT(g_hash_table_lookup(ini->lines, lk));
      if (first > 0) {
        g_free(lk);
        g_autofree char *shown = dt_escape(ini->path);
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "%s:%d: [%s] %s: given twice (first on line %d)", shown, i + 1, group, key,
                    first);
        return FALSE;
      }
      g_hash_table_insert(ini->lines, lk, GINT_TO_POINTER(i + 1));
    }
  }
  return TRUE;
}

dt_ini *dt_ini_load_data(const char *name, const char *data, gsize len, GError **error)
{
  dt_ini *ini = g_new0(dt_ini, 1);
  ini->path = g_strdup(name);
  ini->lines = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  if (!index_lines(ini, data, len, error)) {
    dt_ini_free(ini);
    return NULL;
  }
  g_autoptr(GKeyFile) kf = g_key_file_new();
  g_autoptr(GError) local = NULL;
  if (!g_key_file_load_from_data(kf, data, len, G_KEY_FILE_NONE, &local)) {
    /* GKeyFile's messages already carry the line ("Key file contains line 3 ..."). */
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s", name, local->message);
    dt_ini_free(ini);
    return NULL;
  }
  ini->kf = g_steal_pointer(&kf);
  return ini;
}

dt_ini *dt_ini_load(const char *path, GError **error)
{
  g_autofree char *data = NULL;
  gsize len = 0;
  if (!dt_read_file(path, NULL, DT_INPUT_MAX_BYTES, &data, &len, error))
    return NULL;
  if (memchr(data, '\0', len) != NULL) {
    g_autofree char *shown = dt_escape(path);
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: not a text file (contains a NUL byte)",
                shown);
    return NULL;
  }
  return dt_ini_load_data(path, data, len, error);
}

void dt_ini_free(dt_ini *ini)
{
  if (!ini)
    return;
  g_clear_pointer(&ini->kf, g_key_file_free);
  g_hash_table_destroy(ini->lines);
  g_free(ini->path);
  g_free(ini);
}

const char *dt_ini_path(const dt_ini *ini) { return ini->path; }
GKeyFile *dt_ini_keyfile(const dt_ini *ini) { return ini->kf; }

gboolean dt_ini_has(const dt_ini *ini, const char *group, const char *key)
{
  return g_key_file_has_key(ini->kf, group, key, NULL);
}

int dt_ini_line(const dt_ini *ini, const char *group, const char *key)
{
  g_autofree char *k = line_key(group, key);
  return GPOINTER_TO_INT(g_hash_table_lookup(ini->lines, k));
}

gboolean dt_ini_error(const dt_ini *ini, const char *group, const char *key, GError **error,
                      const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  int line = dt_ini_line(ini, group, key);
  if (line == 0 && key)
    line = dt_ini_line(ini, group, NULL);
  g_autofree char *where = line > 0 ? g_strdup_printf("%s:%d", ini->path, line)
                                    : g_strdup(ini->path);
  if (key)
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: [%s] %s: %s", where, group, key, msg);
  else
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: [%s]: %s", where, group, msg);
  return FALSE;
}

/* The raw value, or NULL; reports a missing required key. */
static char *raw_value(const dt_ini *ini, const char *group, const char *key, gboolean required,
                       GError **error)
{
  char *v = g_key_file_get_value(ini->kf, group, key, NULL);
  if (v == NULL && required) {
    if (!g_key_file_has_group(ini->kf, group))
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: missing group [%s] (needed for key %s)",
                  ini->path, group, key);
    else
      dt_ini_error(ini, group, key, error, "missing required key");
  }
  if (v)
    g_strstrip(v);
  return v;
}

/* *out = the stripped value, or NULL when an optional key is absent; FALSE (with the error)
 * when a required key is missing. */
static gboolean fetch(const dt_ini *ini, const char *group, const char *key, gboolean required,
                      char **out, GError **error)
{
  GError *local = NULL;
  *out = raw_value(ini, group, key, required, &local);
  if (local) {
    g_propagate_error(error, local);
    return FALSE;
  }
  return TRUE;
}

gboolean dt_ini_double(const dt_ini *ini, const char *group, const char *key, gboolean required,
                       double min, double max, double *out, GError **error)
{
  g_autofree char *v = NULL;
  if (!fetch(ini, group, key, required, &v, error))
    return FALSE;
  if (v == NULL)
    return TRUE;   /* optional and absent: *out keeps its default */
  char *end = NULL;
  double d = g_ascii_strtod(v, &end);
  if (end == v || *end != '\0')
    return dt_ini_error(ini, group, key, error, "'%s' is not a number", v);
  if (!isfinite(d) || d < min || d > max)
    return dt_ini_error(ini, group, key, error, "%s is out of range (%g to %g)", v, min, max);
  *out = d;
  return TRUE;
}

gboolean dt_ini_int64(const dt_ini *ini, const char *group, const char *key, gboolean required,
                      int64_t min, int64_t max, int64_t *out, GError **error)
{
  g_autofree char *v = NULL;
  if (!fetch(ini, group, key, required, &v, error))
    return FALSE;
  if (v == NULL)
    return TRUE;   /* optional and absent: *out keeps its default */
  g_autoptr(GError) local = NULL;
  if (!dt_parse_int64(v, key, min, max, out, &local))
    return dt_ini_error(ini, group, key, error, "'%s' is not a whole number from %" G_GINT64_FORMAT
                        " to %" G_GINT64_FORMAT, v, (gint64)min, (gint64)max);
  return TRUE;
}

gboolean dt_ini_size(const dt_ini *ini, const char *group, const char *key, gboolean required,
                     uint64_t *out_bytes, GError **error)
{
  g_autofree char *v = NULL;
  if (!fetch(ini, group, key, required, &v, error))
    return FALSE;
  if (v == NULL)
    return TRUE;   /* optional and absent: *out keeps its default */
  g_autoptr(GError) local = NULL;
  if (!dt_parse_size(v, key, out_bytes, &local)) {
    /* local->message starts with "key: "; keep only what follows. */
    const char *msg = local->message;
    if (g_str_has_prefix(msg, key) && msg[strlen(key)] == ':')
      msg += strlen(key) + 2;
    return dt_ini_error(ini, group, key, error, "%s", msg);
  }
  return TRUE;
}

char *dt_ini_string(const dt_ini *ini, const char *group, const char *key, gboolean required,
                    GError **error)
{
  char *v = raw_value(ini, group, key, required, error);
  if (v && *v == '\0' && required) {
    g_free(v);
    dt_ini_error(ini, group, key, error, "empty value");
    return NULL;
  }
  return v;
}

gboolean dt_ini_check_keys(const dt_ini *ini, const char *group, const char *const *known,
                           GError **error)
{
  g_auto(GStrv) keys = g_key_file_get_keys(ini->kf, group, NULL, NULL);
  for (char **k = keys; k && *k; k++) {
    gboolean ok = FALSE;
    for (const char *const *kk = known; *kk && !ok; kk++)
      ok = strcmp(*k, *kk) == 0;
    if (!ok)
      return dt_ini_error(ini, group, *k, error, "unknown key");
  }
  return TRUE;
}
