/* What the strategies' search families share (declared in strategy.h): their axes' values, and
 * the keys a family derives from the job (the per-device batch of the global batch). The search
 * itself, which enumerates, evaluates and ranks the families' combinations, is
 * sim/app/search.c. */
#include "strategy.h"

/* Appends a formatted value to an axis's list. */
void sim_search_add_value(GPtrArray *out, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_ptr_array_add(out, g_strdup_vprintf(fmt, ap));
  va_end(ap);
}

gboolean sim_search_derive(sim_scenario *s, GString *derived, const char *key, uint64_t value,
                           GError **error)
{
  char text[32];
  g_snprintf(text, sizeof text, "%" G_GUINT64_FORMAT, value);
  g_string_append_printf(derived, " %s=%s", key, text);
  return sim_scenario_set(s, key, text, NULL, error);
}

const char *sim_search_per_device(sim_scenario *s, const sim_search_ctx *c, GString *derived,
                                  GError **error)
{
  if (c->global_batch % c->devices != 0)
    return SIM_DROP_NOT_MULTIPLE_DEVICES;
  return sim_search_derive(s, derived, "batch", c->global_batch / c->devices, error) ? NULL : "";
}
