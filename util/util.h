/* Leaf utilities every module may use: reading INI files with line numbers for error messages,
 * parsing sizes and lists given on the command line, finding the data folders (catalogs), and
 * reading input files under a size limit, and writing output files atomically. Depends on GLib
 * only.
 *
 * Error messages follow one shape so users always learn where the problem is:
 *   FILE:LINE: [group] key: what is wrong
 * All recoverable errors use the DT_ERROR domain with DT_ERROR_INPUT (exit status 2). */
#ifndef DTSIM_UTIL_H
#define DTSIM_UTIL_H

#include <glib.h>
#include <stdint.h>
#include <stdio.h>

#define DT_ERROR (dt_error_quark())
GQuark dt_error_quark(void);
typedef enum {
  DT_ERROR_INPUT,     /* bad input from the user: exit status 2 */
  DT_ERROR_INTERNAL,  /* a failure that is not the user's: exit status 1 */
} dt_error_code;

/* The process exit status for an error: 2 for bad input (DT_ERROR_INPUT, and option-parsing and
 * key-file errors, which come from what the user gave), 1 for anything else or no error. */
int dt_error_exit_status(const GError *error);

/* ---- INI files ------------------------------------------------------------------------- */

typedef struct dt_ini dt_ini;

/* Loads an INI file (GKeyFile syntax). Errors name the file and line. */
dt_ini *dt_ini_load(const char *path, GError **error);
/* Loads INI text held in memory; `name` is used in messages in place of a file name. */
dt_ini *dt_ini_load_data(const char *name, const char *data, gsize len, GError **error);
void dt_ini_free(dt_ini *ini);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(dt_ini, dt_ini_free)

const char *dt_ini_path(const dt_ini *ini);
GKeyFile *dt_ini_keyfile(const dt_ini *ini);
gboolean dt_ini_has(const dt_ini *ini, const char *group, const char *key);
/* Line (1-based) where [group] key is set; the group header's line if key is NULL; 0 if unknown. */
int dt_ini_line(const dt_ini *ini, const char *group, const char *key);
/* Sets `error` to "FILE:LINE: [group] key: <message>". Always returns FALSE. */
gboolean dt_ini_error(const dt_ini *ini, const char *group, const char *key, GError **error,
                      const char *fmt, ...) G_GNUC_PRINTF(5, 6);

/* Typed getters. A missing key is an error unless `required` is FALSE, in which case *out
 * keeps its value (the default). Values outside [min, max], NaN, or malformed are errors. */
gboolean dt_ini_double(const dt_ini *ini, const char *group, const char *key, gboolean required,
                       double min, double max, double *out, GError **error);
gboolean dt_ini_int64(const dt_ini *ini, const char *group, const char *key, gboolean required,
                      int64_t min, int64_t max, int64_t *out, GError **error);
gboolean dt_ini_size(const dt_ini *ini, const char *group, const char *key, gboolean required,
                     uint64_t *out_bytes, GError **error);
/* Returns a newly allocated string, or NULL (and an error if required). */
char *dt_ini_string(const dt_ini *ini, const char *group, const char *key, gboolean required,
                    GError **error);
/* Fails with a clear message naming the first key of `group` not in the NULL-terminated list
 * `known` (catches typos such as bandwith_gbps). */
gboolean dt_ini_check_keys(const dt_ini *ini, const char *group, const char *const *known,
                           GError **error);

/* ---- Parsing of option values ------------------------------------------------------------ */

/* Sizes: a whole number with an optional suffix K, M, G, T, P, E (powers of 1024, also KiB...)
 * or KB, MB, GB, TB, PB, EB (powers of 1000); B alone means bytes. Refuses negatives,
 * fractions that are not whole bytes, and values over UINT64_MAX. `what` names the option in
 * messages, e.g. "--bytes". */
gboolean dt_parse_size(const char *text, const char *what, uint64_t *out_bytes, GError **error);
/* A whole number in [min, max]. */
gboolean dt_parse_int64(const char *text, const char *what, int64_t min, int64_t max,
                        int64_t *out, GError **error);
