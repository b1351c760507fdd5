/* SVG documents of the plots (see svg.h). */
#include "svg.h"

#include "util.h"

#include <math.h>

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

void trace_svg_begin(GString *o, double width, double height)
{
  g_string_append_printf(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                            "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n"
                            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                         width, height, width, height);
}

void trace_svg_end(GString *o) { g_string_append(o, "</svg>\n"); }

void trace_svg_escape(GString *o, const char *s)
{
  for (; *s; s++) {
    switch (*s) {
    case '<': g_string_append(o, "&lt;"); break;
    case '>': g_string_append(o, "&gt;"); break;
    case '&': g_string_append(o, "&amp;"); break;
    case '"': g_string_append(o, "&quot;"); break;
    default: g_string_append_c(o, *s);
    }
  }
}

char *trace_svg_escaped(const char *text)
{
  GString *o = g_string_new(NULL);
  trace_svg_escape(o, text);
  return g_string_free(o, FALSE);
}

double trace_svg_nice_ceiling(double v)
{
  static const double steps[] = {1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8};
  if (!(v > 0))
    return 1;
  double p = pow(10, floor(log10(v)));
  for (gsize k = 0; k < G_N_ELEMENTS(steps); k++) {
    double m = steps[k] * p;
    if (m >= v)
      return m;
  }
  return 10 * p;
}

const char *trace_svg_color(guint i) { return palette[i % G_N_ELEMENTS(palette)]; }

gboolean trace_svg_write(GString *o, const char *path, GError **error)
{
  trace_svg_end(o);
  g_autoptr(dt_outfile) out = dt_outfile_open(path, error);
  if (!out)
    return FALSE;
  fputs(o->str, dt_outfile_stream(out));
  return dt_outfile_commit(out, error);
}
