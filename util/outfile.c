/* Output files (see util.h for what each kind of target means): a regular file is written to
 * "PATH.tmp-XXXXXX" beside it and renamed on commit; a FIFO or a character device is written in
 * place; a symbolic link is followed. Temporary files still open, and scratch folders
 * (dt_scratch_new), are removed on SIGINT, SIGTERM and SIGHUP. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* getdents64 */
#endif
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

struct dt_outfile {
  char *path;       /* what the user named, for messages */
  char *target;     /* the file written: path with its symbolic links resolved */
  char *tmp_path;   /* NULL when written in place (FIFO, character device) or once committed */
  int slot;         /* index in `pending`, or -1 */
  FILE *stream;
};

/* ---- Removal of temporary files on a signal -------------------------------------------------- */

/* Temporary names of the outputs open now. The handler only reads these pointers and calls
 * unlink(), which is async-signal-safe; slots change with the signals blocked. More outputs
 * than slots are still written, only not cleaned up on a signal. */
#define PENDING_SLOTS 64
static char *volatile pending[PENDING_SLOTS];
/* Scratch folders made by dt_scratch_new() and not removed yet, the same way. */
#define SCRATCH_SLOTS 8
static char *volatile scratch[SCRATCH_SLOTS];
static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};

/* Removes the files in folder `dir`, then the folder, with async-signal-safe calls only (open,
 * getdents64, unlinkat, rmdir): it also runs in the signal handler. Folders inside are left
 * (and so is `dir` then). Entries are read again after each pass that removed some, since
 * removing while reading may skip entries. */
static void remove_folder(const char *dir)
{
  static char buf[4096] __attribute__((aligned(8)));
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return;
  for (int pass = 0; pass < 16; pass++) {
    gboolean removed = FALSE;
    if (lseek(fd, 0, SEEK_SET) != 0)
      break;
    ssize_t n;
    while ((n = getdents64(fd, buf, sizeof buf)) > 0)
      for (ssize_t at = 0; at < n;) {
        const struct dirent64 *e = (const struct dirent64 *)(buf + at);
        at += e->d_reclen;
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            unlinkat(fd, e->d_name, 0) == 0)
          removed = TRUE;
      }
    if (!removed)
      break;
  }
  close(fd);
  rmdir(dir);
}

/* Async-signal-safe: also the signal handler's clean-up. */
void dt__outfile_abandon_all(void)
{
  for (int i = 0; i < PENDING_SLOTS; i++)
    if (pending[i])
      unlink(pending[i]);
  for (int i = 0; i < SCRATCH_SLOTS; i++)
    if (scratch[i])
      remove_folder(scratch[i]);
}

static void on_signal(int sig)
{
  dt__outfile_abandon_all();
  /* Die of the signal as if there were no handler, so the parent sees why. */
  signal(sig, SIG_DFL);
  raise(sig);
}

