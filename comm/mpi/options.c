/* Option values of dtsim-mpi: size lists and the argument hash compared across ranks. */
#include "comm_mpi.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

GArray *comm_mpi_parse_sizes(const char *text, const char *what, GError **error)
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
    for (uint64_t b = lo; b <= hi; b *= 2) {
      g_array_append_val(sizes, b);
      if (b > UINT64_MAX / 2)
        break;
    }
  }
  if (sizes->len == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: no sizes given", what);
    return NULL;
  }
  g_array_sort(sizes, cmp_u64);
  guint w = 1;
  for (guint r = 1; r < sizes->len; r++)
    if (g_array_index(sizes, uint64_t, r) != g_array_index(sizes, uint64_t, w - 1))
      g_array_index(sizes, uint64_t, w++) = g_array_index(sizes, uint64_t, r);
  g_array_set_size(sizes, w);
  return g_steal_pointer(&sizes);
}

uint64_t comm_mpi_hash_argv(int argc, char *const *argv)
{
  /* FNV-1a, 64-bit: offset basis 14695981039346656037, prime 1099511628211. */
  uint64_t h = UINT64_C(14695981039346656037);
  for (int i = 0; i < argc; i++) {
    const unsigned char *p = (const unsigned char *)argv[i];
    do {
      h ^= *p;
      h *= UINT64_C(1099511628211);
    } while (*p++ != '\0');
  }
  return h;
}
