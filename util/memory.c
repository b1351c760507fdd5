/* The memory a run may take (see util.h): a process-wide limit, by default half of the
 * machine's physical memory, that work is estimated against before it is built, and the one
 * way out when an allocation fails anyway. */
#include "util.h"

#include <stdlib.h>
#include <unistd.h>

/* 0: not set, the default applies. Read and written atomically: search threads read it. */
static uint64_t limit_bytes;
/* Runs that hold memory at the same time (a search's jobs): each is checked against its share
 * of the limit. */
static uint32_t sharers = 1;

uint64_t dt_memory_physical_bytes(void)
{
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0)
    return UINT64_C(8) << 30;   /* unknown: as if the machine had 8 GiB */
  return (uint64_t)pages * (uint64_t)page;
}

uint64_t dt_memory_limit(void)
{
  uint64_t v = __atomic_load_n(&limit_bytes, __ATOMIC_RELAXED);
  return v ? v : dt_memory_physical_bytes() / 2;
}

void dt_memory_set_limit(uint64_t bytes)
{
  __atomic_store_n(&limit_bytes, bytes, __ATOMIC_RELAXED);
}

char *dt_memory_format(uint64_t bytes)
{
  static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = (double)bytes;
  unsigned u = 0;
  while (v >= 1024 && u + 1 < G_N_ELEMENTS(units))
    v /= 1024, u++;
  if (u == 0)
    return g_strdup_printf("%" G_GUINT64_FORMAT " bytes", bytes);
  char num[G_ASCII_DTOSTR_BUF_SIZE];
  return g_strconcat(g_ascii_formatd(num, sizeof num, "%.1f", v), " ", units[u], NULL);
}

void dt_memory_set_sharers(uint32_t n)
{
  __atomic_store_n(&sharers, MAX(n, 1u), __ATOMIC_RELAXED);
}

gboolean dt_memory_check(uint64_t need_bytes, const char *what, GError **error)
{
  uint32_t n = __atomic_load_n(&sharers, __ATOMIC_RELAXED);
  uint64_t limit = dt_memory_limit() / n;
  if (need_bytes <= limit)
    return TRUE;
  g_autofree char *need = dt_memory_format(need_bytes);
  g_autofree char *have = dt_memory_format(limit);
  if (n > 1)
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s would take about %s of memory, more than its share of the limit, %s "
                "(--max-memory over %u --jobs)", what, need, have, n);
  else
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s would take about %s of memory, more than the limit of %s (--max-memory)",
                what, need, have);
  return FALSE;
}

void dt_memory_fail(uint64_t bytes)
{
  g_autofree char *size = dt_memory_format(bytes);
  g_autofree char *have = dt_memory_format(dt_memory_limit());
  fprintf(stderr, "%s: out of memory allocating %s (--max-memory %s)\n",
          g_get_prgname() ? g_get_prgname() : "dtsim", size, have);
  dt__outfile_abandon_all();
  _exit(1);
}
