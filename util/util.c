/* Option-value parsing and data-folder lookup (see util.h). */
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

G_DEFINE_QUARK(dtsim-error-quark, dt_error)

int dt_error_exit_status(const GError *error)
{
  if (error == NULL)
    return 1;
  if (error->domain == DT_ERROR)
    return error->code == DT_ERROR_INPUT ? 2 : 1;
  if (error->domain == G_OPTION_ERROR || error->domain == G_KEY_FILE_ERROR)
    return 2;
  return 1;
}

gboolean dt_parse_size(const char *text, const char *what, uint64_t *out_bytes, GError **error)
{
  static const struct {
    const char *suffix;
    uint64_t factor;
  } suffixes[] = {
      {"", 1},
      {"B", 1},
      {"K", 1ULL << 10},          {"KiB", 1ULL << 10}, {"M", 1ULL << 20},  {"MiB", 1ULL << 20},
      {"G", 1ULL << 30},          {"GiB", 1ULL << 30}, {"T", 1ULL << 40},  {"TiB", 1ULL << 40},
      {"P", 1ULL << 50},          {"PiB", 1ULL << 50}, {"E", 1ULL << 60},  {"EiB", 1ULL << 60},
      {"KB", 1000ULL},            {"MB", 1000000ULL},  {"GB", 1000000000ULL},
      {"TB", 1000000000000ULL},   {"PB", 1000000000000000ULL},
      {"EB", 1000000000000000000ULL},
  };
  if (text == NULL || *text == '\0') {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: empty size", what);
    return FALSE;
  }
  const char *p = text;
  while (g_ascii_isspace(*p))
    p++;
  if (*p == '-' || *p == '+') {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: '%s' is not a size (a whole number of bytes "
                "with an optional K, M, G, KB, MB, GB suffix)", what, text);
    return FALSE;
  }
  /* Whole part and optional fraction, kept exact: 1.5K is 1536 bytes. */
  uint64_t whole = 0;
  const char *digits = p;
  while (g_ascii_isdigit(*p)) {
    unsigned d = (unsigned)(*p - '0');
    if (whole > (UINT64_MAX - d) / 10)
      goto too_large;
    whole = whole * 10 + d;
    p++;
  }
  gboolean any_digit = p != digits;
  uint64_t frac_num = 0, frac_den = 1;
  if (*p == '.') {
    p++;
    while (g_ascii_isdigit(*p)) {
      any_digit = TRUE;
      if (frac_den < 1000000000000000000ULL) {
        frac_num = frac_num * 10 + (uint64_t)(*p - '0');
        frac_den *= 10;
      }
      p++;
    }
  }
  /* A size needs a digit: "." or ".K" alone is refused, not read as 0 bytes. */
  if (!any_digit) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: '%s' is not a size (a whole number of bytes "
                "with an optional K, M, G, KB, MB, GB suffix)", what, text);
    return FALSE;
  }
  for (gsize i = 0; i < G_N_ELEMENTS(suffixes); i++) {
    if (g_ascii_strcasecmp(p, suffixes[i].suffix) != 0)
      continue;
    /* Suffixes are case-insensitive except that lower-case b would read as bits: refuse it. */
    if (strchr(p, 'b') != NULL && strcmp(p, "B") != 0 && !g_str_has_suffix(p, "iB"))
      break;
    uint64_t f = suffixes[i].factor;
    unsigned __int128 total = (unsigned __int128)whole * f;
    unsigned __int128 fpart = (unsigned __int128)frac_num * f;
    if (fpart % frac_den != 0) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: '%s' is not a whole number of bytes",
                  what, text);
      return FALSE;
    }
    total += fpart / frac_den;
    if (total > UINT64_MAX)
      goto too_large;
    *out_bytes = (uint64_t)total;
    return TRUE;
  }
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: unknown size suffix in '%s' (use K, M, G, T "
              "for powers of 1024 or KB, MB, GB, TB for powers of 1000)", what, text);
  return FALSE;
too_large:
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: '%s' is larger than 16 EiB", what, text);
  return FALSE;
}

gboolean dt_parse_int64(const char *text, const char *what, int64_t min, int64_t max,
                        int64_t *out, GError **error)
{
  if (text == NULL || *text == '\0') {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: empty value", what);
    return FALSE;
  }
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (end == text || *end != '\0') {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: '%s' is not a whole number", what, text);
    return FALSE;
  }
  if (errno == ERANGE || v < min || v > max) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: %s is out of range (%" G_GINT64_FORMAT " to %" G_GINT64_FORMAT ")", what,
                text, (gint64)min, (gint64)max);
    return FALSE;
  }
  *out = v;
  return TRUE;
}