/* A boolean: on, true, yes or 1; off, false, no or 0. */
gboolean dt_parse_bool(const char *text, const char *what, gboolean *out, GError **error);
/* A finite number in [min, max]. */
gboolean dt_parse_double(const char *text, const char *what, double min, double max,
                         double *out, GError **error);
/* The most points a list of numbers holds, ranges expanded. */
#define DT_LIST_MAX_POINTS 1000001u
/* A comma-separated list of whole numbers in [min, max]; ranges "a-b" and powers "1..64"
 * (doubling) allowed; at most DT_LIST_MAX_POINTS points in all. Returns a GArray of int64_t,
 * or NULL with an error. */
GArray *dt_parse_int_list(const char *text, const char *what, int64_t min, int64_t max,
                          GError **error);
/* A comma-separated list of sizes (dt_parse_size) and doubling ranges "LO..HI", in the order
 * given. Returns a GArray of uint64_t bytes, or NULL with an error naming `what`. */
GArray *dt_parse_size_list(const char *text, const char *what, GError **error);
/* A comma-separated list of non-empty names. Returns a NULL-terminated vector. */
char **dt_parse_name_list(const char *text, const char *what, GError **error);

/* ---- Data folders --------------------------------------------------------------------------- */

/* The folder holding the catalogs (devices/catalog, comm/catalog, ...): $DTSIM_DATA_DIR if set,
 * else the source tree the binary was built from, else the installed data folder. */
const char *dt_data_dir(void);
/* Resolves a catalog entry: if `name` names an existing file (contains '/' or ends in .ini),
 * that file; otherwise DATA_DIR/subdir/NAME.ini. Returns NULL with an error naming `what`
 * (e.g. "--device") and listing nothing else when neither exists. */
char *dt_catalog_path(const char *subdir, const char *name, const char *what, GError **error);
/* A catalog entry (or a file the user named) read as INI: dt_catalog_path(), dt_ini_load(), and a
 * check that it holds [group]. A file named by path that cannot be read is reported after
 * `what`, the place that named it; a missing group as "WHAT: PATH: missing group [GROUP]". The
 * path is dt_ini_path() of the result. */
dt_ini *dt_catalog_load(const char *subdir, const char *name, const char *what, const char *group,
                        GError **error);
/* Sorted names (without .ini) of the entries of DATA_DIR/subdir. */
char **dt_catalog_names(const char *subdir);

/* ---- Input files ------------------------------------------------------------------------- */

/* The most any input file (INI, workload JSON, CSV, calibration overlay) may hold, in bytes. A
 * 100 000-layer workload is about 15 MB; no catalog file comes near a megabyte. */
#define DT_INPUT_MAX_BYTES (64ull << 20)

/* Reads a whole input file of at most max_bytes bytes into a NUL-terminated buffer (*len
 * excludes the NUL). A regular file over the limit is refused before it is read. Other files
 * are read up to the limit and refused past it: a pipe or FIFO (opened without blocking, so a
 * FIFO that no writer holds open reads as empty instead of waiting forever), a character device
 * (/dev/zero, /dev/urandom). Folders, sockets and block devices are refused. Every refusal is a
 * DT_ERROR_INPUT naming `what` (the option or role, e.g. "--model") and the file. */
gboolean dt_read_file(const char *path, const char *what, uint64_t max_bytes, char **data,
                      gsize *len, GError **error);

/* ---- Messages ---------------------------------------------------------------------------- */

/* A copy of `text` that prints on one line: control characters (newline, tab, escape, C1
 * controls, U+2028/U+2029) become \n, \t, \r or \xHH / \uHHHH, and bytes that are not
 * UTF-8 become \xHH; valid UTF-8 (josé) is kept. Used by every path that prints a message
 * (dtsim_cli_fail, dtsim-mpi), so a value echoed in a message never breaks it in two. */
char *dt_escape(const char *text);
/* A one-line message for the user: dt_escape(text), with every word (run of characters other
 * than spaces) of more than DT_MESSAGE_WORD_MAX bytes cut to its first 48 and last 32 bytes
 * around "...", so that a 1 MB value given as an option is not echoed whole. */
