/* Importer for Paleo's network JSON files. */
#include "wl_internal.h"
#include "util.h"

wl_model *wl__load_paleo(const char *source, JsonNode *root, const char *text, GError **error)
{
  g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "%s: not yet", source);
  return NULL;
}