gboolean dt_parse_bool(const char *text, const char *what, gboolean *out, GError **error)
{
  static const char *const on[] = {"on", "true", "yes", "1"}, *const off[] = {"off", "false",
                                                                               "no", "0"};
  for (gsize i = 0; i < G_N_ELEMENTS(on); i++) {
    if (strcmp(text, on[i]) == 0) {
      *out = TRUE;
      return TRUE;
    }
    if (strcmp(text, off[i]) == 0) {
      *out = FALSE;
      return TRUE;
    }
  }
  g_autofree char *shown = dt_escape(text);
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
              "%s: '%s' is not on or off (nor yes/no, true/false, 1/0)", what, shown);
  return FALSE;
}

gboolean dt_parse_double(const char *text, const char *what, double min, double max,
                         double *out, GError **error)
{
  if (text == NULL || *text == '\0') {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: empty value", what);
    return FALSE;
  }
  char *end = NULL;
  double v = g_ascii_strtod(text, &end);
  if (end == text || *end != '\0') {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: '%s' is not a number", what, text);
    return FALSE;
  }
  if (!isfinite(v) || v < min || v > max) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s is out of range (%g to %g)", what, text,
                min, max);
    return FALSE;
  }
  *out = v;
  return TRUE;
}

GArray *dt_parse_int_list(const char *text, const char *what, int64_t min, int64_t max,
                          GError **error)
{
  /* Counted before splitting: a 60 MB list of "1,1,..." once took 1.5 GB of strings. */
  uint64_t items = 1;
  for (const char *c = text ? text : ""; *c; c++)
    items += *c == ',';
  if (items > DT_LIST_MAX_POINTS) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: a list of %" G_GUINT64_FORMAT " items, more "
                "than the %u a list may hold", what, items, DT_LIST_MAX_POINTS);
    return NULL;
  }
  g_autoptr(GArray) list = g_array_new(FALSE, FALSE, sizeof(int64_t));
  g_auto(GStrv) parts = g_strsplit(text ? text : "", ",", -1);
  for (char **pp = parts; *pp; pp++) {
    char *item = g_strstrip(*pp);
    const char *dots = strstr(item, "..");
    const char *dash = item[0] ? strchr(item + 1, '-') : NULL;
    if (dots || dash) {
      g_autofree char *lo_s = g_strndup(item, (gsize)((dots ? dots : dash) - item));
      const char *hi_s = dots ? dots + 2 : dash + 1;
      int64_t lo, hi;
      if (!dt_parse_int64(lo_s, what, min, max, &lo, error) ||
          !dt_parse_int64(hi_s, what, min, max, &hi, error))
        return NULL;
      if (hi < lo || (dots && lo <= 0)) {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: '%s' is not an increasing range", what,
                    item);
        return NULL;
      }
      /* hi >= lo, so the unsigned difference is exact even across the whole int64 range. */
      if (!dots && (uint64_t)hi - (uint64_t)lo >= DT_LIST_MAX_POINTS - list->len) {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: range '%s' has too many points (a "
                    "list may hold %u)", what, item, DT_LIST_MAX_POINTS);
        return NULL;
      }
      /* Stops before the next point would pass hi, so neither v + 1 nor v * 2 overflows. A
       * doubling range holds at most 64 points. */
      for (int64_t v = lo;; v = dots ? v * 2 : v + 1) {
        g_array_append_val(list, v);
        if (v >= hi || (dots && v > hi / 2))
          break;
      }
      if (list->len > DT_LIST_MAX_POINTS) {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: more than the %u points a list may "
                    "hold", what, DT_LIST_MAX_POINTS);
        return NULL;
      }
    } else {
      int64_t v;
      if (!dt_parse_int64(item, what, min, max, &v, error))
        return NULL;
      g_array_append_val(list, v);
    }
  }
  if (list->len == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: empty list", what);
    return NULL;
  }
  return g_steal_pointer(&list);
}

