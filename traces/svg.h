/* The SVG documents dtsim draws (sweep curves, search scatter, link heat map): one header, one
 * escape of text, one rounding of axis bounds, one palette and one way to write the file, so
 * that every plot looks and behaves the same. Numbers go through the C locale (the programs set
 * LC_NUMERIC to "C"). */
#ifndef DTSIM_TRACES_SVG_H
#define DTSIM_TRACES_SVG_H

#include <glib.h>

/* Starts a document of width x height user units on a white background. */
void trace_svg_begin(GString *o, double width, double height);
/* Ends it. */
void trace_svg_end(GString *o);
/* Appends text for an element or a double-quoted attribute: <, >, & and " escaped. */
void trace_svg_escape(GString *o, const char *text);
/* The same as a new string (free it with g_free). */
char *trace_svg_escaped(const char *text);
/* A "nice" upper bound for an axis: the least of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a
 * power of ten at or above v (so at most 4/3 v); 1 for v <= 0. Each divides into 5 ticks of two
 * significant digits. */
double trace_svg_nice_ceiling(double v);
/* The i-th colour of the plots' palette (it repeats after ten). */
const char *trace_svg_color(guint i);
/* Ends the document and writes it to `path` whole or not at all. */
gboolean trace_svg_write(GString *o, const char *path, GError **error);

#endif
