/* Atomic output files: write to "PATH.tmp-XXXXXX" beside PATH, rename on commit. */
#include "util.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct dt_outfile {
  char *path;
  char *tmp_path;
  FILE *stream;
};

dt_outfile *dt_outfile_open(const char *path, GError **error)
{
  g_autofree char *tmpl = g_strconcat(path, ".tmp-XXXXXX", NULL);
  int fd = g_mkstemp(tmpl);
  if (fd < 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: cannot create: %s", path, g_strerror(errno));
    return NULL;
  }
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    g_unlink(tmpl);
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "%s: fdopen: %s", path, g_strerror(errno));
    return NULL;
  }
  /* Output files are ordinary user files: mkstemp's 0600 would surprise. */
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  dt_outfile *out = g_new0(dt_outfile, 1);
  out->path = g_strdup(path);
  out->tmp_path = g_steal_pointer(&tmpl);
  out->stream = f;
  return out;
}

FILE *dt_outfile_stream(dt_outfile *out) { return out->stream; }

gboolean dt_outfile_commit(dt_outfile *out, GError **error)
{
  g_return_val_if_fail(out && out->stream, FALSE);
  int failed = ferror(out->stream);
  failed |= fclose(out->stream) != 0;
  out->stream = NULL;
  if (failed) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "%s: write failed: %s", out->path,
                g_strerror(errno));
    g_unlink(out->tmp_path);
    return FALSE;
  }
  if (g_rename(out->tmp_path, out->path) != 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "%s: rename failed: %s", out->path,
                g_strerror(errno));
    g_unlink(out->tmp_path);
    return FALSE;
  }
  g_clear_pointer(&out->tmp_path, g_free);
  return TRUE;
}

void dt_outfile_free(dt_outfile *out)
{
  if (!out)
    return;
  if (out->stream)
    fclose(out->stream);
  if (out->tmp_path)
    g_unlink(out->tmp_path);
  g_free(out->tmp_path);
  g_free(out->path);
  g_free(out);
}