#define DT_MESSAGE_WORD_MAX 100
char *dt_message(const char *text);

/* Refuses (DT_ERROR_INPUT, naming `what`) a value with a control character (newline, tab,
 * escape, DEL): the check before a value is written into an INI file, where a newline would
 * start a new key or group ("x\n[device]\npeak_tflops_fp32 = 1000"). CSV fields and JSON
 * strings are quoted and escaped instead (dt_csv_field, dt_json_string). */
gboolean dt_check_line(const char *value, const char *what, GError **error);

/* ---- Option values as bytes ---------------------------------------------------------------- */

/* GOption converts G_OPTION_ARG_STRING values from the locale's character set to UTF-8, which
 * fails on any non-ASCII byte in the C locale (a file name like josé.json) and on names that
 * are not text in the locale's set. This turns every STRING (STRING_ARRAY) entry of a
 * NULL-terminated table into FILENAME (FILENAME_ARRAY) and marks callbacks FILENAME: values
 * arrive as the bytes given, and every message that echoes them goes through dt_escape. (An
 * optional-argument callback whose value failed that conversion was called anyway, with the
 * conversion's error already set, and parsing went on to set a second error over it.) Call
 * before adding the entries. */
void dt_option_entries_as_bytes(GOptionEntry *entries);

/* Refuses an option given twice (GOption would keep the last silently): scans argv[1..] for
 * "--name" and "--name=value" up to a "--". */
gboolean dt_args_check_repeats(int argc, char **argv, const char *const *repeatable,
                               GError **error);

/* Adds a NULL-terminated table as the context's main group (which must not exist yet), each
 * G_OPTION_ARG_NONE entry taking an optional value parsed by dt_parse_bool: --json is on,
 * --json=no off, --json=maybe an error (GOption alone ignores the value). The table must
 * outlive the context. */
void dt_option_add_main_entries(GOptionContext *ctx, GOptionEntry *entries);

/* ---- Output files ------------------------------------------------------------------------ */

/* Output files (--trace, --csv, --plot, calibration overlays, ...). What is at the path decides
 * how it is written:
 *  - nothing, or a regular file: written to "PATH.tmp-XXXXXX" in the same folder and renamed
 *    over PATH on commit, so a failed or interrupted run leaves the old file (or none). A
 *    replaced file keeps its permission bits.
 *  - a symbolic link: followed (all the way), and its target written as above: the temporary
 *    name is made beside the target, the link itself stays. A link to a missing file is refused.
 *  - a FIFO or a character device (/dev/null, a terminal): written in place, never replaced; a
 *    FIFO that no reader holds open is refused rather than waited on. A failed run may have
 *    written part of its output there.
 *  - a folder, a socket, a block device: refused.
 * Refusals are DT_ERROR_INPUT (exit status 2). SIGINT, SIGTERM and SIGHUP remove the temporary
 * files of every output still open before the process dies of the signal. */
typedef struct dt_outfile dt_outfile;
dt_outfile *dt_outfile_open(const char *path, GError **error);
FILE *dt_outfile_stream(dt_outfile *out);
/* Flushes, closes and renames. On failure the temporary file is removed. */
gboolean dt_outfile_commit(dt_outfile *out, GError **error);
/* Removes the temporary file (also done by free on an uncommitted file). */
void dt_outfile_free(dt_outfile *out);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(dt_outfile, dt_outfile_free)

/* Checks, without creating anything, that dt_outfile_open(path) would succeed as far as can be
 * known beforehand: the folder exists and can be written, the target is of a kind written
 * above. Commands call it for every output before simulating. Errors name `what` (the option).
 * A name starting with '-' is refused as the option it likely is ("--export --json" would
 * write a file named --json); ./-x names such a file. */
gboolean dt_outfile_check(const char *path, const char *what, GError **error);

/* One file a command reads or writes, for dt_files_distinct: `what` names its role in
 * messages ("--csv", "the scenario file"); a NULL path is skipped. */
typedef struct {
  const char *path;
  const char *what;
  gboolean output;
} dt_file_role;
/* Refuses (DT_ERROR_INPUT) an output that is the same file as an input or as another output
 * of the same command: the same inode when the file exists (links followed), the same folder
 * and name when it does not. FIFOs and character devices (/dev/null) may repeat. Inputs that
 * are no file (catalog names) are skipped. */
