/* Chrome trace writer: filled in below. */
#include "chrome.h"