GArray *dt_parse_size_list(const char *text, const char *what, GError **error)
{
  g_autoptr(GArray) sizes = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  g_auto(GStrv) items = g_strsplit(text ? text : "", ",", -1);
  for (char **it = items; *it; it++) {
    g_autofree char *item = g_strstrip(g_strdup(*it));
    char *dots = strstr(item, "..");
    if (dots == NULL) {
      uint64_t b;
      if (!dt_parse_size(item, what, &b, error))
        return NULL;
      g_array_append_val(sizes, b);
      continue;
    }
    *dots = '\0';
    uint64_t lo, hi;
    if (!dt_parse_size(item, what, &lo, error) || !dt_parse_size(dots + 2, what, &hi, error))
      return NULL;
    if (lo == 0 || hi < lo) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s: range '%s..%s' must go from a positive size up to a larger one", what,
                  item, dots + 2);
      return NULL;
    }
    /* Stops before the next size would pass hi, so b * 2 never overflows. */
    for (uint64_t b = lo;; b *= 2) {
      g_array_append_val(sizes, b);
      if (b > hi / 2)
        break;
    }
  }
  if (sizes->len == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: no sizes given", what);
    return NULL;
  }
  return g_steal_pointer(&sizes);
}

char **dt_parse_name_list(const char *text, const char *what, GError **error)
{
  g_auto(GStrv) parts = g_strsplit(text ? text : "", ",", -1);
  for (char **pp = parts; *pp; pp++) {
    g_strstrip(*pp);
    if (**pp == '\0') {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: empty name in list '%s'", what,
                  text ? text : "");
      return NULL;
    }
  }
  if (parts[0] == NULL) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: empty list", what);
    return NULL;
  }
  return g_steal_pointer(&parts);
}

const char *dt_data_dir(void)
{
  static char *dir;
  if (dir)
    return dir;
  const char *env = g_getenv("DTSIM_DATA_DIR");
  if (env && *env) {
    dir = g_strdup(env);
    return dir;
  }
  /* Next to the binary's source tree: builds run from build/ inside the checkout. */
  g_autofree char *probe = g_build_filename(DTSIM_SOURCE_DIR, "devices", "catalog", NULL);
  if (g_file_test(probe, G_FILE_TEST_IS_DIR)) {
    dir = g_strdup(DTSIM_SOURCE_DIR);
    return dir;
  }
  dir = g_strdup("/usr/local/share/dtsim");
  return dir;
}

char *dt_catalog_path(const char *subdir, const char *name, const char *what, GError **error)
{
  if (name == NULL || *name == '\0') {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: empty name", what);
    return NULL;
  }
  if (strchr(name, '/') || g_str_has_suffix(name, ".ini")) {
    /* Whatever is there (a FIFO, /dev/zero) is left to the reader to refuse or read. */
    if (!g_file_test(name, G_FILE_TEST_EXISTS)) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: no such file '%s'", what, name);
      return NULL;
    }
    if (g_file_test(name, G_FILE_TEST_IS_DIR)) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: '%s' is a folder, not a file", what, name);
      return NULL;
    }
    return g_strdup(name);
  }
  g_autofree char *file = g_strconcat(name, ".ini", NULL);
  char *path = g_build_filename(dt_data_dir(), subdir, file, NULL);
  if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
    g_free(path);
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: unknown name '%s' (see 'dtsim list')", what,
                name);
    return NULL;
  }
  return path;
}

dt_ini *dt_catalog_load(const char *subdir, const char *name, const char *what, const char *group,
                        GError **error)
{
  g_autofree char *path = dt_catalog_path(subdir, name, what, error);
  if (!path)
    return NULL;
  g_autoptr(dt_ini) ini = dt_ini_load(path, error);
  if (!ini) {
    /* A file the user named (a FIFO, /dev/zero): say where it was named. */
    if (strchr(name, '/') != NULL)
      g_prefix_error(error, "%s: ", what);
    return NULL;
  }
  if (!g_key_file_has_group(dt_ini_keyfile(ini), group)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s: missing group [%s]", what, path, group);
    return NULL;
  }
  return g_steal_pointer(&ini);
}

