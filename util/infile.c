/* Input files read whole under a size limit (see util.h): a regular file's size is known
 * before reading; anything else is read in chunks until the limit. Opening never blocks, so a
 * FIFO without a writer cannot hang a run. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static gboolean refuse(GError **error, const char *what, const char *path, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);
static gboolean refuse(GError **error, const char *what, const char *path, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_autofree char *shown = dt_escape(path);
  if (what && *what)
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s: %s", what, shown, msg);
  else
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s", shown, msg);
  return FALSE;
}

/* Waits until fd (non-blocking) has data or its writer closed it. */
static gboolean wait_readable(int fd)
{
  struct pollfd p = {.fd = fd, .events = POLLIN};
  int rc;
  do
    rc = poll(&p, 1, -1);
  while (rc < 0 && errno == EINTR);
  return rc >= 0;
}

gboolean dt_read_file(const char *path, const char *what, uint64_t max_bytes, char **data,
                      gsize *len, GError **error)
{
  *data = NULL;
  *len = 0;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return refuse(error, what, path, "%s", e == ENOENT ? "no such file" : g_strerror(e));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return refuse(error, what, path, "%s", g_strerror(e));
  }
  g_autofree char *limit = max_bytes % (1 << 20) == 0
                              ? g_strdup_printf("%" G_GUINT64_FORMAT " MiB", max_bytes >> 20)
                              : g_strdup_printf("%" G_GUINT64_FORMAT " bytes", max_bytes);
  if (S_ISDIR(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISBLK(st.st_mode)) {
    close(fd);
    return refuse(error, what, path, "is %s, not a file",
                  S_ISDIR(st.st_mode) ? "a folder" : S_ISSOCK(st.st_mode) ? "a socket"
                                                                           : "a block device");
  }
  if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max_bytes) {
    close(fd);
    return refuse(error, what, path, "%" G_GUINT64_FORMAT " bytes is more than the %s an input "
                  "file may hold", (guint64)st.st_size, limit);
  }
  gboolean pipe_like = S_ISFIFO(st.st_mode);
  gsize cap = S_ISREG(st.st_mode) ? (gsize)st.st_size + 1 : 65536;
  char *buf = g_malloc(cap);
  gsize n = 0;
  for (;;) {
    if (n + 1 >= cap) {
      /* Reading one byte past the limit tells a file of exactly the limit from a longer one. */
      if ((uint64_t)n > max_bytes)
        break;
      cap = MIN(cap * 2, (gsize)max_bytes + 2);
      buf = g_realloc(buf, cap);
    }
    ssize_t r = read(fd, buf + n, cap - 1 - n);
    if (r > 0) {
      n += (gsize)r;
      if ((uint64_t)n > max_bytes)
        break;
      continue;
    }
    if (r == 0)
      break;
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN && pipe_like && wait_readable(fd))
      continue;
    int e = errno;
    close(fd);
    g_free(buf);
    return refuse(error, what, path, "cannot read: %s", g_strerror(e));
  }
  close(fd);
  if ((uint64_t)n > max_bytes) {
    g_free(buf);
    return refuse(error, what, path, "more than the %s an input file may hold", limit);
  }
  if (n == 0 && pipe_like) {
    g_free(buf);
    return refuse(error, what, path, "a FIFO or pipe that gave nothing (it is read only while "
                  "a writer holds it open)");
  }
  buf[n] = '\0';
  *data = buf;
  *len = n;
  return TRUE;
}
