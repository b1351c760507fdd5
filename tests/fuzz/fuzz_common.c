/* Helpers shared by the fuzz harnesses (see fuzz.h). */
#include "fuzz.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s:%d: invariant failed: %s: ", file, line, cond);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  abort();
}

/* GLib ends a fatal message with a breakpoint (SIGTRAP), which libFuzzer does not catch: it
 * died without writing the input that caused it (a GError set twice, found by the args harness).
 * These print the message and abort() instead, which libFuzzer reports with the input. */
static GLogWriterOutput abort_writer(GLogLevelFlags level, const GLogField *fields, gsize n,
                                     gpointer data)
{
  (void)data;
  GLogWriterOutput r = g_log_writer_standard_streams(level, fields, n, NULL);
  if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING | G_LOG_FLAG_FATAL))
    abort();
  return r;
}

static void abort_handler(const char *domain, GLogLevelFlags level, const char *message,
                          gpointer data)
{
  (void)data;
  fprintf(stderr, "%s: %s\n", domain ? domain : "?", message);
  if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING | G_LOG_FLAG_FATAL))
    abort();
}

void fuzz_init(void)
{
  g_log_set_writer_func(abort_writer, NULL, NULL);
  g_log_set_default_handler(abort_handler, NULL);
  g_log_set_always_fatal(G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
  if (!g_getenv("DTSIM_DATA_DIR"))
    g_setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, TRUE);
}

char *fuzz_text(const uint8_t *data, size_t size)
{
  char *text = g_malloc(size + 1);
  if (size > 0)
    memcpy(text, data, size);
  text[size] = '\0';
  return text;
}

static unsigned accepted;

void fuzz_accepted(void) { accepted++; }
unsigned fuzz_accepted_count(void) { return accepted; }

static char *temp_path;

static void remove_temp(void)
{
  if (temp_path)
    unlink(temp_path);
}

/* A folder in memory when there is one: rewriting a file on a disk file system (ext4 flushes
 * a truncated file when it is closed) cost more than reading it in the harnesses that go
 * through a file. DTSIM_FUZZ_TMPDIR overrides, then /dev/shm, then the usual TMPDIR. */
static const char *temp_dir(void)
{
  const char *dir = g_getenv("DTSIM_FUZZ_TMPDIR");
  if (dir && *dir)
    return dir;
  if (access("/dev/shm", W_OK | X_OK) == 0)
    return "/dev/shm";
  return g_get_tmp_dir();
}

const char *fuzz_temp_file(const char *suffix, const uint8_t *data, size_t size)
{
  if (!temp_path) {
    temp_path = g_strdup_printf("%s/dtsim-fuzz-XXXXXX%s", temp_dir(), suffix);
    int fd = g_mkstemp_full(temp_path, O_RDWR, 0600);
    if (fd < 0)
      fuzz_fail(__FILE__, __LINE__, "g_mkstemp", "%s: %s", temp_path, g_strerror(errno));
    close(fd);
    atexit(remove_temp);
  }
  FILE *f = fopen(temp_path, "wb");
  if (!f || (size > 0 && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
    fuzz_fail(__FILE__, __LINE__, "write", "%s: %s", temp_path, g_strerror(errno));
  return temp_path;
}

void fuzz_check_error(const GError *error, const char *where)
{
  FUZZ_CHECK(error != NULL, "a loader failed without an error");
  FUZZ_CHECK(error->domain == DT_ERROR, "error outside DT_ERROR: %s", error->message);
  FUZZ_CHECK(error->message && *error->message, "empty error message");
  FUZZ_CHECK(where == NULL || strstr(error->message, where) != NULL, "message does not name '%s': %s", where,
             error->message);
}
