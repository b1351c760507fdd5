/* Loading models (zoo name or file, format detected from the content) and our own JSON
 * workload format: reading and writing. The format is documented in docs/workloads.md. */
#include "wl_internal.h"
#include "util.h"

#include <string.h>

wl_model *wl__load_json(const char *source, JsonNode *root, const char *text, GError **error)
{
  g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "%s: not yet", source);
  return NULL;
}

wl_model *wl_model_load(const char *name_or_path, GError **error)
{
  return wl_zoo_build(name_or_path, error);
}