static gint compare_strings(gconstpointer a, gconstpointer b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

char **dt_catalog_names(const char *subdir)
{
  g_autofree char *path = g_build_filename(dt_data_dir(), subdir, NULL);
  GPtrArray *names = g_ptr_array_new();
  GDir *dir = g_dir_open(path, 0, NULL);
  if (dir) {
    const char *entry;
    while ((entry = g_dir_read_name(dir)) != NULL)
      if (g_str_has_suffix(entry, ".ini"))
        g_ptr_array_add(names, g_strndup(entry, strlen(entry) - 4));
    g_dir_close(dir);
  }
  g_ptr_array_sort(names, compare_strings);
  g_ptr_array_add(names, NULL);
  return (char **)g_ptr_array_free(names, FALSE);
}

/* The byte offset at or before `at` that starts a UTF-8 character of text[0..n). */
static size_t char_start(const char *text, size_t at)
{
  while (at > 0 && ((unsigned char)text[at] & 0xc0) == 0x80)
    at--;
  return at;
}

char *dt_message(const char *text)
{
  g_autofree char *escaped = dt_escape(text);
  GString *out = g_string_sized_new(MIN(strlen(escaped), 4096) + 8);
  const char *p = escaped;
  while (*p) {
    size_t n = strcspn(p, " ");
    if (n > DT_MESSAGE_WORD_MAX) {
      size_t head = char_start(p, 48), tail = char_start(p, n - 32);
      g_string_append_len(out, p, (gssize)head);
      g_string_append(out, "...");
      g_string_append_len(out, p + tail, (gssize)(n - tail));
    } else {
      g_string_append_len(out, p, (gssize)n);
    }
    p += n;
    while (*p == ' ')
      g_string_append_c(out, *p++);
  }
  return g_string_free(out, FALSE);
}

gboolean dt_check_line(const char *value, const char *what, GError **error)
{
  for (const unsigned char *p = (const unsigned char *)value; p && *p; p++)
    if (*p < 0x20 || *p == 0x7f) {
      g_autofree char *shown = dt_escape(value);
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s: '%s' holds a control character (\\x%02x); a value written into a file "
                  "is one line of text", what, shown, *p);
      return FALSE;
    }
  return TRUE;
}

char *dt_escape(const char *text)
{
  if (text == NULL)
    return g_strdup("(null)");
  GString *out = g_string_sized_new(strlen(text) + 8);
  const char *p = text;
  while (*p) {
    unsigned char c = (unsigned char)*p;
    if (c < 0x80) {
      switch (c) {
      case '\n': g_string_append(out, "\\n"); break;
      case '\t': g_string_append(out, "\\t"); break;
      case '\r': g_string_append(out, "\\r"); break;
      default:
        if (c < 0x20 || c == 0x7f)
          g_string_append_printf(out, "\\x%02x", c);
        else
          g_string_append_c(out, (char)c);
      }
      p++;
      continue;
    }
    /* A multi-byte character: kept if it is valid UTF-8 and not a control or line separator. */
    const char *end = NULL;
    gsize avail = strlen(p);
    gunichar u = g_utf8_get_char_validated(p, (gssize)MIN(avail, 6));
    if (u == (gunichar)-1 || u == (gunichar)-2) {
      g_string_append_printf(out, "\\x%02x", c);
      p++;
      continue;
    }
    end = g_utf8_next_char(p);
    if ((u >= 0x80 && u < 0xa0) || u == 0x2028 || u == 0x2029)
      g_string_append_printf(out, "\\u%04x", u);
    else
      g_string_append_len(out, p, end - p);
    p = end;
  }
  return g_string_free(out, FALSE);
}

void dt_option_entries_as_bytes(GOptionEntry *entries)
{
  for (GOptionEntry *e = entries; e && e->long_name; e++) {
    if (e->arg == G_OPTION_ARG_STRING)
      e->arg = G_OPTION_ARG_FILENAME;
    else if (e->arg == G_OPTION_ARG_STRING_ARRAY)
      e->arg = G_OPTION_ARG_FILENAME_ARRAY;
    else if (e->arg == G_OPTION_ARG_CALLBACK)
      e->flags |= G_OPTION_FLAG_FILENAME;
  }
}

typedef struct {
  const char *long_name;
  char short_name;
  gboolean *target;
} flag_slot;

static gboolean flag_value(const char *option_name, const char *value, gpointer data,
                           GError **error)
{
  GArray *slots = data;
  for (guint i = 0; i < slots->len; i++) {
    const flag_slot *f = &g_array_index(slots, flag_slot, i);
    gboolean match = g_str_has_prefix(option_name, "--")
                         ? strcmp(option_name + 2, f->long_name) == 0
                         : f->short_name && option_name[1] == f->short_name;
    if (match)
      return value ? dt_parse_bool(value, option_name, f->target, error)
                   : (*f->target = TRUE, TRUE);
  }
  g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_UNKNOWN_OPTION, "unknown option %s",
              option_name);
  return FALSE;
}

static void free_slots(gpointer p)
{
  g_array_unref(p);
}

