/* Fuzz harness for the option-value parsers of util/util.h: dt_parse_size,
 * dt_parse_int_list, dt_parse_name_list and dt_parse_double. Every input goes through all four
 * (they are cheap), with the bounds the CLI uses and with the widest bounds.
 *
 * Invariants: a parsed value printed back and parsed again gives the same value (sizes also
 * with their largest exact binary and decimal suffix); list items lie within the bounds and a
 * list printed back parses to the same list; accepted text holds a digit where a number was
 * asked for; failures are DT_ERROR messages naming the option. */
#include "fuzz.h"

#include "util.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The most points the int-list checks are given. The parser accepts ranges of up to a million
 * points (tests/util checks that bound); building, printing and parsing such lists again under
 * ASan cost milliseconds per input and held the harness near 1 400 executions a second, so
 * text whose ranges would hold more points than this skips the int-list checks. */
#define MAX_POINTS 2000

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  fuzz_init();
  return 0;
}

static gboolean has_digit(const char *text)
{
  for (const char *p = text; *p; p++)
    if (g_ascii_isdigit(*p))
      return TRUE;
  return FALSE;
}

static gboolean check_size(const char *text)
{
  g_autoptr(GError) error = NULL;
  uint64_t v = 0;
  if (!dt_parse_size(text, "--bytes", &v, &error)) {
    fuzz_check_error(error, "--bytes");
    return FALSE;
  }
  FUZZ_CHECK(has_digit(text), "'%s' parsed as %" PRIu64 " bytes without a digit", text, v);
  /* Plain bytes, then the largest power of 1024 and of 1000 that divides the value. */
  static const char *const bin[] = {"", "K", "M", "G", "T", "P", "E"};
  static const char *const dec[] = {"", "KB", "MB", "GB", "TB", "PB", "EB"};
  for (int base = 0; base < 2; base++) {
    uint64_t unit = 1, f = base ? 1000 : 1024;
    int k = 0;
    while (k < 6 && v != 0 && unit <= UINT64_MAX / f && v % (unit * f) == 0)
      unit *= f, k++;
    g_autofree char *again = g_strdup_printf("%" PRIu64 "%s", v / unit, base ? dec[k] : bin[k]);
    uint64_t w = 0;
    g_autoptr(GError) e2 = NULL;
    FUZZ_CHECK(dt_parse_size(again, "--bytes", &w, &e2), "'%s' (from '%s') refused: %s", again,
               text, e2 ? e2->message : "");
    FUZZ_CHECK(w == v, "'%s' -> %" PRIu64 " but '%s' -> %" PRIu64, text, v, again, w);
  }
  return TRUE;
}

static gboolean check_int_list(const char *text, int64_t min, int64_t max)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) list = dt_parse_int_list(text, "--devices", min, max, &error);
  if (!list) {
    fuzz_check_error(error, "--devices");
    return FALSE;
  }
  FUZZ_CHECK(list->len > 0, "'%s' gave an empty list", text);
  FUZZ_CHECK(has_digit(text), "'%s' gave a list without a digit", text);
  for (guint i = 0; i < list->len; i++) {
    int64_t v = g_array_index(list, int64_t, i);
    FUZZ_CHECK(v >= min && v <= max, "'%s': item %" PRId64 " outside [%" PRId64 ", %" PRId64 "]",
               text, v, min, max);
  }
  FUZZ_CHECK(list->len <= MAX_POINTS, "'%s' gave %u points", text, list->len);
  g_autoptr(GString) again = g_string_new(NULL);
  for (guint i = 0; i < list->len; i++)
    g_string_append_printf(again, "%s%" PRId64, i ? "," : "", g_array_index(list, int64_t, i));
  g_autoptr(GError) e2 = NULL;
  g_autoptr(GArray) list2 = dt_parse_int_list(again->str, "--devices", min, max, &e2);
  FUZZ_CHECK(list2 != NULL, "'%s' printed as '%s' is refused: %s", text, again->str,
             e2 ? e2->message : "");
  FUZZ_CHECK(list2->len == list->len &&
                 memcmp(list2->data, list->data, list->len * sizeof(int64_t)) == 0,
             "'%s' and '%s' differ", text, again->str);
  return TRUE;
}

