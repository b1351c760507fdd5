/* Chrome trace writer (Trace Event Format, JSON object form), an observer of the engine. */
#ifndef DTSIM_TRACE_CHROME_H
#define DTSIM_TRACE_CHROME_H
#include "engine.h"
#endif
