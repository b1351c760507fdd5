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
  g_autoptr(GArray) sizes = dt_parse_size_list(text, what, error);
  if (!sizes)
    return NULL;
  /* An empty message has no bandwidth to compare (validate printed "nan%"). */
  for (guint i = 0; i < sizes->len; i++)
    if (g_array_index(sizes, uint64_t, i) == 0) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: 0 bytes is too small (at least 1)",
                  what);
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