static void install_handlers(void)
{
  static gboolean installed;
  if (installed)
    return;
  installed = TRUE;
  for (gsize i = 0; i < G_N_ELEMENTS(cleanup_signals); i++) {
    struct sigaction old;
    /* A signal the caller ignores (nohup) stays ignored; one with a handler keeps it. */
    if (sigaction(cleanup_signals[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
        (old.sa_flags & SA_SIGINFO))
      continue;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    /* The other cleanup signals wait while the handler runs (it is not reentrant). */
    sigemptyset(&sa.sa_mask);
    for (gsize j = 0; j < G_N_ELEMENTS(cleanup_signals); j++)
      sigaddset(&sa.sa_mask, cleanup_signals[j]);
    sigaction(cleanup_signals[i], &sa, NULL);
  }
}

/* Stores `path` in a free slot of `slots` (or clears slot `slot` when path is NULL), signals
 * blocked. */
static int set_slot(char *volatile *slots, int n_slots, int slot, char *path)
{
  sigset_t block, old;
  sigemptyset(&block);
  for (gsize i = 0; i < G_N_ELEMENTS(cleanup_signals); i++)
    sigaddset(&block, cleanup_signals[i]);
  sigprocmask(SIG_BLOCK, &block, &old);
  if (path) {
    slot = -1;
    for (int i = 0; i < n_slots && slot < 0; i++)
      if (slots[i] == NULL) {
        slots[i] = path;
        slot = i;
      }
  } else if (slot >= 0) {
    slots[slot] = NULL;
    slot = -1;
  }
  sigprocmask(SIG_SETMASK, &old, NULL);
  return slot;
}

static int set_pending(int slot, char *path)
{
  return set_slot(pending, PENDING_SLOTS, slot, path);
}

/* ---- Scratch folders ------------------------------------------------------------------------- */

/* "PREFIX-HOST-": the start of the names of this machine's scratch folders of one program.
 * The host name keeps machines (or containers) sharing a folder from judging each other's
 * process ids; characters other than letters, digits, '.' and '_' become '_'. */
static char *scratch_stem(const char *prefix)
{
  g_autofree char *host = g_strdup(g_get_host_name());
  for (char *c = host; *c; c++)
    if (!g_ascii_isalnum(*c) && *c != '.' && *c != '_')
      *c = '_';
  return g_strdup_printf("%s-%s-", prefix, host);
}

void dt_scratch_sweep(const char *prefix)
{
  const char *tmp = g_get_tmp_dir();
  g_autofree char *stem = scratch_stem(prefix);
  gsize stem_len = strlen(stem);
  GDir *dir = g_dir_open(tmp, 0, NULL);
  if (dir == NULL)
    return;
  const char *name;
  while ((name = g_dir_read_name(dir)) != NULL) {
    if (strncmp(name, stem, stem_len) != 0 || !g_ascii_isdigit(name[stem_len]))
      continue;
    char *end = NULL;
    guint64 pid = g_ascii_strtoull(name + stem_len, &end, 10);
    if (*end != '-' || pid == 0 || pid > G_MAXINT || (pid_t)pid == getpid())
      continue;
    /* Only a process that no longer exists: EPERM means it runs as someone else. */
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
      continue;
    g_autofree char *path = g_build_filename(tmp, name, NULL);
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
      continue;
    remove_folder(path);
  }
  g_dir_close(dir);
}

char *dt_scratch_new(const char *prefix, GError **error)
{
  g_autofree char *stem = scratch_stem(prefix);
  g_autofree char *tmpl = g_strdup_printf("%s%d-XXXXXX", stem, (int)getpid());
  char *dir = g_dir_make_tmp(tmpl, error);
  if (dir == NULL)
    return NULL;
  install_handlers();
  /* The handler reads its own copy, which stays valid until dt_scratch_remove(). */
  if (set_slot(scratch, SCRATCH_SLOTS, -1, g_strdup(dir)) < 0)
    g_warning("more than %d scratch folders: %s is not removed on a signal", SCRATCH_SLOTS, dir);
  return dir;
}

void dt_scratch_remove(const char *dir)
{
  if (dir == NULL)
    return;
  remove_folder(dir);
  for (int i = 0; i < SCRATCH_SLOTS; i++)
    if (scratch[i] && strcmp(scratch[i], dir) == 0) {
      char *copy = scratch[i];
      set_slot(scratch, SCRATCH_SLOTS, i, NULL);
      g_free(copy);
      break;
    }
}

/* ---- What is at the path --------------------------------------------------------------------- */

typedef enum { TARGET_NEW, TARGET_REGULAR, TARGET_IN_PLACE } target_kind;

/* Resolves symbolic links and classifies the target. *target is the file to write (the path
 * itself unless it is a symbolic link); *st its status for TARGET_REGULAR and TARGET_IN_PLACE. */
static gboolean classify(const char *path, const char *what, char **target, target_kind *kind,
                         struct stat *st, GError **error)
{
  g_autofree char *shown = dt_escape(path);
  const char *prefix = what ? what : "";
  const char *sep = what ? ": " : "";
  if (*path == '\0') {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s%sempty file name", prefix, sep);
    return FALSE;
  }
  struct stat lst;
  if (lstat(path, &lst) != 0) {
    if (errno != ENOENT) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s%s%s: %s", prefix, sep, shown,
                  g_strerror(errno));
      return FALSE;
    }
    *target = g_strdup(path);
    *kind = TARGET_NEW;
    return TRUE;
  }
  if (S_ISLNK(lst.st_mode)) {
    char *resolved = realpath(path, NULL);
    if (resolved == NULL) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s%s%s: a symbolic link to a file that cannot be reached (%s)", prefix, sep,
                  shown, g_strerror(errno));
      return FALSE;
    }
    *target = g_strdup(resolved);
    free(resolved);
    if (stat(*target, st) != 0) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s%s%s: %s", prefix, sep, shown,
                  g_strerror(errno));
      g_clear_pointer(target, g_free);
      return FALSE;
    }
  } else {
    *target = g_strdup(path);
    *st = lst;
  }
  if (S_ISREG(st->st_mode)) {
    *kind = TARGET_REGULAR;
    return TRUE;
  }
  if (S_ISFIFO(st->st_mode) || S_ISCHR(st->st_mode)) {
    *kind = TARGET_IN_PLACE;
    return TRUE;
  }
  const char *is = S_ISDIR(st->st_mode)    ? "a folder"
                   : S_ISSOCK(st->st_mode) ? "a socket"
                   : S_ISBLK(st->st_mode)  ? "a block device"
                                           : "not a file that can be written";
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s%s%s is %s; give a file name", prefix, sep,
              shown, is);
  g_clear_pointer(target, g_free);
  return FALSE;
}