gboolean dt_files_distinct(const dt_file_role *files, size_t n, GError **error);

/* Holding: from dt_outfile_hold() on, dt_outfile_commit() writes and closes the temporary file
 * but leaves the rename to dt_outfile_release(), so that the outputs of one command replace
 * their old versions together, or (release with keep FALSE, or a signal) none of them does.
 * Outputs written in place (FIFOs, devices) are not held. */
void dt_outfile_hold(void);
gboolean dt_outfile_release(gboolean keep, GError **error);

/* ---- Scratch folders ------------------------------------------------------------------------ */

/* A private folder for temporary files, $TMPDIR/PREFIX-HOST-PID-XXXXXX (g_get_tmp_dir()), or
 * NULL with an error. dt_scratch_remove() removes the files in it and the folder; so does
 * SIGINT, SIGTERM or SIGHUP before the process dies of the signal (Open MPI ends the other
 * ranks of a job with SIGTERM when one aborts). Up to 8 folders at a time are known to the
 * handler. */
char *dt_scratch_new(const char *prefix, GError **error);
void dt_scratch_remove(const char *dir);
/* SIGKILL cannot be caught: removes the folders $TMPDIR/PREFIX-HOST-PID-* of this machine, owned
 * by this user, whose process PID no longer exists. Programs that make scratch folders call it
 * when they start. */
void dt_scratch_sweep(const char *prefix);

/* ---- Memory ---------------------------------------------------------------------------------- */

/* The memory one run may take, bytes: --max-memory, by default half of the machine's physical
 * memory (dt_memory_physical_bytes). Work that can be sized before it is built (task graphs,
 * searches) is checked against it with dt_memory_check, which refuses (DT_ERROR_INPUT, naming
 * `what`, the estimate and the limit) what would take more. */
uint64_t dt_memory_physical_bytes(void);
uint64_t dt_memory_limit(void);
void dt_memory_set_limit(uint64_t bytes);   /* 0: the default */
gboolean dt_memory_check(uint64_t need_bytes, const char *what, GError **error);
/* n runs hold memory at once from now on (a search's threads): dt_memory_check gives each
 * 1/n of the limit. 1 (the default) restores the whole limit. */
void dt_memory_set_sharers(uint32_t n);
/* "1.5 GiB", "512 bytes": a size for messages, in the C locale. */
char *dt_memory_format(uint64_t bytes);
/* An allocation of `bytes` failed, or would pass the limit: one line on stderr, the temporary
 * output files still open removed, exit status 1. For the allocators of the large arrays. */
G_GNUC_NORETURN void dt_memory_fail(uint64_t bytes);
/* Removes the temporary files of every output still open and the scratch folders (what a
 * signal or dt_memory_fail leaves to clean up). */
void dt__outfile_abandon_all(void);

/* ---- JSON ------------------------------------------------------------------------------------ */

/* The one JSON writer of every --json output and trace: a string with its quotes, escaped
 * (quotes, backslashes, control characters); a number with 12 significant digits in the C
 * locale, or null when it is not finite (NaN and infinities are not JSON). */
void dt_json_string(GString *out, const char *s);
void dt_json_double(GString *out, double v);
void dt_json_int(GString *out, int64_t v);
/* For objects and arrays: dt_json_next writes the comma before a member or element (none at the
 * start, after '{' or '[', or after a key's ':'); dt_json_key writes it and then "key":. */
void dt_json_next(GString *out);
void dt_json_key(GString *out, const char *key);

/* ---- CSV ------------------------------------------------------------------------------------- */

/* One CSV field (RFC 4180): as it is, or quoted with its quotes doubled when it holds a comma,
 * a quote, a carriage return or a newline. */
void dt_csv_field(GString *out, const char *s);
/* The fields of one CSV line (RFC 4180 quoting: a quoted field may hold commas, a doubled quote
 * is one quote; a carriage return ends the line), owned by the array. */
GPtrArray *dt_csv_split(const char *line);

#endif