void dt_option_add_main_entries(GOptionContext *ctx, GOptionEntry *entries)
{
  g_return_if_fail(g_option_context_get_main_group(ctx) == NULL);
  GArray *slots = g_array_new(FALSE, FALSE, sizeof(flag_slot));
  for (GOptionEntry *e = entries; e && e->long_name; e++)
    if (e->arg == G_OPTION_ARG_NONE && !(e->flags & G_OPTION_FLAG_REVERSE)) {
      flag_slot f = {e->long_name, e->short_name, e->arg_data};
      g_array_append_val(slots, f);
      e->arg = G_OPTION_ARG_CALLBACK;
      e->flags |= G_OPTION_FLAG_OPTIONAL_ARG;
      e->arg_data = (gpointer)flag_value;
    }
  dt_option_entries_as_bytes(entries);
  GOptionGroup *group = g_option_group_new(NULL, NULL, NULL, slots, free_slots);
  g_option_group_add_entries(group, entries);
  g_option_context_set_main_group(ctx, group);
}

gboolean dt_args_check_repeats(int argc, char **argv, const char *const *repeatable,
                               GError **error)
{
  g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (int i = 1; i < argc && argv[i]; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0)
      break;
    if (!g_str_has_prefix(a, "--") || g_str_has_prefix(a, "--help"))
      continue;
    char *name = g_strndup(a, strcspn(a, "="));
    if (repeatable && g_strv_contains(repeatable, name + 2)) {
      g_free(name);
      continue;
    }
    if (!g_hash_table_add(seen, name)) {
      g_autofree char *shown = dt_escape(name);
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: given twice (give each option once)",
                  shown);
      return FALSE;
    }
  }
  return TRUE;
}

/* ---- JSON ------------------------------------------------------------------------------------ */

void dt_json_string(GString *out, const char *s)
{
  g_string_append_c(out, '"');
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    /* Option values are bytes (a file name in Latin-1): JSON text is UTF-8, so a byte that does
     * not start a valid UTF-8 sequence becomes U+FFFD. Valid sequences are copied whole. */
    if (*p >= 0x80) {
      gunichar u = g_utf8_get_char_validated((const char *)p, -1);
      if (u == (gunichar)-1 || u == (gunichar)-2) {
        g_string_append(out, "\\ufffd");
        continue;
      }
      const char *next = g_utf8_next_char((const char *)p);
      g_string_append_len(out, (const char *)p, next - (const char *)p);
      p = (const unsigned char *)next - 1;
      continue;
    }
    switch (*p) {
    case '"': g_string_append(out, "\\\""); break;
    case '\\': g_string_append(out, "\\\\"); break;
    case '\n': g_string_append(out, "\\n"); break;
    case '\t': g_string_append(out, "\\t"); break;
    case '\r': g_string_append(out, "\\r"); break;
    default:
      if (*p < 0x20 || *p == 0x7f)
        g_string_append_printf(out, "\\u%04x", *p);
      else
        g_string_append_c(out, (char)*p);
    }
  }
  g_string_append_c(out, '"');
}

void dt_json_double(GString *out, double v)
{
  if (!isfinite(v)) {
    g_string_append(out, "null");
    return;
  }
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_string_append(out, g_ascii_formatd(buf, sizeof buf, "%.12g", v));
}

void dt_json_int(GString *out, int64_t v)
{
  g_string_append_printf(out, "%" G_GINT64_FORMAT, v);
}

void dt_json_next(GString *out)
{
  char last = out->len > 0 ? out->str[out->len - 1] : '{';
  if (last != '{' && last != '[' && last != ':')
    g_string_append_c(out, ',');
}

void dt_json_key(GString *out, const char *key)
{
  dt_json_next(out);
  dt_json_string(out, key);
  g_string_append_c(out, ':');
}

void dt_csv_field(GString *out, const char *s)
{
  s = s ? s : "";
  if (strpbrk(s, ",\"\r\n") == NULL) {
    g_string_append(out, s);
    return;
  }
  g_string_append_c(out, '"');
  for (const char *p = s; *p; p++) {
    if (*p == '"')
      g_string_append_c(out, '"');
    g_string_append_c(out, *p);
  }
  g_string_append_c(out, '"');
}

GPtrArray *dt_csv_split(const char *line)
{
  GPtrArray *f = g_ptr_array_new_with_free_func(g_free);
  GString *cur = g_string_new(NULL);
  gboolean quoted = FALSE;
  for (const char *c = line;; c++) {
    if (*c == '"') {
      if (quoted && c[1] == '"') {
        g_string_append_c(cur, '"');
        c++;
      } else {
        quoted = !quoted;
      }
    } else if ((*c == ',' && !quoted) || *c == '\0' || *c == '\r') {
      g_ptr_array_add(f, g_string_free(cur, FALSE));
      if (*c != ',')
        break;
      cur = g_string_new(NULL);
    } else {
      g_string_append_c(cur, *c);
    }
  }
  return f;
}