gboolean dt_outfile_check(const char *path, const char *what, GError **error)
{
  g_autofree char *target = NULL;
  target_kind kind;
  struct stat st;
  if (path[0] == '-') {
    g_autofree char *shown = dt_escape(path);
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: '%s' looks like an option, not a file name (write ./%s to name such a "
                "file)", what, shown, shown);
    return FALSE;
  }
  if (!classify(path, what, &target, &kind, &st, error))
    return FALSE;
  g_autofree char *shown = dt_escape(path);
  if (kind == TARGET_IN_PLACE) {
    if (S_ISCHR(st.st_mode) && access(target, W_OK) != 0) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: cannot write %s: %s", what, shown,
                  g_strerror(errno));
      return FALSE;
    }
    return TRUE;
  }
  /* The temporary file is made in the target's folder, then renamed: that folder must exist
   * and be writable. */
  g_autofree char *dir = g_path_get_dirname(target);
  struct stat dst;
  if (stat(dir, &dst) != 0 || !S_ISDIR(dst.st_mode)) {
    g_autofree char *shown_dir = dt_escape(dir);
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: cannot write %s: no folder %s", what,
                shown, shown_dir);
    return FALSE;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    g_autofree char *shown_dir = dt_escape(dir);
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: cannot write %s: folder %s: %s", what,
                shown, shown_dir, g_strerror(errno));
    return FALSE;
  }
  return TRUE;
}

dt_outfile *dt_outfile_open(const char *path, GError **error)
{
  g_autofree char *target = NULL;
  target_kind kind;
  struct stat st;
  if (!classify(path, NULL, &target, &kind, &st, error))
    return NULL;
  g_autofree char *shown = dt_escape(path);
  dt_outfile *out = g_new0(dt_outfile, 1);
  out->slot = -1;
  int fd;
  if (kind == TARGET_IN_PLACE) {
    /* Without O_NONBLOCK, opening a FIFO nobody reads would wait forever. */
    fd = open(target, O_WRONLY | O_NOCTTY | O_CLOEXEC | (S_ISFIFO(st.st_mode) ? O_NONBLOCK : 0));
    if (fd < 0) {
      int e = errno;
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: cannot write: %s", shown,
                  e == ENXIO ? "a FIFO that no process reads" : g_strerror(e));
      g_free(out);
      return NULL;
    }
    /* Writes may block for the reader from now on, as any writer to a pipe does. */
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
      fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  } else {
    g_autofree char *tmpl = g_strconcat(target, ".tmp-XXXXXX", NULL);
    install_handlers();
    fd = g_mkstemp(tmpl);
    if (fd < 0) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: cannot create: %s", shown,
                  g_strerror(errno));
      g_free(out);
      return NULL;
    }
    /* Output files are ordinary user files: mkstemp's 0600 would surprise. A replaced file
     * keeps its own permission bits. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, kind == TARGET_REGULAR ? (st.st_mode & 07777) : (0666 & ~mask));
    out->tmp_path = g_steal_pointer(&tmpl);
    out->slot = set_pending(-1, out->tmp_path);
  }
  out->stream = fdopen(fd, "w");
  if (!out->stream) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "%s: fdopen: %s", shown, g_strerror(errno));
    close(fd);
    dt_outfile_free(out);
    return NULL;
  }
  out->path = g_strdup(path);
  out->target = g_steal_pointer(&target);
  return out;
}

FILE *dt_outfile_stream(dt_outfile *out) { return out->stream; }

/* Removes the temporary file, if any, and forgets it. */
static void drop_tmp(dt_outfile *out)
{
  if (!out->tmp_path)
    return;
  out->slot = set_pending(out->slot, NULL);
  g_unlink(out->tmp_path);
  g_clear_pointer(&out->tmp_path, g_free);
}