static gboolean check_name_list(const char *text)
{
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) names = dt_parse_name_list(text, "--strategies", &error);
  if (!names) {
    fuzz_check_error(error, "--strategies");
    return FALSE;
  }
  FUZZ_CHECK(names[0] != NULL, "'%s' gave an empty list", text);
  for (char **n = names; *n; n++) {
    FUZZ_CHECK(**n != '\0', "'%s' gave an empty name", text);
    FUZZ_CHECK(strchr(*n, ',') == NULL, "'%s' gave a name with a comma", text);
    FUZZ_CHECK(!g_ascii_isspace((*n)[0]) && !g_ascii_isspace((*n)[strlen(*n) - 1]),
               "'%s' gave the unstripped name '%s'", text, *n);
  }
  g_autofree char *again = g_strjoinv(",", names);
  g_autoptr(GError) e2 = NULL;
  g_auto(GStrv) names2 = dt_parse_name_list(again, "--strategies", &e2);
  FUZZ_CHECK(names2 != NULL, "'%s' printed as '%s' is refused", text, again);
  FUZZ_CHECK(g_strv_equal((const char *const *)names, (const char *const *)names2),
             "'%s' and '%s' differ", text, again);
  return TRUE;
}

static gboolean check_double(const char *text, double min, double max)
{
  g_autoptr(GError) error = NULL;
  double v = NAN;
  if (!dt_parse_double(text, "--lambda", min, max, &v, &error)) {
    fuzz_check_error(error, "--lambda");
    return FALSE;
  }
  FUZZ_CHECK(isfinite(v) && v >= min && v <= max, "'%s' -> %g outside [%g, %g]", text, v, min,
             max);
  FUZZ_CHECK(has_digit(text), "'%s' parsed as %g without a digit", text, v);
  char again[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_dtostr(again, sizeof again, v);
  double w = NAN;
  g_autoptr(GError) e2 = NULL;
  FUZZ_CHECK(dt_parse_double(again, "--lambda", min, max, &w, &e2), "'%s' (from '%s') refused",
             again, text);
  FUZZ_CHECK(w == v, "'%s' -> %.17g but '%s' -> %.17g", text, v, again, w);
  return TRUE;
}

/* An upper bound on the points of the list in `text`, read the way dt_parse_int_list reads
 * it (strtoll on each side of the first dash after the first character): a dash range "a-b"
 * holds b - a + 1 points, a doubling range "a..b" at most 64, any other item one. Items that
 * are not numbers count as one point (the parser refuses them). */
static uint64_t points_at_most(const char *text)
{
  g_auto(GStrv) parts = g_strsplit(text, ",", -1);
  uint64_t total = 0;
  for (char **pp = parts; *pp; pp++) {
    char *item = g_strstrip(*pp);
    const char *dots = strstr(item, "..");
    const char *dash = item[0] ? strchr(item + 1, '-') : NULL;
    uint64_t n = 1;
    if (dots)
      n = 64;
    else if (dash) {
      g_autofree char *lo_s = g_strndup(item, (gsize)(dash - item));
      char *end_lo = NULL, *end_hi = NULL;
      long long lo = strtoll(lo_s, &end_lo, 10), hi = strtoll(dash + 1, &end_hi, 10);
      if (end_lo != lo_s && *end_lo == '\0' && end_hi != dash + 1 && *end_hi == '\0' && hi >= lo)
        n = (uint64_t)hi - (uint64_t)lo >= UINT64_MAX - 1 ? UINT64_MAX / 2
                                                          : (uint64_t)hi - (uint64_t)lo + 1;
    }
    total = n > UINT64_MAX / 2 - total ? UINT64_MAX / 2 : total + n;
  }
  return total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  g_autofree char *text = fuzz_text(data, size);
  /* Numbers count as accepted input; nearly any text is a name list. */
  gboolean ok = check_size(text);
  /* The bounds of --devices and --batches, a range around zero, and the widest. */
  if (points_at_most(text) <= MAX_POINTS) {
    ok |= check_int_list(text, 1, 1000000);
    ok |= check_int_list(text, 1, 1 << 24);
    ok |= check_int_list(text, -1000, 1000);
    ok |= check_int_list(text, INT64_MIN, INT64_MAX);
  }
  check_name_list(text);
  ok |= check_double(text, 0, 1e6);
  ok |= check_double(text, -DBL_MAX, DBL_MAX);
  if (ok)
    fuzz_accepted();
  return 0;
}