/* ---- Outputs replaced together ---------------------------------------------------------------- */

typedef struct {
  char *tmp_path, *target, *path;
  int slot;
} held_file;
static gboolean holding;
static GArray *held;   /* held_file, in commit order */

void dt_outfile_hold(void)
{
  holding = TRUE;
}

gboolean dt_outfile_release(gboolean keep, GError **error)
{
  holding = FALSE;
  gboolean ok = TRUE;
  for (guint i = 0; held && i < held->len; i++) {
    held_file *h = &g_array_index(held, held_file, i);
    if (keep && ok && g_rename(h->tmp_path, h->target) != 0) {
      g_autofree char *shown = dt_escape(h->path);
      g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "%s: rename failed: %s", shown,
                  g_strerror(errno));
      ok = FALSE;
    }
    if (!keep || !ok)
      g_unlink(h->tmp_path);
    set_pending(h->slot, NULL);
    g_free(h->tmp_path);
    g_free(h->target);
    g_free(h->path);
  }
  g_clear_pointer(&held, g_array_unref);
  return ok;
}

/* Two names for one file: the identity of a path, "DEV:INO" when it exists (links followed),
 * else its folder's real path and its name; NULL for what may repeat (FIFOs, devices). */
static char *file_identity(const char *path)
{
  struct stat st;
  if (stat(path, &st) == 0) {
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
      return NULL;
    return g_strdup_printf("%ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
  }
  g_autofree char *dir = g_path_get_dirname(path);
  g_autofree char *base = g_path_get_basename(path);
  char *real = realpath(dir, NULL);
  char *id = g_build_filename(real ? real : dir, base, NULL);
  free(real);
  return id;
}

gboolean dt_files_distinct(const dt_file_role *files, size_t n, GError **error)
{
  g_autofree char **ids = g_new0(char *, n + 1);
  gboolean ok = TRUE;
  for (size_t i = 0; i < n && ok; i++) {
    if (!files[i].path || !files[i].path[0])
      continue;
    /* An input that is no file is a catalog name: nothing to overwrite. */
    if (!files[i].output && !g_file_test(files[i].path, G_FILE_TEST_EXISTS))
      continue;
    ids[i] = file_identity(files[i].path);
    for (size_t j = 0; j < i && ids[i] && ok; j++) {
      if (!ids[j] || strcmp(ids[i], ids[j]) != 0 || (!files[i].output && !files[j].output))
        continue;
      const dt_file_role *out = files[i].output ? &files[i] : &files[j];
      const dt_file_role *other = out == &files[i] ? &files[j] : &files[i];
      g_autofree char *shown = dt_escape(out->path);
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s is also %s%s; give another name",
                  out->what, shown, other->output ? "the output of " : "", other->what);
      ok = FALSE;
    }
  }
  for (size_t i = 0; i < n; i++)
    g_free(ids[i]);
  return ok;
}

gboolean dt_outfile_commit(dt_outfile *out, GError **error)
{
  g_return_val_if_fail(out && out->stream, FALSE);
  g_autofree char *shown = dt_escape(out->path);
  int failed = ferror(out->stream);
  failed |= fclose(out->stream) != 0;
  out->stream = NULL;
  if (failed) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "%s: write failed: %s", shown,
                g_strerror(errno));
    drop_tmp(out);
    return FALSE;
  }
  if (!out->tmp_path)
    return TRUE;   /* written in place */
  if (holding) {
    /* dt_outfile_release renames it, or removes it; a signal before that removes it. */
    if (!held)
      held = g_array_new(FALSE, FALSE, sizeof(held_file));
    held_file h = {g_steal_pointer(&out->tmp_path), g_strdup(out->target), g_strdup(out->path),
                   out->slot};
    g_array_append_val(held, h);
    out->slot = -1;
    return TRUE;
  }
  if (g_rename(out->tmp_path, out->target) != 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "%s: rename failed: %s", shown,
                g_strerror(errno));
    drop_tmp(out);
    return FALSE;
  }
  out->slot = set_pending(out->slot, NULL);
  g_clear_pointer(&out->tmp_path, g_free);
  return TRUE;
}

void dt_outfile_free(dt_outfile *out)
{
  if (!out)
    return;
  if (out->stream)
    fclose(out->stream);
  drop_tmp(out);
  g_free(out->target);
  g_free(out->path);
  g_free(out);
}
